-- A job the model provider could not serve (down, overloaded, or refusing the service's key) is
-- postponed, not failed: the attempt is given back and the job waits, queued, with a capped
-- exponential backoff of its own, until the provider answers again.
--
-- Before, such a failure counted as an attempt (fail_job): five of them killed the job, and a 401
-- or 403 killed it at once. A dead extract job's messages were queued again only by the session's
-- next POST, and given up after three jobs holding them died (20261128830000): an outage over three
-- POSTs, or a bad key, gave a session's messages up, and a session that never POSTed again kept them
-- unextracted. A dead dedup job lost its candidates.
--
-- The worker (drain-queue.ts, llm-outage.ts) calls postpone_job only when the provider failed the
-- job's request as an outage fails (a timeout, a reset, 408, 409, 429, 5xx, 401, 403, 404) AND a
-- request holding nothing of the job failed so too: a failure about what the job holds (a provider
-- that answers everything else) still counts toward the job's death, and an extract part's
-- giving-up, as before. docs/operations.md#job-queue.

-- postpone_job: the running job, still held by p_worker, is queued again with its attempt given
-- back (claim_jobs counted it). result.provider_unavailable says since when, how many times in a
-- row, and until when; the wait doubles each time from p_backoff_base up to p_backoff_max.
-- complete_job replaces the result, so a job that completes drops it. Returns the job's status
-- ('queued'), or null when the worker no longer held it.
create function memory_private.postpone_job(p_id uuid, p_worker text, p_error text,
                                            p_backoff_base interval default '30 seconds',
                                            p_backoff_max interval default '15 minutes')
returns text
language plpgsql
set search_path = ''
set timezone to 'UTC'  -- result.provider_unavailable's times read in UTC whatever the session's zone (20261129100000)
as $$
declare
  v_result jsonb;
  v_attempts integer;
  v_seen jsonb;
  v_times integer;
  v_wait interval;
begin
  select case when jsonb_typeof(j.result) = 'object' then j.result else '{}'::jsonb end, j.attempts
    into v_result, v_attempts
    from public.memory_jobs j
   where j.id = p_id and j.status = 'running' and j.locked_by = p_worker
     for update;
  if not found then
    return null;
  end if;
  v_seen := v_result -> 'provider_unavailable';
  -- "In a row": the last postponement gave the attempts back to what they are again now, less this
  -- claim's. A failure counted in between (fail_job) leaves one more: the count and `since` start anew.
  if (v_seen ->> 'attempts')::integer is distinct from v_attempts - 1 then
    v_seen := null;
  end if;
  v_times := coalesce((v_seen ->> 'times')::integer, 0) + 1;
  v_wait := least(p_backoff_base * power(2, least(v_times - 1, 30))::double precision, p_backoff_max);
  update public.memory_jobs j
     set status = 'queued',
         attempts = greatest(j.attempts - 1, 0),
         last_error = left('provider unavailable: ' || coalesce(p_error, 'unknown error'), 4000),
         result = v_result || jsonb_build_object('provider_unavailable', jsonb_build_object(
                    'since', coalesce(v_seen -> 'since', to_jsonb(now())),
                    'times', v_times,
                    'attempts', greatest(v_attempts - 1, 0),
                    'next_try_at', now() + v_wait,
                    'error', left(coalesce(p_error, 'unknown error'), 500))),
         run_after = now() + v_wait,
         locked_until = null,
         locked_by = null,
         updated_at = now()
   where j.id = p_id;
  return 'queued';
end;
$$;
revoke all on function memory_private.postpone_job(uuid, text, text, interval, interval) from public;
grant execute on function memory_private.postpone_job(uuid, text, text, interval, interval) to service_role;
