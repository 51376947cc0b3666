-- Durable job queue plumbing for memory_jobs (extraction and dedup work).
--
-- Enqueueing is a plain insert by the tenant inside its own request transaction (RLS lets an
-- authenticated owner insert queued jobs): `insert ... on conflict (owner_id, kind,
-- idempotency_key) do nothing`, so the same session or compaction chunk is never queued twice.
-- Workers connect with a privileged role (postgres / service_role), claim with FOR UPDATE SKIP
-- LOCKED, then process each job inside a transaction that runs as the job's tenant.
-- Lifecycle: queued → running (lease) → done | queued again with backoff | dead (with last_error).

-- Claims up to p_limit jobs for worker p_worker, leasing them for p_lease. Takes queued jobs whose
-- run_after has come, and also running jobs whose lease expired (their worker crashed or hung), so
-- recovery does not depend on a cron sweeper. A job whose lease expired on its last allowed
-- attempt is parked as dead instead of being run again. p_kinds / p_owner narrow what is claimed
-- (a drain for one tenant, e.g. tests). Called by memory-worker (drainQueue).
create or replace function memory_private.claim_jobs(
  p_worker text,
  p_limit integer default 1,
  p_lease interval default interval '5 minutes',
  p_kinds text[] default null,
  p_owner uuid default null
)
returns setof public.memory_jobs
language plpgsql
volatile
set search_path = ''
as $$
begin
  if p_worker is null or btrim(p_worker) = '' then
    raise exception 'worker id required' using errcode = '22023';
  end if;
  if p_limit is null or p_limit < 1 or p_limit > 100 then
    raise exception 'p_limit must be between 1 and 100, got %', p_limit using errcode = '22023';
  end if;

  -- Expired leases with no attempt left: dead, with the reason (they would exceed max_attempts).
  update public.memory_jobs j
     set status = 'dead',
         last_error = coalesce(j.last_error || E'\n', '') || format('lease of worker %s expired on attempt %s/%s', j.locked_by, j.attempts, j.max_attempts),
         locked_until = null,
         locked_by = null,
         finished_at = now(),
         updated_at = now()
   where j.id in (
     select s.id from public.memory_jobs s
      where s.status = 'running' and s.locked_until < now() and s.attempts >= s.max_attempts
      for update skip locked);

  return query
  with picked as (
    select j.id
      from public.memory_jobs j
     where ((j.status = 'queued' and j.run_after <= now())
            or (j.status = 'running' and j.locked_until < now()))
       and (p_kinds is null or j.kind = any (p_kinds))
       and (p_owner is null or j.owner_id = p_owner)
     order by j.run_after, j.created_at
     limit p_limit
     for update skip locked
  )
  update public.memory_jobs j
     set status = 'running',
         attempts = j.attempts + 1,
         locked_until = now() + p_lease,
         locked_by = p_worker,
         updated_at = now()
    from picked
   where j.id = picked.id
  returning j.*;
end;
$$;
revoke all on function memory_private.claim_jobs(text, integer, interval, text[], uuid) from public;
grant execute on function memory_private.claim_jobs(text, integer, interval, text[], uuid) to service_role;

-- Marks a job done with its result, only if p_worker still holds it. Returns false when the lease
-- was lost (another worker re-claimed it after expiry): the caller must then roll back its own
-- writes, which is why workers call this inside the transaction that applied the job's effects.
-- Called by memory-worker.
create or replace function memory_private.complete_job(p_id uuid, p_worker text, p_result jsonb default null)
returns boolean
language sql
volatile
set search_path = ''
as $$
  with done as (
    update public.memory_jobs
       set status = 'done', result = p_result, finished_at = now(), locked_until = null, updated_at = now()
     where id = p_id and status = 'running' and locked_by = p_worker
    returning 1)
  select exists (select from done)
$$;
revoke all on function memory_private.complete_job(uuid, text, jsonb) from public;
grant execute on function memory_private.complete_job(uuid, text, jsonb) to service_role;

-- Records a failed attempt by p_worker: back to queued with exponential backoff
-- (p_backoff_base * 2^(attempts-1), capped at p_backoff_max), or dead with the error once
-- attempts reach max_attempts or the failure is permanent (p_retryable = false).
-- Returns the new status, or null when p_worker no longer holds the job. Called by memory-worker.
create or replace function memory_private.fail_job(
  p_id uuid,
  p_worker text,
  p_error text,
  p_retryable boolean default true,
  p_backoff_base interval default interval '10 seconds',
  p_backoff_max interval default interval '1 hour'
)
returns text
language sql
volatile
set search_path = ''
as $$
  update public.memory_jobs j
     set status = case when not p_retryable or j.attempts >= j.max_attempts then 'dead' else 'queued' end,
         last_error = left(coalesce(p_error, 'unknown error'), 4000),
         run_after = case when not p_retryable or j.attempts >= j.max_attempts then j.run_after
                          else now() + least(p_backoff_base * power(2, greatest(j.attempts - 1, 0))::double precision, p_backoff_max) end,
         finished_at = case when not p_retryable or j.attempts >= j.max_attempts then now() end,
         locked_until = null,
         locked_by = null,
         updated_at = now()
   where j.id = p_id and j.status = 'running' and j.locked_by = p_worker
  returning j.status
$$;
revoke all on function memory_private.fail_job(uuid, text, text, boolean, interval, interval) from public;
grant execute on function memory_private.fail_job(uuid, text, text, boolean, interval, interval) to service_role;

-- Production trigger of the worker: pg_cron calls the memory-worker edge function through pg_net
-- every 5 seconds. Only where both extensions are installed (hosted Supabase with pg_net enabled);
-- elsewhere the migration skips this with a NOTICE and the local server's timer (or the kicks
-- after each enqueue) drains the queue. The function URL and service key are read at call time
-- from Supabase Vault secrets 'project_url' and 'service_role_key' (Supabase's documented pattern
-- for scheduling edge functions), so no secret is stored in the migration; without them the call
-- is skipped quietly.
do $outer$
begin
  if not exists (select from pg_extension where extname = 'pg_net')
     or not exists (select from pg_extension where extname = 'pg_cron') then
    raise notice 'pg_net or pg_cron not installed: memory-worker is not scheduled by pg_cron (run it on a timer or rely on enqueue kicks)';
    return;
  end if;

  -- Created dynamically: its body names net.* and vault.*, which exist only here.
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
                      (select decrypted_secret from vault.decrypted_secrets where name = ''service_role_key'')'
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
        headers := jsonb_build_object('content-type', 'application/json', 'authorization', 'Bearer ' || v_key),
        body := '{}'::jsonb,
        timeout_milliseconds := 4000);
    end;
    $body$
  $fn$;
  execute 'revoke all on function memory_private.kick_memory_worker() from public';

  -- Registered through the schedules table like every other job (one source of truth), so
  -- memory_private.register_maintenance_schedules(), which removes devai- jobs missing from the
  -- table, keeps it when re-run.
  insert into public.memory_maintenance_schedules (job_name, schedule, command, description)
  values ('devai-memory-worker', '5 seconds', 'select memory_private.kick_memory_worker()',
          'Calls the memory-worker edge function through pg_net when jobs are waiting (hosted Supabase).')
  on conflict (job_name) do update
    set schedule = excluded.schedule, command = excluded.command, description = excluded.description;
  perform memory_private.register_maintenance_schedules();
end;
$outer$;
