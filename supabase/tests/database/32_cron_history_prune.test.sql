-- pg_cron's run records of our jobs do not grow without bound: memory_private.prune_cron_history
-- (daily, devai-cron-history-prune) deletes the finished runs of this database's devai- jobs that
-- ended more than cron_history_keep_days (7) ago, and leaves every other record alone. Without
-- pg_cron it is a no-op. Clock: p_now = 2026-06-10 00:00 UTC. Rolled back at the end.
begin;
set local timezone to 'UTC';
select plan(7);

create temporary table has_cron on commit drop as
  select exists (select from pg_extension where extname = 'pg_cron') as yes;

select case when (select yes from has_cron) then skip('pg_cron is installed: the no-op case does not apply', 1)
  else is(memory_private.prune_cron_history('2026-06-10 00:00+00'), '{"pg_cron": false, "deleted": 0}'::jsonb,
          'without pg_cron: nothing to do, and it says so') end;

-- A job of someone else's, and run records: old and recent ones of ours and of theirs, and a
-- run of ours still under way.
select case when (select yes from has_cron) then (select cron.schedule('not-ours-report', '0 1 * * *', 'select 1'))::text end;
create temporary table runs on commit drop as select * from (values
  ('ours, 8 days old',    'devai-job-lease-sweep', timestamptz '2026-06-02 00:00+00' - interval '1 minute', timestamptz '2026-06-02 00:00+00' - interval '1 second'),
  ('ours, 6 days old',    'devai-job-lease-sweep', timestamptz '2026-06-04 00:00+00', timestamptz '2026-06-04 00:00+00' + interval '1 second'),
  ('ours, 30 days old',   'devai-memory-decay',    timestamptz '2026-05-11 03:00+00', timestamptz '2026-05-11 03:00+00' + interval '2 seconds'),
  ('ours, still running', 'devai-memory-decay',    timestamptz '2026-05-11 03:01+00', null),
  ('theirs, 30 days old', 'not-ours-report',       timestamptz '2026-05-11 01:00+00', timestamptz '2026-05-11 01:00+00' + interval '1 second')
) as v(label, jobname, start_time, end_time);

select case when (select yes from has_cron)
  then lives_ok($q$
    insert into cron.job_run_details (jobid, database, username, command, status, return_message, start_time, end_time)
    select j.jobid, current_database(), 'postgres', r.label, case when r.end_time is null then 'running' else 'succeeded' end,
           r.label, r.start_time, r.end_time
      from runs r join cron.job j on j.jobname = r.jobname and j.database = current_database()$q$,
    'run records set up')
  else skip('pg_cron is not installed in this database', 1) end;

select case when (select yes from has_cron)
  then is(memory_private.prune_cron_history('2026-06-10 00:00+00'), '{"pg_cron": true, "deleted": 2}'::jsonb,
          'deletes the two finished runs of ours older than 7 days')
  else skip('pg_cron is not installed in this database', 1) end;

select case when (select yes from has_cron)
  then results_eq($q$select command from cron.job_run_details where command in (select label from runs) order by command$q$,
                  $q$values ('ours, 6 days old'::text), ('ours, still running'), ('theirs, 30 days old')$q$,
                  'kept: our run of 6 days ago, our run still under way, and every record of another job')
  else skip('pg_cron is not installed in this database', 1) end;

select case when (select yes from has_cron)
  then is(memory_private.prune_cron_history('2026-06-10 00:00+00') -> 'deleted', '0'::jsonb, 'a second run deletes nothing')
  else skip('pg_cron is not installed in this database', 1) end;

update public.memory_settings set value = 5 where name = 'cron_history_keep_days';
select case when (select yes from has_cron)
  then is(memory_private.prune_cron_history('2026-06-10 00:00+00') -> 'deleted', '1'::jsonb,
          'the keep period is the cron_history_keep_days setting (5 days: the 6-day-old run goes too)')
  else skip('pg_cron is not installed in this database', 1) end;

select throws_ok($$update public.memory_settings set value = -1 where name = 'cron_history_keep_days'$$, '23514', null,
                 'a negative keep period is rejected');

select * from finish();
rollback;
