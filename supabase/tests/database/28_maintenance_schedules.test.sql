-- Schedules: public.memory_maintenance_schedules is the single source of truth, and where
-- pg_cron is installed (the test database is pg_cron's) each row is exactly one cron job of the
-- same name, schedule and command, however often the registration runs. The registration is
-- what the schedules migration runs; rolled back at the end like everything here.
begin;
set local timezone to 'UTC';
select plan(14);

select results_eq(
  $$select job_name, schedule, command from public.memory_maintenance_schedules order by job_name$$,
  $$values ('devai-agent-token-prune'::text, '50 6 * * *'::text, 'select memory_private.prune_agent_tokens()'::text),
           ('devai-context-prune', '45 6 * * *', 'select memory_private.prune_context_sessions()'),
           ('devai-cron-history-prune', '30 6 * * *', 'select memory_private.prune_cron_history()'),
           ('devai-entity-backfill', '*/10 * * * *', 'select memory_private.enqueue_entity_backfill()'),
           ('devai-export-rows-prune', '*/15 * * * *', 'select memory_private.prune_export_rows()'),
           ('devai-graph-maintenance', '30 2 * * *', 'select memory_private.enqueue_graph_maintenance()'),
           ('devai-job-lease-sweep', '* * * * *', 'select memory_private.sweep_stale_job_leases()'),
           ('devai-job-prune', '* * * * *', 'select memory_private.prune_finished_jobs()'),
           ('devai-keyword-statistics', '*/15 * * * *', 'select memory_private.refresh_keyword_common_terms()'),
           ('devai-memory-consolidation', '45 2 * * *', 'select memory_private.enqueue_nightly_consolidation()'),
           ('devai-memory-decay', '* 3 * * *', 'select memory_private.run_decay_step()'),
           ('devai-memory-purge', '* 5 * * *', 'select memory_private.run_purge_step()'),
           ('devai-memory-ttl', '* 4 * * *', 'select memory_private.run_ttl_step()'),
           ('devai-proposal-lapse', '15 2 * * *', 'select memory_private.lapse_proposals()'),
           ('devai-rate-limit-prune', '55 6 * * *', 'select memory_private.prune_rate_limit_buckets()'),
           ('devai-scope-count-compaction', '*/10 * * * *', 'select memory_private.compact_scope_counts()'),
           ('devai-session-idle-end', '0 2 * * *', 'select memory_private.end_idle_sessions()'),
           ('devai-vector-indexes', '40 * * * *', 'select memory_private.enqueue_vector_index_jobs()')$$,
  'step forms every minute of a window each: decay 03:xx, TTL 04:xx, purge 05:xx UTC; lease sweep and finished-job prune every minute; keyword statistics every 15 minutes; pg_cron history prune daily 06:30; idle sessions ended 02:00, proposals lapsed 02:15, graph maintenance queued 02:30, consolidation 02:45; context session records pruned 06:45; old revoked and expired agent tokens 06:50; full rate-limit buckets 06:55; tenants'' own vector indexes queued hourly at :40; entity backfill jobs queued every 10 minutes; export copies whose server went away pruned every 15 minutes; scope counts compacted every 10 minutes');

create temporary table has_cron on commit drop as
  select exists (select from pg_extension where extname = 'pg_cron') as yes;

select case when (select yes from has_cron)
  then results_eq(
    $$select jobname::text, schedule::text, command::text from cron.job where jobname like 'devai-%' and database = current_database() order by jobname$$,
    $$select job_name, schedule, command from public.memory_maintenance_schedules order by job_name$$,
    'the migration registered every schedule with pg_cron')
  else skip('pg_cron is not installed in this database', 1) end;

select case when (select yes from has_cron)
  then is(memory_private.register_maintenance_schedules(), '{"pg_cron": true, "removed": 0, "registered": 18}'::jsonb,
          're-running the registration upserts the same eighteen jobs')
  else is(memory_private.register_maintenance_schedules() ->> 'pg_cron', 'false', 'without pg_cron the registration is a no-op') end;
select memory_private.register_maintenance_schedules();

select case when (select yes from has_cron)
  then is((select count(*) from cron.job where jobname like 'devai-%' and database = current_database()), 18::bigint,
          'after registering three times: still exactly eighteen devai- jobs')
  else skip('pg_cron is not installed in this database', 1) end;
select case when (select yes from has_cron)
  then is((select count(distinct jobname) from cron.job where jobname like 'devai-%' and database = current_database()), 18::bigint,
          'one job per name')
  else skip('pg_cron is not installed in this database', 1) end;

-- a changed schedule is updated in place; a removed row is unscheduled
update public.memory_maintenance_schedules set schedule = '0 4 * * *' where job_name = 'devai-memory-decay';
delete from public.memory_maintenance_schedules where job_name = 'devai-memory-purge';
select case when (select yes from has_cron)
  then is(memory_private.register_maintenance_schedules() - 'pg_cron', '{"removed": 1, "registered": 17}'::jsonb,
          'registration after editing the table: seventeen upserted, one removed')
  else skip('pg_cron is not installed in this database', 1) end;
select case when (select yes from has_cron)
  then is((select schedule::text from cron.job where jobname = 'devai-memory-decay'), '0 4 * * *', 'the changed schedule is in pg_cron')
  else skip('pg_cron is not installed in this database', 1) end;
select case when (select yes from has_cron)
  then is_empty($$select from cron.job where jobname = 'devai-memory-purge'$$, 'the removed job is gone from pg_cron')
  else skip('pg_cron is not installed in this database', 1) end;

-- a job another migration adds to the table (the job-queue migration's devai-memory-worker, where
-- pg_net exists) is registered like the others and survives every re-registration
insert into public.memory_maintenance_schedules (job_name, schedule, command, description)
values ('devai-memory-worker', '5 seconds', 'select 1', 'stand-in for the pg_net worker kick');
select memory_private.register_maintenance_schedules();
select memory_private.register_maintenance_schedules();
select case when (select yes from has_cron)
  then is((select count(*) from cron.job where jobname = 'devai-memory-worker'), 1::bigint,
          'a job registered through the table stays registered, once, across re-registrations')
  else skip('pg_cron is not installed in this database', 1) end;

-- every scheduled command runs by hand, and so do the one-shot forms
select lives_ok($$select memory_private.run_decay_step(); select memory_private.run_ttl_step(); select memory_private.run_purge_step();
                  select memory_private.run_decay(); select memory_private.run_ttl(); select memory_private.run_purge();
                  select memory_private.sweep_stale_job_leases(); select memory_private.prune_cron_history();
                  select memory_private.end_idle_sessions(); select memory_private.enqueue_graph_maintenance();
                  select memory_private.refresh_keyword_common_terms(); select memory_private.enqueue_vector_index_jobs();
                  select memory_private.prune_agent_tokens(); select memory_private.enqueue_entity_backfill();
                  select memory_private.prune_rate_limit_buckets(); select memory_private.compact_scope_counts()$$,
                'every job runs by hand, in its step and its one-shot form');

-- who may run the step forms and see their progress: service_role (and postgres, pg_cron's
-- role), never a signed-in user or anon
select is_empty($$select p.oid::regprocedure::text from pg_proc p
                   where p.pronamespace = 'memory_private'::regnamespace
                     and p.proname in ('run_decay_step', 'run_ttl_step', 'run_purge_step', 'run_lifecycle_step')
                     and (has_function_privilege('authenticated', p.oid, 'execute') or has_function_privilege('anon', p.oid, 'execute'))$$,
                'authenticated and anon may not run a step form');
select ok(not has_table_privilege('authenticated', 'memory_private.lifecycle_runs', 'select')
          and not has_table_privilege('anon', 'memory_private.lifecycle_runs', 'select'),
          'authenticated and anon may not read the lifecycle runs');
delete from memory_private.lifecycle_runs;
set local role service_role;
select lives_ok($$select memory_private.run_decay_step(1); select memory_private.run_ttl_step(1); select memory_private.run_purge_step(1)$$,
                'service_role runs the step forms by hand');
select results_eq($$select job from memory_private.lifecycle_runs order by job$$, $$values ('decay'::text), ('ttl')$$,
                  'service_role reads the progress of the runs it started');
reset role;

select * from finish();
rollback;
