-- Short job leases kept alive by a heartbeat, and a job's partial result.
--
-- A worker used to lease a job for 5 minutes, so a worker that died mid-job (a killed server, an
-- edge function past its wall-clock limit) held its jobs for up to 5 minutes. Workers now lease a
-- job for 20 s and renew the lease every few seconds while they work on it: a dead worker's jobs
-- are claimable again within 20 s (claim_jobs takes expired leases), a slow live one keeps them.
-- Nothing is applied twice: a job's effects still commit with its completion, which needs the
-- lease (complete_job).
--
-- An extract job has two parts: the rule-based candidates, queued first and never lost, and the
-- model's, which may fail and is retried alone. record_job_progress keeps what the parts did in
-- the job's result while it is retried, so its status (and a dead job's) says which part failed.

-- Extends p_worker's lease on a running job to now() + p_lease. False when the worker no longer
-- holds it (the lease expired and another worker claimed the job, or it ended): the worker's
-- writes will then be rolled back at completion. Called by drainQueue's heartbeat (memory-worker).
create or replace function memory_private.renew_job_lease(p_id uuid, p_worker text, p_lease interval)
returns boolean
language sql
volatile
set search_path = ''
as $$
  with renewed as (
    update public.memory_jobs
       set locked_until = now() + p_lease, updated_at = now()
     where id = p_id and status = 'running' and locked_by = p_worker
    returning 1)
  select exists (select from renewed)
$$;
revoke all on function memory_private.renew_job_lease(uuid, text, interval) from public;
grant execute on function memory_private.renew_job_lease(uuid, text, interval) to service_role;

-- Merges p_progress into the result of a running job p_worker holds (top-level keys replace
-- earlier ones), and returns whether it did. The result outlives retries and a dead end, so
-- GET memory-extract?job_id= shows which part succeeded and which failed. Called by the worker.
create or replace function memory_private.record_job_progress(p_id uuid, p_worker text, p_progress jsonb)
returns boolean
language sql
volatile
set search_path = ''
as $$
  with recorded as (
    update public.memory_jobs
       set result = coalesce(result, '{}'::jsonb) || p_progress, updated_at = now()
     where id = p_id and status = 'running' and locked_by = p_worker
       and jsonb_typeof(p_progress) = 'object'
    returning 1)
  select exists (select from recorded)
$$;
revoke all on function memory_private.record_job_progress(uuid, text, jsonb) from public;
grant execute on function memory_private.record_job_progress(uuid, text, jsonb) to service_role;
