-- The worker's 5-second kick (pg_cron calls the memory-worker edge function through pg_net) made
-- by one function an operator can call again: the job-queue and worker-keys migrations built it
-- only where pg_net existed when they ran, and a later `db push` applies no migration again, so a
-- project that enabled pg_net after its first push had no kick. Now: enable pg_net, then
-- `select memory_private.register_worker_kick();` (README, "Deploying to your Supabase project").

-- Creates memory_private.kick_memory_worker() and its pg_cron job devai-memory-worker (a row of
-- public.memory_maintenance_schedules, registered like every other job) where pg_net is installed;
-- elsewhere it does nothing but say so. Idempotent: a second call leaves the one job as it was.
-- Returns what it did: {"pg_net": false} or {"pg_net": true, "pg_cron": …, "job": …,
-- "already_scheduled": …}. Called by this migration and by operators (postgres or service_role)
-- after enabling pg_net. Security definer so the job belongs to postgres whoever calls it
-- (pg_cron keys jobs by name and user: a service_role call must not make a second job).
create or replace function memory_private.register_worker_kick()
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_before    boolean := false;
  v_schedules jsonb;
begin
  if not exists (select from pg_catalog.pg_extension where extname = 'pg_net') then
    raise notice 'pg_net is not installed: memory-worker is not scheduled by pg_cron (enable pg_net, then run select memory_private.register_worker_kick(); until then jobs are drained after each enqueue)';
    return jsonb_build_object('pg_net', false);
  end if;

  if to_regclass('cron.job') is not null then
    execute 'select exists (select from cron.job where jobname = $1 and database = current_database())'
       into v_before using 'devai-memory-worker';
  end if;

  -- Created dynamically: its body names net.* and vault.*, which exist only where pg_net does. The
  -- key is Vault's 'secret_key' (a new sb_secret_ key) when there is one, else 'service_role_key',
  -- sent in the header its kind needs (memory_private.worker_request_headers).
  execute $fn$
    create or replace function memory_private.kick_memory_worker()
    returns void
    language plpgsql
    security definer
    set search_path = ''
    as $body$
    declare
      v_url text;
      v_key text;
    begin
      if to_regclass('vault.decrypted_secrets') is null then
        return;
      end if;
      execute 'select (select decrypted_secret from vault.decrypted_secrets where name = ''project_url''),
                      coalesce((select decrypted_secret from vault.decrypted_secrets where name = ''secret_key''),
                               (select decrypted_secret from vault.decrypted_secrets where name = ''service_role_key''))'
         into v_url, v_key;
      if v_url is null or v_key is null then
        return;
      end if;
      -- Nothing queued or expired: no HTTP call at all.
      if not exists (select from public.memory_jobs
                      where (status = 'queued' and run_after <= now())
                         or (status = 'running' and locked_until < now())) then
        return;
      end if;
      perform net.http_post(
        url := rtrim(v_url, '/') || '/functions/v1/memory-worker',
        headers := memory_private.worker_request_headers(v_key),
        body := '{}'::jsonb,
        timeout_milliseconds := 4000);
    end;
    $body$
  $fn$;
  execute 'revoke all on function memory_private.kick_memory_worker() from public, anon, authenticated';

  insert into public.memory_maintenance_schedules (job_name, schedule, command, description)
  values ('devai-memory-worker', '5 seconds', 'select memory_private.kick_memory_worker()',
          'Calls the memory-worker edge function through pg_net when jobs are waiting (hosted Supabase).')
  on conflict (job_name) do update
    set schedule = excluded.schedule, command = excluded.command, description = excluded.description;
  v_schedules := memory_private.register_maintenance_schedules();

  if not coalesce((v_schedules ->> 'pg_cron')::boolean, false) then
    raise notice 'pg_cron cannot be used here: memory-worker is not scheduled (call select memory_private.kick_memory_worker(); on a timer)';
    return jsonb_build_object('pg_net', true, 'pg_cron', false, 'reason', v_schedules ->> 'reason');
  end if;
  if v_before then
    raise notice 'memory-worker kick already scheduled (job devai-memory-worker, every 5 seconds): nothing changed';
  else
    raise notice 'memory-worker kick scheduled: job devai-memory-worker calls memory_private.kick_memory_worker() every 5 seconds';
  end if;
  return jsonb_build_object('pg_net', true, 'pg_cron', true, 'job', 'devai-memory-worker',
                            'already_scheduled', v_before);
end;
$$;
revoke all on function memory_private.register_worker_kick() from public, anon, authenticated;
grant execute on function memory_private.register_worker_kick() to service_role;

select memory_private.register_worker_kick();
