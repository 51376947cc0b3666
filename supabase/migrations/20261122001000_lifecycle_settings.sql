-- Lifecycle, layer 2 (tables): the thresholds the nightly jobs read, the list of maintenance
-- schedules, and the progress of the resumable jobs. The jobs themselves are in
-- 20261122001100_lifecycle_jobs.sql, their pg_cron registration in
-- 20261122001200_lifecycle_schedules.sql. See docs/operations.md.

-- Decay rewrites the strength of every idle memory once a night. Leaving half of each heap page
-- free lets those updates be HOT (heap-only: strength is in no index), so they write no index
-- entries at all: no HNSW, GIN (fts) or btree churn. All rows of a page are updated in the same
-- transaction, so their new versions need as much room as the old ones; the dead versions of the
-- previous night are pruned when the page is next updated. Measured on 1,000,000 memories:
-- ~200 us/row with full pages (every update non-HOT), see docs/operations.md for the numbers.
-- Applies to pages written from now on; an existing large table needs VACUUM FULL (or pg_repack).
alter table public.devai_memories set (fillfactor = 50);

-- Tunables of decay, reinforcement, TTL and purge. The jobs read them at every run, so a change
-- takes effect at the next run (no redeploy): `update public.memory_settings set value = 90
-- where name = 'ttl_idle_days';`. Readable by signed-in users (retrieval's reinforcement needs
-- decay_base); written only by postgres / service_role.
create table public.memory_settings (
  name        text primary key,
  value       numeric not null,
  description text not null,
  updated_at  timestamptz not null default now(),
  constraint memory_settings_name_shape check (name ~ '^[a-z][a-z0-9_]{0,62}$'),
  constraint memory_settings_value_range check (
    case name
      when 'decay_base'               then value > 0 and value <= 1
      when 'prune_threshold'          then value >= 0 and value <= 1
      when 'reinforce_step'           then value >= 0 and value <= 1
      when 'reinforce_log_weight'     then value >= 0 and value <= 1
      when 'reinforce_log_scale'      then value > 0
      when 'restore_strength'         then value >= 0 and value <= 1
      when 'ttl_idle_days'            then value >= 1
      when 'ttl_importance_below'     then value between 1 and 6
      when 'purge_grace_days'         then value >= 0
      when 'decay_batch_pages'        then value >= 1 and value = trunc(value)
      when 'ttl_batch_pages'          then value >= 1 and value = trunc(value)
      when 'purge_batch_size'         then value >= 1 and value = trunc(value)
      when 'purge_max_batches'        then value >= 1 and value = trunc(value)
      when 'step_new_run_after_hours' then value > 0
      else true
    end)
);

comment on table public.memory_settings is
  'Thresholds of the memory lifecycle (decay, reinforcement, TTL soft-delete, purge), read by the pg_cron jobs at every run. See docs/operations.md.';

insert into public.memory_settings (name, value, description) values
  ('decay_base', 0.95,
   'Ebbinghaus decay per full idle day: strength = base_strength * decay_base ^ floor(days since last access).'),
  ('prune_threshold', 0.05,
   'Decay marks a memory is_valid = false (DECAY event) once its strength falls below this; never for priority highest or pinned.'),
  ('reinforce_step', 0.1,
   'Flat strength boost per retrieval: strength = least(1, decayed + reinforce_step + reinforce_log_weight * ln(1 + access_count / reinforce_log_scale)).'),
  ('reinforce_log_weight', 0.05,
   'Weight of the access-count term of the retrieval boost (seed 003: 0.05 * ln(1 + access_count / 20)).'),
  ('reinforce_log_scale', 20,
   'Access count scale of the retrieval boost (seed 003: 20).'),
  ('restore_strength', 0.5,
   'Restoring a memory counts as an access: strength = base_strength = greatest(decayed strength, restore_strength).'),
  ('ttl_idle_days', 60,
   'TTL: an active memory not accessed for more than this many days (and importance < ttl_importance_below, not pinned, not highest, not user_stated) is soft-deleted.'),
  ('ttl_importance_below', 3,
   'TTL applies only to memories whose importance (1-5) is strictly below this value.'),
  ('purge_grace_days', 30,
   'A TTL soft-delete sets purge_at = now + this many days; purge deletes the row after that (its history survives).'),
  ('decay_batch_pages', 1000,
   'Decay walks the table in ranges of this many heap pages (1000 pages = 8 MB, some 10-20k rows): one UPDATE per range bounds the work of each statement.'),
  ('ttl_batch_pages', 2000,
   'TTL walks the table in ranges of this many heap pages.'),
  ('purge_batch_size', 1000,
   'Purge deletes at most this many rows per statement.'),
  ('purge_max_batches', 100,
   'run_purge (the one-shot form) runs at most this many batches per call; what is left is purged at the next run.'),
  ('step_new_run_after_hours', 20,
   'run_decay_step / run_ttl_step start a new run only when the last one started (by its clock) at least this many hours earlier: one run per night, however often pg_cron calls them.');

alter table public.memory_settings enable row level security;
revoke all on table public.memory_settings from anon, authenticated, public;
grant select on table public.memory_settings to authenticated;
grant all on table public.memory_settings to service_role;
create policy "Signed-in users can read lifecycle settings" on public.memory_settings
  for select to authenticated using (true);

-- The maintenance jobs and when they run: the single source of truth for scheduling. The
-- schedules migration registers exactly these rows with pg_cron (job name = job_name); a backend
-- without pg_cron (e.g. PGlite) reads the same rows and runs `command` on its own timer.
-- `schedule` is a cron expression in UTC (pg_cron syntax, including '[1-59] seconds').
create table public.memory_maintenance_schedules (
  job_name    text primary key,
  schedule    text not null,
  command     text not null,
  description text not null,
  constraint memory_maintenance_schedules_name_prefix check (job_name ~ '^devai-[a-z0-9-]{1,57}$'),
  constraint memory_maintenance_schedules_command_shape check (char_length(command) between 1 and 1000)
);

comment on table public.memory_maintenance_schedules is
  'Maintenance jobs (decay, TTL, purge, job-lease sweep) and their cron schedules (UTC); registered with pg_cron where available, run by a timer elsewhere.';

alter table public.memory_maintenance_schedules enable row level security;
revoke all on table public.memory_maintenance_schedules from anon, authenticated, public;
grant select on table public.memory_maintenance_schedules to authenticated;
grant all on table public.memory_maintenance_schedules to service_role;
create policy "Signed-in users can read maintenance schedules" on public.memory_maintenance_schedules
  for select to authenticated using (true);

-- Progress of the resumable lifecycle jobs, memory_private.run_decay_step and run_ttl_step: one
-- row per job, describing its current run (finished_at is null) or, once finished, its last one.
-- pg_cron calls a step every minute of the job's window; each call is one short transaction that
-- continues the run at next_page with the run's clock and commits, so the row locks it takes, and
-- the tenants' thread revision rows the history trigger bumps, are held for one call, not for the
-- whole run. Written only by the step functions; read it to see how far tonight's run is:
-- `select * from memory_private.lifecycle_runs;`. Internal (schema memory_private is not exposed).
create table memory_private.lifecycle_runs (
  job         text primary key,
  clock       timestamptz not null,
  next_page   bigint not null,
  total_pages bigint not null,
  batches     integer not null default 0,
  steps       integer not null default 0,
  totals      jsonb not null default '{}'::jsonb,
  started_at  timestamptz not null default clock_timestamp(),
  updated_at  timestamptz not null default clock_timestamp(),
  finished_at timestamptz,
  constraint lifecycle_runs_job_check check (job in ('decay', 'ttl')),
  constraint lifecycle_runs_pages_range check (next_page between 0 and total_pages)
);

comment on table memory_private.lifecycle_runs is
  'Current (or last) run of each resumable lifecycle job: clock = p_now of every batch of the run, heap pages [0, next_page) done of total_pages, counts so far in totals, wall-clock started/updated/finished times. See docs/operations.md.';
comment on column memory_private.lifecycle_runs.clock is
  'p_now of the run, fixed when it starts: every batch of one night uses the same clock, so the result equals one run_decay(clock) / run_ttl(clock).';
comment on column memory_private.lifecycle_runs.next_page is
  'First heap page of devai_memories the run has not processed yet; the run is done when it reaches total_pages.';
comment on column memory_private.lifecycle_runs.total_pages is
  'Heap pages of devai_memories when the run started (rows added later are fresh and wait for the next run).';
comment on column memory_private.lifecycle_runs.steps is
  'Calls of the step function that processed pages in this run.';
comment on column memory_private.lifecycle_runs.totals is
  'Counts of the run so far: {"decayed", "invalidated"} for decay, {"soft_deleted"} for ttl.';

-- RLS on, like every table: only the roles that run the jobs (postgres, the owner, as pg_cron;
-- service_role by hand) get grants and policies. service_role bypasses RLS on Supabase; the
-- policies say what it may do, and hold where it is set up without BYPASSRLS.
alter table memory_private.lifecycle_runs enable row level security;
revoke all on table memory_private.lifecycle_runs from anon, authenticated, public;
grant select, insert, update on table memory_private.lifecycle_runs to service_role;
create policy "Service role can read lifecycle runs" on memory_private.lifecycle_runs
  for select to service_role using (true);
create policy "Service role can start lifecycle runs" on memory_private.lifecycle_runs
  for insert to service_role with check (true);
create policy "Service role can record lifecycle progress" on memory_private.lifecycle_runs
  for update to service_role using (true) with check (true);
