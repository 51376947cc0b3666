-- A job the drain's deadline cut after progress goes back in line behind the queue's head, not in
-- its old place (docs/operations.md#job-queue).
--
-- hand_back_cut_job (20261201300000) queued the job again keeping its fair_key, the key it got when
-- it was first queued: the smallest in the queue, so the next claim took it again, before every
-- job queued while it ran. A job needing several drain windows (a huge session's extraction, a
-- dedup job of many model decisions) had the worker to itself until it was done: with one drain at
-- a time (the local server's worker), another tenant's job queued during the first window of a
-- six-window dedup job was claimed after all six (claim order A A A A A A B). A window is the
-- drain's whole budget (100 s by default), more than a turn. Now the job is keyed as its owner's
-- next turn: its old key plus job_fair_step_seconds, and at least just after the head (the
-- smallest key of the runnable queued jobs, or now() when that is later or nothing waits), so the
-- jobs whose turn it is (another tenant's, its owner's next) come first; the order is A B A A A A A.
-- Its attempt is still given back, its progress kept. The head is read by one function now
-- (job_queue_head), for this and for assign_job_fair_key.

-- The queue's head: the smallest fair_key of the runnable queued jobs (memory_jobs_fair_claimable,
-- as the claim reads it: jobs backing off are skipped in the index), or now() when that is later or
-- nothing waits. Where a job runnable now starts in the fair order. Called by assign_job_fair_key
-- (a job queued) and hand_back_cut_job (a job cut after progress); one reading of the head for both.
create or replace function memory_private.job_queue_head()
returns timestamptz
language sql
stable
set search_path = ''
as $$
  select least(now(), coalesce((select j.fair_key
                                  from public.memory_jobs j
                                 where j.status = 'queued' and j.run_after <= now()
                                 order by j.fair_key
                                 limit 1), now()))
$$;
revoke all on function memory_private.job_queue_head() from public;
grant execute on function memory_private.job_queue_head() to service_role;

-- BEFORE INSERT on memory_jobs: the new job's fair_key (20261128960000, unchanged but for reading the
-- head through job_queue_head). Security definer: it reads the queue whoever inserts.
create or replace function memory_private.assign_job_fair_key()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
declare
  v_last timestamptz;
begin
  select j.fair_key into v_last
    from public.memory_jobs j
   where j.owner_id = new.owner_id and j.status = 'queued' and j.run_after <= now()
   order by j.fair_key desc
   limit 1;
  new.fair_key := greatest(case when new.run_after > now() then new.run_after else memory_private.job_queue_head() end,
                           v_last + make_interval(secs => public.memory_setting('job_fair_step_seconds')::double precision));
  return new;
end;
$$;
revoke all on function memory_private.assign_job_fair_key() from public;

-- p_result_at_claim: the job's result as the worker claimed it. Returns 'queued', 'unchanged' (no
-- progress: the caller fails the job as before) or null (the worker no longer holds it). Called by
-- the worker (jobs.ts handBackCutJob).
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
  update public.memory_jobs j
     set status = 'queued',
         attempts = greatest(j.attempts - 1, 0),
         last_error = left('cut by the drain''s deadline after progress (attempt given back): '
                           || coalesce(p_error, 'unknown error'), 4000),
         run_after = now(),
         fair_key = greatest(j.fair_key + make_interval(secs => public.memory_setting('job_fair_step_seconds')::double precision),
                             memory_private.job_queue_head() + interval '1 microsecond'),
         locked_until = null,
         locked_by = null,
         updated_at = now()
   where j.id = p_id;
  return 'queued';
end;
$$;
revoke all on function memory_private.hand_back_cut_job(uuid, text, jsonb, text) from public;
grant execute on function memory_private.hand_back_cut_job(uuid, text, jsonb, text) to service_role;
