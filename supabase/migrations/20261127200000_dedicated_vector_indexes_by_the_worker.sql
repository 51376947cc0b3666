-- A big tenant gets its own HNSW index without an operator. Until now the index of
-- 20261125760300 was an operator's step (scripts/dedicated-vector-index.sh): CREATE INDEX
-- CONCURRENTLY cannot run in a transaction, so no function, migration or job of ours could build
-- it. The queue worker can: it runs the statement on its own connection, outside a transaction,
-- as a 'vector_index' job (_shared/vector-index-job.ts). What is decided here, in SQL:
--
-- * memory_private.enqueue_vector_index_jobs(), hourly (pg_cron devai-vector-indexes), queues a
--   build for each tenant with at least dedicated_vector_index_min_rows (10,000) active memories
--   and no valid index of its own, while it holds at most half of all of them (a tenant that is
--   most of the table gains nothing from a copy of it); and a drop for each tenant index whose
--   tenant has fallen under half the threshold (so a tenant near it is not built and dropped in
--   turn), or that a failed build left invalid. One job per tenant, action and day; the rules are
--   one function, memory_private.vector_index_plan, which the worker asks again before it acts.
--   0 turns the queueing off (the indexes there stay). Tenants cannot queue these jobs.
-- * public.memory_vector_index_of() returns a tenant's index only once it is valid: during a
--   concurrent build (and after a failed one) the index exists but answers nothing, and the
--   searches keep to the shared index.
--
-- Measured on the bench's 100k corpus (npm run bench -- --suites handler, rows "big, own index"):
-- the biggest tenant's hybrid requests 15.9-16.4 ms p95 on the shared index, 11.9-14.0 on its own
-- (built in 2.5-3.2 s).

insert into public.memory_settings (name, value, description) values
  ('dedicated_vector_index_min_rows', 10000,
   'A tenant with at least this many active memories (and at most half of all of them) gets an HNSW index of its own, built by the worker; dropped under half of it. 0: no automatic builds or drops. docs/operations.md#a-dedicated-vector-index-for-a-big-tenant.')
on conflict (name) do nothing;
alter table public.memory_settings add constraint memory_settings_dedicated_vector_index_min_rows_range check (
  name <> 'dedicated_vector_index_min_rows' or (value >= 0 and value = trunc(value)));

alter table public.memory_jobs drop constraint memory_jobs_kind_check;
alter table public.memory_jobs add constraint memory_jobs_kind_check check (
  kind in ('extract', 'dedup', 'embed', 'consolidate', 'enrich', 'causal',
           'nightly_consolidation', 'contradiction_check', 'insight', 'reindex', 'vector_index'));

create or replace function public.memory_vector_index_of(p_owner uuid)
returns regclass
language plpgsql
stable
set search_path = ''
as $$
begin
  return coalesce((select i.indexrelid::regclass
                     from pg_catalog.pg_index i
                    where i.indexrelid = to_regclass('public.devai_memories_hnsw_owner_' || replace(p_owner::text, '-', ''))
                      and i.indisvalid),
                  to_regclass('public.devai_memories_embedding_hnsw'));
end;
$$;

-- Tenants enqueue their own jobs (extract, dedup, ...) under RLS; an index build is not theirs to
-- ask for: only the hourly job (and service_role) queues one.
drop policy "Owners can enqueue jobs" on public.memory_jobs;
create policy "Owners can enqueue jobs" on public.memory_jobs
  for insert to authenticated with check (owner_id = (select auth.uid()) and kind <> 'vector_index');

-- The one statement of the rules: which tenants want an index built, which indexes should go. The
-- hourly job queues what it returns; the worker asks it again before it builds or drops (a job may
-- have waited while the tenant changed).
create or replace function memory_private.vector_index_plan(p_min_rows integer)
returns table (owner_id uuid, action text)
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  -- The threshold: the caller's (the queueing reads the setting; a job carries what it was queued with).
  v_min integer := p_min_rows;
begin
  if coalesce(v_min, 0) <= 0 then
    return;
  end if;
  return query
  with sized as (
    -- What the shared HNSW index holds, per tenant (its predicate).
    select m.owner_id, count(*) as n
      from public.devai_memories m
     where m.is_valid and m.state = 'active' and m.source is distinct from 'conversation'
     group by m.owner_id
  ),
  wanted as (
    select z.owner_id, z.n, z.n >= v_min and z.n <= (select sum(a.n) from sized a) / 2 as qualifies
      from sized z
  ),
  indexed as (
    -- The tenants' own indexes, their state and their tenants (from the names).
    select i.indisvalid as valid,
           exists (select from pg_catalog.pg_stat_progress_create_index p where p.index_relid = c.oid) as building,
           regexp_replace(substr(c.relname, length('devai_memories_hnsw_owner_') + 1),
                          '^(.{8})(.{4})(.{4})(.{4})(.{12})$', '\1-\2-\3-\4-\5')::uuid as owner_id
      from pg_catalog.pg_class c
      join pg_catalog.pg_index i on i.indexrelid = c.oid
     where i.indrelid = 'public.devai_memories'::regclass
       and c.relname ~ '^devai_memories_hnsw_owner_[0-9a-f]{32}$'
  )
  select w.owner_id, 'build'::text
    from wanted w
   where w.qualifies
     and not exists (select from indexed x where x.owner_id = w.owner_id and x.valid)
  union all
  -- Under half the threshold; or invalid (a failed build), not being built and not to be rebuilt.
  select x.owner_id, 'drop'::text
    from indexed x
    left join wanted w on w.owner_id = x.owner_id
   where coalesce(w.n, 0) < v_min / 2
      or (not x.valid and not x.building and not coalesce(w.qualifies, false));
end;
$$;
revoke all on function memory_private.vector_index_plan(integer) from public, anon, authenticated;
grant execute on function memory_private.vector_index_plan(integer) to service_role;

create or replace function memory_private.enqueue_vector_index_jobs(p_now timestamptz default now(), p_min_rows integer default null)
returns jsonb
language plpgsql
security definer
set search_path = ''
as $$
declare
  -- p_min_rows: the threshold for this call (tests, the bench); null reads the setting.
  v_min   integer := coalesce(p_min_rows, public.memory_setting('dedicated_vector_index_min_rows')::integer);
  v_day   text := to_char(p_now at time zone 'UTC', 'YYYY-MM-DD');
  v_build integer;
  v_drop  integer;
begin
  if coalesce(v_min, 0) <= 0 then
    return jsonb_build_object('build', 0, 'drop', 0, 'off', true);
  end if;
  -- The threshold goes with the job: the worker checks the plan again with it.
  with queued as (
    insert into public.memory_jobs (owner_id, kind, payload, idempotency_key)
    select p.owner_id, 'vector_index', jsonb_build_object('action', p.action, 'min_rows', v_min),
           'vector_index:' || p.action || ':' || v_day
      from memory_private.vector_index_plan(v_min) p
    on conflict (owner_id, kind, idempotency_key) do nothing
    returning payload ->> 'action' as action
  )
  select count(*) filter (where q.action = 'build'), count(*) filter (where q.action = 'drop')
    into v_build, v_drop
    from queued q;
  return jsonb_build_object('build', v_build, 'drop', v_drop);
end;
$$;
revoke all on function memory_private.enqueue_vector_index_jobs(timestamptz, integer) from public, anon, authenticated;
grant execute on function memory_private.enqueue_vector_index_jobs(timestamptz, integer) to service_role;
comment on function memory_private.enqueue_vector_index_jobs(timestamptz, integer) is
  'Queues a vector_index job for each row of memory_private.vector_index_plan (a build for each tenant with dedicated_vector_index_min_rows active memories or more, at most half of them all, without a valid index of its own; a drop for each tenant index whose tenant has fewer than half of that, or that a failed build left invalid); one per tenant, action and day. pg_cron hourly (devai-vector-indexes).';

insert into public.memory_maintenance_schedules (job_name, schedule, command, description) values
  ('devai-vector-indexes', '40 * * * *', 'select memory_private.enqueue_vector_index_jobs()',
   'Queues the builds and drops of big tenants'' own HNSW indexes (dedicated_vector_index_min_rows), hourly at :40; the worker runs them (CREATE INDEX CONCURRENTLY).')
on conflict (job_name) do update
  set schedule = excluded.schedule, command = excluded.command, description = excluded.description;

select memory_private.register_maintenance_schedules();
