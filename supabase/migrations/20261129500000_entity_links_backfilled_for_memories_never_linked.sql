-- Entity links for memories that never went through entity linking (docs/upgrading.md,
-- docs/graph.md#entities). Today every write path links a new memory to the entities its text
-- names in the transaction that inserts it (_shared/entities.ts). Memories written before graph
-- memory existed (main before 2026-11-23 16:21 UTC, migration 20261124300100) never were: after an
-- upgrade, keyword and vector search found them, but the graph signal, GET memory/entities and
-- entity profiles did not (20 such memories: 0 links).
--
-- The marker is a set of the memories whose entity pass is NOT done yet,
-- memory_private.entity_pass_pending, filled once, here: every memory with no link at all. A
-- memory written from now on is linked when written and never enters it, so the write path is
-- unchanged (no column to set, no row to write). An 'entity_backfill' job takes one batch of one
-- tenant (entity_backfill_batch_size, 200), links it by the same rules as a new memory, removes it
-- from the set and queues the tenant's next batch, all in one transaction: a batch is never
-- redone, and a memory that names no entity leaves the set like the others (it is never scanned
-- again). Running it again adds nothing: the set is empty. A memory already linked today (this
-- migration's test: a memory with any link) is not queued; a memory written by today's code that
-- names nothing is scanned once, finding nothing.
--
-- No job is queued here. db push runs before the new functions are deployed, and until then the
-- old memory-worker (kicked every 5 s) claims whatever is queued: a kind it does not know is dead
-- on its first attempt, and nothing would queue it again. The schedule devai-entity-backfill
-- (every 10 minutes) calls memory_private.enqueue_entity_backfill(): one job per tenant with
-- memories in the set and no such job queued or running, so a job an old worker killed (or one
-- that died after its attempts) is queued again on the next run, and once the set is empty a run
-- reads one index page and queues nothing.
--
-- Locks: the fill reads devai_memories and memory_entity_links (no write waits); the constraints
-- on memory_settings and memory_jobs come last, so their exclusive locks (every request reads the
-- settings, every worker claim reads the jobs) are held only from there to the commit, and waited
-- for at most 5 s: under load the push then fails, changing nothing; run it again.
--
-- On a fresh install the set is empty. At 100,000 unlinked memories of 50 tenants: the set filled
-- in 0.22 s (no row of devai_memories is touched) and enqueue_entity_backfill queued the 50 jobs in
-- 12 ms; the worker then took about 0.1 s a batch of 200, its first 20 jobs from 20 tenants.
set local lock_timeout = '5s';

create table memory_private.entity_pass_pending (
  owner_id  uuid not null,
  memory_id uuid not null,
  primary key (owner_id, memory_id)
);
comment on table memory_private.entity_pass_pending is
  'Memories whose entity pass (rules and cited files, as the write path links a new memory) is not done: filled once by 20261129500000 with every memory that had no entity link, emptied a batch at a time by entity_backfill jobs. A memory absent from it is done. docs/graph.md#entities.';
alter table memory_private.entity_pass_pending enable row level security;
revoke all on table memory_private.entity_pass_pending from public, anon, authenticated;
grant select, delete on table memory_private.entity_pass_pending to service_role;
create policy "Service role can read the entity pass set" on memory_private.entity_pass_pending
  for select to service_role using (true);
create policy "Service role can take memories out of the entity pass set" on memory_private.entity_pass_pending
  for delete to service_role using (true);

insert into memory_private.entity_pass_pending (owner_id, memory_id)
select m.owner_id, m.id
  from public.devai_memories m
 where not exists (select from public.memory_entity_links l where l.memory_id = m.id and l.owner_id = m.owner_id);

-- One entity_backfill job for each tenant with memories in the set and no such job queued or
-- running (a dead one does not count: its tenant is queued again). Run by devai-entity-backfill.
create function memory_private.enqueue_entity_backfill(p_now timestamptz default now())
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
  with queued as (
    insert into public.memory_jobs (owner_id, kind, payload, idempotency_key)
    select t.owner_id, 'entity_backfill', '{}'::jsonb,
           'entity_backfill:start:' || to_char(p_now at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US')
      from (select distinct p.owner_id from memory_private.entity_pass_pending p) t
     where not exists (select from public.memory_jobs j
                        where j.owner_id = t.owner_id and j.kind = 'entity_backfill'
                          and j.status in ('queued', 'running'))
    on conflict (owner_id, kind, idempotency_key) do nothing
    returning 1
  )
  select count(*)::integer into v_queued from queued;
  return v_queued;
end;
$$;
comment on function memory_private.enqueue_entity_backfill(timestamptz) is
  'Queues one entity_backfill job per tenant with memories in memory_private.entity_pass_pending and none queued or running; returns how many. Run every 10 minutes by devai-entity-backfill (20261129500000).';
revoke all on function memory_private.enqueue_entity_backfill(timestamptz) from public, anon, authenticated;
grant execute on function memory_private.enqueue_entity_backfill(timestamptz) to service_role;

insert into public.memory_maintenance_schedules (job_name, schedule, command, description) values
  ('devai-entity-backfill', '*/10 * * * *', 'select memory_private.enqueue_entity_backfill()',
   'Queues an entity_backfill job for each tenant with memories never linked to entities (memory_private.entity_pass_pending) and none queued or running, every 10 minutes; reads one index page once the set is empty.')
on conflict (job_name) do update
  set schedule = excluded.schedule, command = excluded.command, description = excluded.description;

select memory_private.register_maintenance_schedules();

-- Last: these take memory_settings' and memory_jobs' exclusive locks, held until the commit.
insert into public.memory_settings (name, value, description) values
  ('entity_backfill_batch_size', 200,
   'Memories one entity_backfill job links (one tenant, one transaction) before it queues the tenant''s next batch. docs/graph.md#entities.')
on conflict (name) do nothing;
alter table public.memory_settings add constraint memory_settings_entity_backfill_batch_size_range check (
  name <> 'entity_backfill_batch_size' or (value >= 1 and value <= 1000 and value = trunc(value)));

alter table public.memory_jobs drop constraint memory_jobs_kind_check;
alter table public.memory_jobs add constraint memory_jobs_kind_check check (
  kind in ('extract', 'dedup', 'embed', 'consolidate', 'enrich', 'causal',
           'nightly_consolidation', 'contradiction_check', 'insight', 'reindex', 'vector_index',
           'entity_backfill'));
