-- pg_cron's run records of one of our jobs that was unscheduled (the worker kick removing itself
-- where pg_net or the Vault secrets are gone, a schedule renamed) are pruned like those of our
-- live jobs: prune_cron_history found ours through cron.job, so these stayed for ever (up to 7
-- days of a 5-second job, 120,960 rows). A removed job's records are ours when they are of this
-- database and their command calls memory_private; every other record is left alone.
-- Clock: p_now = 2026-06-10 00:00 UTC. Rolled back at the end.
begin;
set local timezone to 'UTC';
select plan(3);

create temporary table has_cron on commit drop as
  select exists (select from pg_extension where extname = 'pg_cron') as yes;

create temporary table runs on commit drop as select * from (values
  ('ours, removed, 8 days old',      current_database(), 'select memory_private.kick_memory_worker()', timestamptz '2026-06-02 00:00+00' - interval '1 minute'),
  ('ours, removed, 6 days old',      current_database(), 'select memory_private.kick_memory_worker()', timestamptz '2026-06-04 00:00+00'),
  ('theirs, removed, 30 days old',   current_database(), 'select 1',                                   timestamptz '2026-05-11 01:00+00'),
  ('other database, 30 days old',    'another_db',       'select memory_private.kick_memory_worker()', timestamptz '2026-05-11 01:00+00')
) as v(label, database, command, end_time);

select case when (select yes from has_cron)
  then lives_ok($q$
    insert into cron.job_run_details (jobid, runid, database, username, command, status, return_message, start_time, end_time)
    select (select coalesce(max(jobid), 0) + 1000 from cron.job), nextval('cron.runid_seq'), r.database, 'postgres',
           r.command, 'failed', r.label, r.end_time - interval '1 second', r.end_time
      from runs r$q$,
    'run records of jobs no longer in cron.job set up')
  else skip('pg_cron is not installed in this database', 1) end;

select case when (select yes from has_cron)
  then is(memory_private.prune_cron_history('2026-06-10 00:00+00') -> 'deleted', '1'::jsonb,
          'deletes the removed kick''s record older than 7 days')
  else skip('pg_cron is not installed in this database', 1) end;

select case when (select yes from has_cron)
  then results_eq($q$select return_message from cron.job_run_details where return_message in (select label from runs) order by 1$q$,
                  $q$values ('other database, 30 days old'::text), ('ours, removed, 6 days old'), ('theirs, removed, 30 days old')$q$,
                  'kept: its recent record, a removed job of someone else''s, and another database''s')
  else skip('pg_cron is not installed in this database', 1) end;

select * from finish();
rollback;
