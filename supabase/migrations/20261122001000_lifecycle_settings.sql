-- Lifecycle, layer 2 (tables): the thresholds the nightly jobs read, and the list of maintenance
-- schedules. The jobs themselves are in 20261122001100_lifecycle_jobs.sql, their pg_cron
-- registration in 20261122001200_lifecycle_schedules.sql. See docs/operations.md.

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
   'Purge runs at most this many batches per call; what is left is purged at the next run.');

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
