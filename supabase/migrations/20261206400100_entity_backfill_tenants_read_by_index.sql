-- enqueue_entity_backfill finds the tenants of the pending set one index descent each, not by
-- reading the whole set (docs/graph.md#entities).
--
-- devai-entity-backfill runs it every 10 minutes while memory_private.entity_pass_pending holds
-- memories never linked (after an upgrade, until the entity_backfill jobs have emptied it). Its
-- `select distinct owner_id` read every row of the set at every run: 100,000 pending memories of 50
-- tenants 736 buffers and 11-17 ms, 1,000,000 7,367 buffers and 104-108 ms (a parallel scan), each
-- time to find the same 50 tenants.
--
-- Now the tenants are walked through the primary key (owner_id, memory_id) in a recursive query:
-- the first owner, then the first one after it, and so on, so a run reads about one index entry per
-- tenant however many memories each has pending. The jobs queued are the same: one per tenant in
-- the set with none queued or running. pgTAP 99_entity_backfill_tenants_read_by_index.

create or replace function memory_private.enqueue_entity_backfill(p_now timestamptz default now())
returns integer
language plpgsql
security definer
set search_path = ''
as $$
declare
  v_queued integer;
begin
  -- The usual case once the pass is done: the empty set's index, nothing else read.
  if not exists (select from memory_private.entity_pass_pending) then
    return 0;
  end if;
  with recursive tenants(owner_id) as (
    -- each tenant of the set once, the next one found by one descent of the primary key
    (select p.owner_id from memory_private.entity_pass_pending p order by p.owner_id limit 1)
    union all
    select (select p.owner_id from memory_private.entity_pass_pending p
             where p.owner_id > t.owner_id order by p.owner_id limit 1)
      from tenants t
     where t.owner_id is not null
  ),
  queued as (
    insert into public.memory_jobs (owner_id, kind, payload, idempotency_key)
    select t.owner_id, 'entity_backfill', '{}'::jsonb,
           'entity_backfill:start:' || to_char(p_now at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US')
      from tenants t
     where t.owner_id is not null
       and not exists (select from public.memory_jobs j
                        where j.owner_id = t.owner_id and j.kind = 'entity_backfill'
                          and j.status in ('queued', 'running'))
    on conflict (owner_id, kind, idempotency_key) do nothing
    returning 1
  )
  select count(*)::integer into v_queued from queued;
  return v_queued;
end;
$$;
