-- pg_cron keeps a row in cron.job_run_details for every run and never deletes them. Our jobs
-- run often (the lease sweeper every minute, the three step jobs every minute of their window):
-- some 1,620 rows a day, 590,000 a year. A daily job now deletes the run records of the devai-
-- jobs of this database older than cron_history_keep_days (7); other jobs' records are left alone.

insert into public.memory_settings (name, value, description) values
  ('cron_history_keep_days', 7,
   'pg_cron run records (cron.job_run_details) of the devai- jobs of this database older than this many days are deleted daily by devai-cron-history-prune.')
on conflict (name) do nothing;
alter table public.memory_settings
  add constraint memory_settings_cron_history_keep_days_range
  check (name <> 'cron_history_keep_days' or value >= 0);

-- Deletes the finished pg_cron run records (cron.job_run_details) of this database's devai- jobs
-- that ended more than cron_history_keep_days before p_now. Records of other jobs, and runs still
-- under way (no end_time), are kept. Without pg_cron it does nothing and says so. Returns
-- {"pg_cron": true, "deleted": n} or {"pg_cron": false, "deleted": 0}. Run by hand (as postgres,
-- which may write pg_cron's tables): select memory_private.prune_cron_history();
-- The statement is dynamic because the cron schema does not exist where pg_cron is missing.
create or replace function memory_private.prune_cron_history(p_now timestamptz default now())
returns jsonb
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
  v_keep    interval := make_interval(secs => public.memory_setting('cron_history_keep_days')::double precision * 86400);
  v_deleted bigint;
begin
  if to_regclass('cron.job_run_details') is null or to_regclass('cron.job') is null then
    return jsonb_build_object('pg_cron', false, 'deleted', 0);
  end if;
  execute $sql$
    delete from cron.job_run_details d
     using cron.job j
     where d.jobid = j.jobid
       and j.jobname like 'devai-%'
       and j.database = current_database()
       and d.end_time < $1
  $sql$ using p_now - v_keep;
  get diagnostics v_deleted = row_count;
  return jsonb_build_object('pg_cron', true, 'deleted', v_deleted);
end;
$$;
revoke all on function memory_private.prune_cron_history(timestamptz) from public;

insert into public.memory_maintenance_schedules (job_name, schedule, command, description) values
  ('devai-cron-history-prune', '30 6 * * *', 'select memory_private.prune_cron_history()',
   'Deletes pg_cron run records of the devai- jobs older than cron_history_keep_days (7), daily at 06:30.')
on conflict (job_name) do update
  set schedule = excluded.schedule, command = excluded.command, description = excluded.description;

select memory_private.register_maintenance_schedules();
