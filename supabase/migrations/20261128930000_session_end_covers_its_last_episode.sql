-- A session's ended_at is never before its last episode.
--
-- end_memory_sessions set ended_at to p_now, the caller's transaction start (now()). An end whose
-- transaction began before a batch of the session (or that waited for the session's row while a
-- batch held it) ended the session at an instant before the episodes that batch committed: an
-- explicit end, or a new session of the thread ending the earlier one, left
-- ended_at < last_event_at. The same with a batch's `at` ahead of the server's clock (up to five
-- minutes of skew are accepted). Now ended_at = greatest(p_now, last_event_at). The UPDATE takes
-- the session's row lock; one that waited for a batch re-reads the row the batch committed
-- (READ COMMITTED re-evaluates the SET on the newest row version), so the end covers every episode
-- stored before it, by the lock, not by timing. A batch that comes after the end finds ended_at set
-- under the same lock and is refused (409 session_ended, docs/graph.md#episodes).

-- Ends the sessions whose row ids are given (p_reason: 'explicit' | 'new_session' | 'idle') at
-- p_now, or at the session's last event when that is later, and queues each one's consolidation
-- job: kind 'consolidate', idempotency key 'consolidate:<session_id>', so a session is consolidated
-- by one job, once, however often or by whichever path it is ended. A session that has ended
-- already keeps its end and its job. Security invoker: as a tenant (the memory API) RLS limits it
-- to the tenant's sessions and jobs; as the job owner (pg_cron's idle sweep) it covers every
-- tenant. Returns, per session found: its row id, session_id, the consolidation job's id, and
-- whether this call ended it. As in 20261124300400, but for ended_at.
create or replace function public.end_memory_sessions(p_ids uuid[], p_reason text, p_now timestamptz default now())
returns table (id uuid, session_id text, job_id uuid, ended_now boolean)
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
  v_ended uuid[];
begin
  if p_reason is null or p_reason not in ('explicit', 'new_session', 'idle') then
    raise exception 'p_reason must be explicit, new_session or idle, got %', p_reason using errcode = '22023';
  end if;
  with ended as (
    update public.memory_sessions s
       set ended_at = greatest(p_now, s.last_event_at), end_reason = p_reason
     where s.id = any (p_ids) and s.ended_at is null
    returning s.id
  )
  select coalesce(array_agg(e.id), '{}') into v_ended from ended e;

  insert into public.memory_jobs (owner_id, kind, payload, idempotency_key)
  select s.owner_id, 'consolidate', jsonb_build_object('session_id', s.session_id), 'consolidate:' || s.session_id
    from public.memory_sessions s
   where s.id = any (p_ids) and s.ended_at is not null and s.consolidation_job_id is null
   order by s.id
  on conflict (owner_id, kind, idempotency_key) do nothing;

  update public.memory_sessions s
     set consolidation_job_id = j.id
    from public.memory_jobs j
   where s.id = any (p_ids) and s.ended_at is not null and s.consolidation_job_id is null
     and j.owner_id = s.owner_id and j.kind = 'consolidate' and j.idempotency_key = 'consolidate:' || s.session_id;

  return query
  select s.id, s.session_id, s.consolidation_job_id, s.id = any (v_ended)
    from public.memory_sessions s
   where s.id = any (p_ids)
   order by s.id;
end;
$$;
revoke all on function public.end_memory_sessions(uuid[], text, timestamptz) from public, anon;
grant execute on function public.end_memory_sessions(uuid[], text, timestamptz) to authenticated, service_role;
