-- A job the drain's deadline cut after it recorded progress is handed back with its attempt given
-- back (docs/operations.md#a-drains-deadline).
--
-- On hosted Supabase a drain has a wall-clock budget (WORKER_DRAIN_BUDGET_MS, 120 s): at its cut the
-- running job's model requests are aborted, and when the provider answers a probe the attempt
-- counted, as a timeout's does. A job that needs more than five drain windows with a provider that
-- answers (a dedup job of many candidates at several seconds a decision; a long session's extract
-- job) recorded its progress in each window (each candidate applied, each chunk answered) and still
-- died at its fifth cut, its remaining candidates or chunks never done
-- (tests/drain_cut_progress.test.ts: six candidates, one decided a drain, the job dead at the fifth
-- drain with one candidate lost). Now a cut job whose model work advanced since it was claimed is
-- queued again at once with its attempt given back: its next window goes on from there.
-- Bounded: a job hands itself back only for progress, which every kind records monotonically and
-- finitely (job_progress below), so it cannot go on forever; a cut without progress counts, as
-- before (a message whose requests always hang still dies after its five attempts).

-- What of a job's model work its result records (recordJobProgress): the candidates a dedup pass
-- applied (dedup.done: dedup and consolidate jobs), the chunks an extract job's model answered
-- (model.chunks.proposed), a consolidation's proposal saved. Not the rest of the result: an
-- attempt's failure record (model.status, error, attempt) or an outage's (provider_unavailable)
-- changes without progress, and an extract job's rules part is stored at its first claim, before
-- any model work.
create function memory_private.job_progress(p_result jsonb)
returns jsonb
language sql
immutable
set search_path = ''
as $$
  select jsonb_build_array(
    p_result #> '{dedup,done}',
    case when jsonb_typeof(p_result #> '{model,chunks,proposed}') = 'array'
         then jsonb_array_length(p_result #> '{model,chunks,proposed}') end,
    coalesce(jsonb_typeof(p_result) = 'object' and p_result ? 'consolidation_proposal', false))
$$;
revoke all on function memory_private.job_progress(jsonb) from public;
grant execute on function memory_private.job_progress(jsonb) to service_role;

-- p_result_at_claim: the job's result as the worker claimed it. Returns 'queued', 'unchanged' (no
-- progress: the caller fails the job as before) or null (the worker no longer holds it).
create function memory_private.hand_back_cut_job(p_id uuid, p_worker text, p_result_at_claim jsonb, p_error text)
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
         locked_until = null,
         locked_by = null,
         updated_at = now()
   where j.id = p_id;
  return 'queued';
end;
$$;
revoke all on function memory_private.hand_back_cut_job(uuid, text, jsonb, text) from public;
grant execute on function memory_private.hand_back_cut_job(uuid, text, jsonb, text) to service_role;
