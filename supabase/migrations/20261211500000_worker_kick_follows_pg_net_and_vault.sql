-- The worker's kick (job devai-memory-worker) now exists exactly where it can run: pg_net's
-- net.http_post and Vault's project URL and service key. register_worker_kick() built it where
-- pg_net existed and never removed it, so a project that dropped pg_net (or was restored without
-- it) kept a job that failed at each run its queue had work (every 5 seconds), and a project
-- without the Vault secrets kept one that did nothing every 5 seconds: 17,280 run records a day in
-- cron.job_run_details either way. Now the registration converges both ways, and the kick itself
-- unschedules itself at its first run that finds what it needs gone (a dropped extension or a
-- restore calls no function of ours). Operators: docs/operations.md#the-workers-kick.

-- What the worker's kick lacks on this database: 'pg_net' (no net.http_post, the call it makes),
-- 'vault' (no vault.decrypted_secrets) or 'secrets' (no project_url, or neither secret_key nor
-- service_role_key, in Vault); null when it can run. It looks for the function the kick calls, not
-- for the extension's name, so that the pgTAP test can stand in for pg_net with a function of the
-- same signature. Called by register_worker_kick() and by each kick.
create or replace function memory_private.worker_kick_missing()
returns text
language plpgsql
stable
security invoker
set search_path = ''
as $$
begin
  if to_regprocedure('net.http_post(text, jsonb, jsonb, jsonb, integer)') is null then
    return 'pg_net';
  end if;
  if to_regclass('vault.decrypted_secrets') is null then
    return 'vault';
  end if;
  if not exists (select from vault.decrypted_secrets where name = 'project_url' and decrypted_secret <> '')
     or not exists (select from vault.decrypted_secrets
                     where name in ('secret_key', 'service_role_key') and decrypted_secret <> '') then
    return 'secrets';
  end if;
  return null;
end;
$$;
revoke all on function memory_private.worker_kick_missing() from public, anon, authenticated;

-- The kick pg_cron runs every 5 seconds: calls the memory-worker edge function through pg_net
-- when jobs are waiting. Where pg_net or the Vault secrets are gone, it removes its own job
-- (register_worker_kick) instead of failing at each run. Defined everywhere now (its body is only
-- parsed where pg_net is missing); the job is what exists only where it can run. The key is
-- Vault's 'secret_key' (a new sb_secret_ key) when there is one, else 'service_role_key', sent in
-- the header its kind needs (memory_private.worker_request_headers).
create or replace function memory_private.kick_memory_worker()
returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_url text;
  v_key text;
begin
  if memory_private.worker_kick_missing() is not null then
    perform memory_private.register_worker_kick();
    return;
  end if;
  -- Nothing queued or expired: no HTTP call at all.
  if not exists (select from public.memory_jobs
                  where (status = 'queued' and run_after <= now())
                     or (status = 'running' and locked_until < now())) then
    return;
  end if;
  select (select decrypted_secret from vault.decrypted_secrets where name = 'project_url'),
         coalesce((select decrypted_secret from vault.decrypted_secrets where name = 'secret_key'),
                  (select decrypted_secret from vault.decrypted_secrets where name = 'service_role_key'))
    into v_url, v_key;
  perform net.http_post(
    url := rtrim(v_url, '/') || '/functions/v1/memory-worker',
    headers := memory_private.worker_request_headers(v_key),
    body := '{}'::jsonb,
    timeout_milliseconds := 4000);
end;
$$;
revoke all on function memory_private.kick_memory_worker() from public, anon, authenticated;

-- Makes the kick's job match this database: schedules devai-memory-worker (a row of
-- public.memory_maintenance_schedules, registered like every other job) where pg_net and the
-- Vault secrets exist (worker_kick_missing), removes it where they do not. Idempotent both ways.
-- Returns what it did: {"scheduled": false, "missing": "pg_net"|"vault"|"secrets", "removed": …}
-- or {"scheduled": true, "pg_cron": …, "job": …, "already_scheduled": …}. Called by this
-- migration, by the kick when it finds something gone, and by operators (postgres or
-- service_role) after enabling pg_net or storing the secrets: docs/operations.md#the-workers-kick.
-- Security definer so the job belongs to postgres whoever calls it (pg_cron keys jobs by name and
-- user: a service_role call must not make a second job).
create or replace function memory_private.register_worker_kick()
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_missing   text := memory_private.worker_kick_missing();
  v_before    boolean := false;
  v_schedules jsonb;
begin
  if to_regclass('cron.job') is not null then
    execute 'select exists (select from cron.job where jobname = $1 and database = current_database())'
       into v_before using 'devai-memory-worker';
  end if;

  if v_missing is not null then
    delete from public.memory_maintenance_schedules where job_name = 'devai-memory-worker';
    if v_before then
      perform memory_private.register_maintenance_schedules();
    end if;
    raise notice 'the worker kick cannot run here (% missing): devai-memory-worker is %; jobs are drained after each enqueue. Enable pg_net and store project_url and secret_key in Vault, then run select memory_private.register_worker_kick();',
      case v_missing when 'pg_net' then 'pg_net' when 'vault' then 'Vault' else 'the Vault secrets' end,
      case when v_before then 'unscheduled' else 'not scheduled' end;
    return jsonb_build_object('scheduled', false, 'missing', v_missing, 'removed', v_before);
  end if;

  insert into public.memory_maintenance_schedules (job_name, schedule, command, description)
  values ('devai-memory-worker', '5 seconds', 'select memory_private.kick_memory_worker()',
          'Calls the memory-worker edge function through pg_net when jobs are waiting (hosted Supabase).')
  on conflict (job_name) do update
    set schedule = excluded.schedule, command = excluded.command, description = excluded.description;
  v_schedules := memory_private.register_maintenance_schedules();

  if not coalesce((v_schedules ->> 'pg_cron')::boolean, false) then
    raise notice 'pg_cron cannot be used here: memory-worker is not scheduled (call select memory_private.kick_memory_worker(); on a timer)';
    return jsonb_build_object('scheduled', false, 'pg_cron', false, 'reason', v_schedules ->> 'reason');
  end if;
  if v_before then
    raise notice 'memory-worker kick already scheduled (job devai-memory-worker, every 5 seconds): nothing changed';
  else
    raise notice 'memory-worker kick scheduled: job devai-memory-worker calls memory_private.kick_memory_worker() every 5 seconds';
  end if;
  return jsonb_build_object('scheduled', true, 'pg_cron', true, 'job', 'devai-memory-worker',
                            'already_scheduled', v_before);
end;
$$;
revoke all on function memory_private.register_worker_kick() from public, anon, authenticated;
grant execute on function memory_private.register_worker_kick() to service_role;

-- pg_cron's run records of a job that is gone: prune_cron_history found our jobs' records through
-- cron.job, so those of an unscheduled job (the kick above, a renamed schedule) stayed for ever,
-- up to 7 days of a 5-second job: 120,960 rows. Now it also deletes this database's records whose
-- job no longer exists and whose command calls memory_private (every devai- job's does; other
-- jobs' records are still left alone), after the same cron_history_keep_days.
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
     where d.end_time < $1
       and (exists (select from cron.job j
                     where j.jobid = d.jobid and j.jobname like 'devai-%' and j.database = current_database())
            or (not exists (select from cron.job j where j.jobid = d.jobid)
                and d.database = current_database()
                and d.command like 'select memory\_private.%'))
  $sql$ using p_now - v_keep;
  get diagnostics v_deleted = row_count;
  return jsonb_build_object('pg_cron', true, 'deleted', v_deleted);
end;
$$;
revoke all on function memory_private.prune_cron_history(timestamptz) from public;

select memory_private.register_worker_kick();
