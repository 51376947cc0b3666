-- The worker's kick (job devai-memory-worker) exists exactly where it can run: pg_net's
-- net.http_post and Vault's project URL and service key (memory_private.worker_kick_missing).
-- memory_private.register_worker_kick() makes the job match, both ways, however often it is called
-- and by postgres or service_role; a kick that finds pg_net or the secrets gone removes its own job
-- (nothing of ours runs when an extension is dropped or a restore lacks it).
-- pg_net cannot be installed on the project's Postgres root (neither Debian nor npm ships it), and
-- Supabase Vault neither: this file stands in for both, inside its rolled-back transaction, with a
-- schema net holding a function of pg_net's http_post signature (url, body, params, headers,
-- timeout_milliseconds; pg_net's docs/api.md) that records its calls, and a table
-- vault.decrypted_secrets of Vault's two columns the kick reads. The kick and the registration
-- look for that function and those rows, not for the extensions' names, so what is tested is the
-- code that runs on hosted Supabase; what is not is pg_net sending the request (pg_net's own).
-- Where the real pg_net or Vault is installed, or pg_cron is not, the stand-in part is skipped.
begin;
select plan(19);

create temporary table here on commit drop as
  select not exists (select from pg_extension where extname = 'pg_net')
         and to_regnamespace('net') is null and to_regnamespace('vault') is null as stand_in,
         exists (select from pg_extension where extname = 'pg_cron') as cron;
grant select on here to service_role;
create temporary table kick_job (jobid bigint, schedule text, command text, username text) on commit drop;

select ok(not has_function_privilege('anon', 'memory_private.register_worker_kick()', 'execute')
          and not has_function_privilege('authenticated', 'memory_private.register_worker_kick()', 'execute'),
          'clients cannot register the kick');
select ok(has_function_privilege('service_role', 'memory_private.register_worker_kick()', 'execute'),
          'service_role can');

-- without pg_net
select case when (select stand_in from here)
  then is(memory_private.register_worker_kick(), '{"scheduled": false, "missing": "pg_net", "removed": false}'::jsonb,
          'without pg_net: says what is missing')
  else skip('pg_net or Vault is installed in this database', 1) end;
select case when (select stand_in from here)
  then is_empty($$select from public.memory_maintenance_schedules where job_name = 'devai-memory-worker'$$,
                'without pg_net: no schedule row')
  else skip('pg_net or Vault is installed in this database', 1) end;
select case when (select stand_in and cron from here)
  then is_empty($$select from cron.job where jobname = 'devai-memory-worker'$$, 'without pg_net: no job')
  else skip('pg_net or Vault is installed, or pg_cron is not', 1) end;

-- pg_net (the stand-in), then Vault without the secrets, then the secrets
do $$
begin
  if (select stand_in and cron from here) then
    create schema net;
    create table net.calls (url text, headers jsonb);
    create function net.http_post(url text, body jsonb default '{}'::jsonb, params jsonb default '{}'::jsonb,
                                  headers jsonb default '{"Content-Type": "application/json"}'::jsonb,
                                  timeout_milliseconds integer default 5000)
    returns bigint language sql
    as 'insert into net.calls (url, headers) values (url, headers) returning 1::bigint';
  end if;
end;
$$;
select case when (select stand_in and cron from here)
  then is(memory_private.register_worker_kick(), '{"scheduled": false, "missing": "vault", "removed": false}'::jsonb,
          'pg_net without Vault: not scheduled, and says why')
  else skip('pg_net or Vault is installed, or pg_cron is not', 1) end;
do $$
begin
  if (select stand_in and cron from here) then
    create schema vault;
    create table vault.decrypted_secrets (name text, decrypted_secret text);
    insert into vault.decrypted_secrets values ('project_url', 'https://ref.supabase.co/');
  end if;
end;
$$;
select case when (select stand_in and cron from here)
  then is(memory_private.register_worker_kick() ->> 'missing', 'secrets', 'a project URL without a key: not scheduled')
  else skip('pg_net or Vault is installed, or pg_cron is not', 1) end;

do $$
begin
  if (select stand_in and cron from here) then
    insert into vault.decrypted_secrets values ('secret_key', 'sb_secret_test');
  end if;
end;
$$;
select case when (select stand_in and cron from here)
  then is(memory_private.register_worker_kick(),
          '{"scheduled": true, "pg_cron": true, "job": "devai-memory-worker", "already_scheduled": false}'::jsonb,
          'with pg_net and the secrets: the kick is scheduled')
  else skip('pg_net or Vault is installed, or pg_cron is not', 1) end;
do $$
begin
  if (select stand_in and cron from here) then
    insert into kick_job
      select jobid, schedule, command, username from cron.job where jobname = 'devai-memory-worker';
  end if;
end;
$$;
select case when (select stand_in and cron from here)
  then results_eq($$select count(*)::int, min(schedule), min(command), min(username) from kick_job$$,
                  $$values (1, '5 seconds', 'select memory_private.kick_memory_worker()', 'postgres')$$,
                  'one job, every 5 seconds, of postgres')
  else skip('pg_net or Vault is installed, or pg_cron is not', 1) end;

set local role service_role;
select case when (select stand_in and cron from here)
  then is(memory_private.register_worker_kick() ->> 'already_scheduled', 'true', 'a second call (service_role) finds it scheduled')
  else skip('pg_net or Vault is installed, or pg_cron is not', 1) end;
reset role;
select case when (select stand_in and cron from here)
  then results_eq($$select jobid, schedule::text, command::text, username::text from cron.job where jobname = 'devai-memory-worker'$$,
                  $$select jobid, schedule, command, username from kick_job$$, 'and changes nothing: the same one job')
  else skip('pg_net or Vault is installed, or pg_cron is not', 1) end;

-- the kick, as pg_cron runs it: no call while nothing waits, one call when a job does
select memory_private.kick_memory_worker() where (select stand_in and cron from here);
select case when (select stand_in and cron from here)
  then is_empty($$select from net.calls$$, 'nothing queued: no request')
  else skip('pg_net or Vault is installed, or pg_cron is not', 1) end;
insert into public.memory_jobs (owner_id, kind, idempotency_key)
  values ('00000000-0000-4000-8000-0000000000b1', 'extract', 'worker-kick-test');
select memory_private.kick_memory_worker() where (select stand_in and cron from here);
select case when (select stand_in and cron from here)
  then results_eq($$select url, headers from net.calls$$,
                  $$values ('https://ref.supabase.co/functions/v1/memory-worker',
                            '{"content-type": "application/json", "apikey": "sb_secret_test"}'::jsonb)$$,
                  'a job waiting: one request to memory-worker, the secret key in its apikey header')
  else skip('pg_net or Vault is installed, or pg_cron is not', 1) end;

-- and back: the secrets removed, then pg_net dropped
delete from vault.decrypted_secrets where name = 'secret_key' and (select stand_in and cron from here);
select case when (select stand_in and cron from here)
  then is(memory_private.register_worker_kick(), '{"scheduled": false, "missing": "secrets", "removed": true}'::jsonb,
          'the key removed from Vault: the job is removed')
  else skip('pg_net or Vault is installed, or pg_cron is not', 1) end;
select case when (select stand_in and cron from here)
  then ok(not exists (select from cron.job where jobname = 'devai-memory-worker')
          and not exists (select from public.memory_maintenance_schedules where job_name = 'devai-memory-worker'),
          'no job and no schedule row')
  else skip('pg_net or Vault is installed, or pg_cron is not', 1) end;

insert into vault.decrypted_secrets
  select 'service_role_key', 'eyJ.legacy.jwt' where (select stand_in and cron from here);
select case when (select stand_in and cron from here)
  then is(memory_private.register_worker_kick() ->> 'scheduled', 'true', 'the legacy service_role_key does too')
  else skip('pg_net or Vault is installed, or pg_cron is not', 1) end;
do $$
begin
  if (select stand_in and cron from here) then
    drop schema net cascade;
  end if;
end;
$$;
select case when (select stand_in and cron from here)
  then lives_ok($$select memory_private.kick_memory_worker()$$, 'pg_net dropped: the next kick does not fail')
  else skip('pg_net or Vault is installed, or pg_cron is not', 1) end;
select case when (select stand_in and cron from here)
  then ok(not exists (select from cron.job where jobname = 'devai-memory-worker')
          and not exists (select from public.memory_maintenance_schedules where job_name = 'devai-memory-worker'),
          'it removed its own job and schedule row')
  else skip('pg_net or Vault is installed, or pg_cron is not', 1) end;
select case when (select stand_in and cron from here)
  then is(memory_private.register_worker_kick(), '{"scheduled": false, "missing": "pg_net", "removed": false}'::jsonb,
          'a registration afterwards finds nothing to remove')
  else skip('pg_net or Vault is installed, or pg_cron is not', 1) end;

select * from finish();
rollback;
