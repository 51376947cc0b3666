-- The worker's kick (job devai-memory-worker) is made by memory_private.register_worker_kick(),
-- which an operator calls after enabling pg_net: without pg_net it makes nothing and says so;
-- with it, one job however often it is called, by postgres or service_role. The part with pg_net
-- runs only where this server has pg_net (hosted Supabase; not the local Postgres root, where it is
-- skipped).
begin;
select plan(10);

create temporary table net_here on commit drop as
  select exists (select from pg_available_extensions where name = 'pg_net') as available,
         exists (select from pg_extension where extname = 'pg_net') as installed,
         exists (select from pg_extension where extname = 'pg_cron') as cron;
grant select on net_here to service_role;

select ok(not has_function_privilege('anon', 'memory_private.register_worker_kick()', 'execute')
          and not has_function_privilege('authenticated', 'memory_private.register_worker_kick()', 'execute'),
          'clients cannot register the kick');
select ok(has_function_privilege('service_role', 'memory_private.register_worker_kick()', 'execute'),
          'service_role can');

-- without pg_net
select case when not (select installed from net_here)
  then is(memory_private.register_worker_kick(), '{"pg_net": false}'::jsonb, 'without pg_net: says so')
  else skip('pg_net is installed in this database', 1) end;
select case when not (select installed from net_here)
  then is_empty($$select from public.memory_maintenance_schedules where job_name = 'devai-memory-worker'$$,
                'without pg_net: no schedule row')
  else skip('pg_net is installed in this database', 1) end;
select case when not (select installed from net_here) and (select cron from net_here)
  then is_empty($$select from cron.job where jobname = 'devai-memory-worker'$$, 'without pg_net: no job')
  else skip('pg_net is installed, or pg_cron is not', 1) end;
select case when not (select installed from net_here)
  then hasnt_function('memory_private', 'kick_memory_worker', 'without pg_net: no kick function')
  else skip('pg_net is installed in this database', 1) end;

-- after enabling pg_net
do $$
begin
  if (select available from net_here) and (select cron from net_here) then
    create extension if not exists pg_net;
  end if;
end;
$$;
select case when (select available and cron from net_here)
  then is(memory_private.register_worker_kick() - 'already_scheduled',
          '{"pg_net": true, "pg_cron": true, "job": "devai-memory-worker"}'::jsonb, 'with pg_net: the kick is scheduled')
  else skip('pg_net or pg_cron is not available on this server', 1) end;
create temporary table kick_job (jobid bigint, schedule text, command text, username text) on commit drop;
do $$
begin
  if (select available and cron from net_here) then
    insert into kick_job
      select jobid, schedule, command, username from cron.job where jobname = 'devai-memory-worker';
  end if;
end;
$$;
select case when (select available and cron from net_here)
  then results_eq($$select count(*)::int, min(schedule), min(command) from kick_job$$,
                  $$values (1, '5 seconds', 'select memory_private.kick_memory_worker()')$$, 'one job, every 5 seconds')
  else skip('pg_net or pg_cron is not available on this server', 1) end;

set local role service_role;
select case when (select available and cron from net_here)
  then is(memory_private.register_worker_kick() ->> 'already_scheduled', 'true', 'a second call finds it scheduled')
  else skip('pg_net or pg_cron is not available on this server', 1) end;
reset role;
select case when (select available and cron from net_here)
  then results_eq($$select jobid, schedule::text, command::text, username::text from cron.job where jobname = 'devai-memory-worker'$$,
                  $$select jobid, schedule, command, username from kick_job$$, 'and changes nothing: the same one job')
  else skip('pg_net or pg_cron is not available on this server', 1) end;

select * from finish();
rollback;
