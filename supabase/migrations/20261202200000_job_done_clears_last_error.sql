-- A job that completes clears its last_error (docs/operations.md#job-queue).
--
-- Before, complete_job left the error of an earlier attempt on a job that then succeeded: a job
-- failed once ("boom") and done at its retry answered `GET memory-extract?job_id=` with
-- status done and last_error "boom", and one postponed through a provider outage kept
-- "provider unavailable: …" once done, though its result.provider_unavailable is dropped by the same
-- completion (20261130100000). Nothing reads the error of a done job on purpose: the drain's report
-- counts its own outcomes, the docs' queries look for the errors of queued and dead jobs. What the
-- earlier attempts cost stays in `attempts` (tests/jobs.test.ts).

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
       set status = 'done', result = p_result, last_error = null, finished_at = now(), locked_until = null,
           updated_at = now()
     where id = p_id and status = 'running' and locked_by = p_worker
    returning 1)
  select exists (select from done)
$$;
revoke all on function memory_private.complete_job(uuid, text, jsonb) from public;
grant execute on function memory_private.complete_job(uuid, text, jsonb) to service_role;
