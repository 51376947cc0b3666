-- The per-session usage records (public.memory_usage_sessions, 20261128870000) lived as long as
-- their memory: one row per session and memory ever reported, kept for years in a busy tenant.
-- They only serve to deduplicate a session's resends, and a session's other records (prefetch,
-- injections) go after context_session_retention_hours (48): the nightly prune now deletes the
-- usage records first reported before that too. A resend coming later than that counts again, as
-- a report of a new session would. The counters, strengths and totals they moved stay.
create index memory_usage_sessions_reported_at on public.memory_usage_sessions (reported_at);

-- As in 20261124600100, with the usage records.
create or replace function memory_private.prune_context_sessions(p_now timestamptz default now())
returns jsonb
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
  v_cutoff     timestamptz := p_now - make_interval(secs => public.memory_setting('context_session_retention_hours')::double precision * 3600);
  v_prefetch   bigint;
  v_injections bigint;
  v_usage      bigint;
begin
  delete from public.context_prefetch where computed_at < v_cutoff;
  get diagnostics v_prefetch = row_count;
  delete from public.context_injections where injected_at < v_cutoff;
  get diagnostics v_injections = row_count;
  delete from public.memory_usage_sessions where reported_at < v_cutoff;
  get diagnostics v_usage = row_count;
  return jsonb_build_object('prefetch', v_prefetch, 'injections', v_injections, 'usage_sessions', v_usage);
end;
$$;
revoke all on function memory_private.prune_context_sessions(timestamptz) from public;

insert into public.memory_maintenance_schedules (job_name, schedule, command, description) values
  ('devai-context-prune', '45 6 * * *', 'select memory_private.prune_context_sessions()',
   'Deletes context prefetch, injection and per-session usage records of sessions older than context_session_retention_hours.')
on conflict (job_name) do update
  set schedule = excluded.schedule, command = excluded.command, description = excluded.description;

select memory_private.register_maintenance_schedules();
