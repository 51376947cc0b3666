-- PGlite-only additions, applied by scripts/pglite/serve-db.ts right after
-- scripts/sql/supabase-bootstrap.sql (which runs unchanged on PGlite: roles, auth.*, default
-- privileges, the database's search_path). Test/dev infrastructure, never a migration.
-- Idempotent: runs at every start.

-- PGlite has no pg_cron. serve-db.ts runs the rows of public.memory_maintenance_schedules on their
-- schedules itself and records each run here, the way cron.job_run_details does on a real server.
create schema if not exists devai_pglite;
revoke all on schema devai_pglite from public;
create table if not exists devai_pglite.job_run_details (
  runid          bigint generated always as identity primary key,
  job_name       text not null,
  command        text not null,
  status         text not null check (status in ('running', 'succeeded', 'failed')),
  return_message text,
  start_time     timestamptz not null default clock_timestamp(),
  end_time       timestamptz
);
create index if not exists job_run_details_job_time on devai_pglite.job_run_details (job_name, start_time desc);
comment on table devai_pglite.job_run_details is
  'PGlite stand-in for cron.job_run_details: runs of public.memory_maintenance_schedules made by scripts/pglite/serve-db.ts.';
