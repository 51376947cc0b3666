-- A job whose pass over its transcript waited for its tenant's heavy turn until the drain's cut goes
-- back in line with its attempt given back (docs/operations.md#heavy-requests-take-turns).
--
-- The queue worker's passes over a whole queued transcript (extraction's rules and chunking, a
-- session consolidation's) take the process's heavy turns, as memory-extract's and memory-compact's
-- do (_shared/heavy-turns.ts). A pass waits for its turn holding its job's lease, and at most until
-- its drain's cut: then it has run nothing and asked nothing. Handed back as a cut job without
-- progress (fail_job), it spent an attempt on a wait for others' work, and a job claimed by five
-- drains of a process busy with heavy requests died. Now it is queued again at once, its attempt
-- given back and its result kept, and keyed as its owner's next turn behind the queue's head, as
-- hand_back_cut_job queues a job cut after progress (20261203600100): one function does that for both.

-- Queues the running job again at once, its attempt given back and its result kept, keyed as its
-- owner's next turn: its old key and a step (job_fair_step_seconds), and at least just after the
-- queue's head, so the jobs whose turn it is come first. `p_last_error` says why. The callers check
-- that their worker holds the job and lock its row. Called by hand_back_cut_job and hand_back_unrun_job.
create or replace function memory_private.queue_job_again(p_id uuid, p_last_error text)
returns void
language sql
set search_path = ''
as $$
  update public.memory_jobs j
     set status = 'queued',
         attempts = greatest(j.attempts - 1, 0),
         last_error = left(p_last_error, 4000),
         run_after = now(),
         fair_key = greatest(j.fair_key + make_interval(secs => public.memory_setting('job_fair_step_seconds')::double precision),
                             memory_private.job_queue_head() + interval '1 microsecond'),
         locked_until = null,
         locked_by = null,
         updated_at = now()
   where j.id = p_id
$$;
revoke all on function memory_private.queue_job_again(uuid, text) from public;
grant execute on function memory_private.queue_job_again(uuid, text) to service_role;

-- 20261203600100's, its update now queue_job_again's. p_result_at_claim: the job's result as the
-- worker claimed it. Returns 'queued', 'unchanged' (no progress: the caller fails the job as
-- before) or null (the worker no longer holds it). Called by the worker (jobs.ts handBackCutJob).
create or replace function memory_private.hand_back_cut_job(p_id uuid, p_worker text, p_result_at_claim jsonb, p_error text)
returns text
language plpgsql
set search_path = ''
as $$
declare
  v_result jsonb;
begin
  select j.result into v_result
    from public.memory_jobs j
   where j.id = p_id and j.status = 'running' and j.locked_by = p_worker
     for update;
  if not found then
    return null;
  end if;
  if memory_private.job_progress(v_result) is not distinct from memory_private.job_progress(p_result_at_claim) then
    return 'unchanged';
  end if;
  perform memory_private.queue_job_again(p_id, 'cut by the drain''s deadline after progress (attempt given back): '
                                               || coalesce(p_error, 'unknown error'));
  return 'queued';
end;
$$;
revoke all on function memory_private.hand_back_cut_job(uuid, text, jsonb, text) from public;
grant execute on function memory_private.hand_back_cut_job(uuid, text, jsonb, text) to service_role;

-- A job whose pass waited for its heavy turn until the cut, having run nothing: queued again
-- whatever its progress. Returns 'queued', or null when the worker no longer holds it. Called by the
-- worker (jobs.ts handBackCutJob with ranNothing, for a TurnCutError).
create or replace function memory_private.hand_back_unrun_job(p_id uuid, p_worker text, p_error text)
returns text
language plpgsql
set search_path = ''
as $$
begin
  perform 1
     from public.memory_jobs j
    where j.id = p_id and j.status = 'running' and j.locked_by = p_worker
      for update;
  if not found then
    return null;
  end if;
  perform memory_private.queue_job_again(p_id, 'waited for a heavy turn until the drain''s deadline, nothing run '
                                               || '(attempt given back): ' || coalesce(p_error, 'unknown error'));
  return 'queued';
end;
$$;
revoke all on function memory_private.hand_back_unrun_job(uuid, text, text) from public;
grant execute on function memory_private.hand_back_unrun_job(uuid, text, text) to service_role;
