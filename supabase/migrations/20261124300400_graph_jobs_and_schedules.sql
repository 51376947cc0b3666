-- Graph memory, part 4: the work the graph adds to the queue and the nightly schedule.
--
-- 1. memory_jobs kinds embed (a batch of episodes for a remote embedder), consolidate (one per
--    session), enrich and causal (nightly graph maintenance). This replaces memory_jobs_kind_check's
--    list of allowed values.
-- 2. Raw episodes do not decay (decay_page_range below); TTL and purge apply to them as to any
--    memory (they are stored with importance 2, below ttl_importance_below).
-- 3. public.end_memory_sessions: the one way a session ends (the API's explicit end, a new
--    session of the same thread, the nightly idle sweep) and its consolidation job is queued, once.
-- 4. Nightly: memory_private.end_idle_sessions (02:00 UTC) and
--    memory_private.enqueue_graph_maintenance (02:30 UTC); the worker runs the jobs. See
--    docs/graph.md#consolidation and docs/operations.md.

-- 1. Job kinds ------------------------------------------------------------------------------------

alter table public.memory_jobs drop constraint memory_jobs_kind_check;
alter table public.memory_jobs add constraint memory_jobs_kind_check check (
  kind in ('extract', 'dedup', 'embed', 'consolidate', 'enrich', 'causal'));

-- 2. Episodes do not decay -----------------------------------------------------------------------

-- Decays the active, valid memories stored in heap pages [p_first_page, p_first_page +
-- p_page_count) and invalidates those that fall below prune_threshold (DECAY history event).
-- Exempt: priority 'highest', pinned, raw episodes (source 'conversation': the record of what was
-- said does not fade; TTL and purge still apply to it), soft-deleted and already invalid rows. Rows whose strength
-- would not change are not written. Two UPDATEs over a TID range scan, the unit of batching:
--   1. rows that stay at or above the threshold: only strength changes. No trigger does anything
--      for such a change (the WHEN clauses of the audit and updated_at triggers are false, the
--      content trigger is for content only) and strength is in no index, so with the table's
--      free page room (fillfactor 50) it is a HOT update that writes no index entry.
--   2. rows that fall below the threshold: strength and is_valid = false, so the history records
--      DECAY (memory.event) by cron:decay (memory.actor); their change log ('deleted') is written
--      per tenant by log_changes_in_bulk.
-- Called by apply_page_ranges (for run_decay and run_decay_step). As in 20261123000700, plus the
-- episode exemption.
create or replace function memory_private.decay_page_range(
  p_now timestamptz,
  p_first_page bigint,
  p_page_count bigint
)
returns table (decayed bigint, invalidated bigint)
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
  v_base       double precision := public.memory_setting('decay_base')::double precision;
  v_prune      double precision := public.memory_setting('prune_threshold')::double precision;
  v_max_days   double precision := case when v_base >= 1 then 0 else floor(-300 / ln(v_base)) end;
  v_from       tid := format('(%s,0)', p_first_page)::tid;
  v_to         tid := format('(%s,0)', p_first_page + p_page_count)::tid;
  v_prev_event text := current_setting('memory.event', true);
  v_prev_actor text := current_setting('memory.actor', true);
  v_prev_log   text := current_setting('memory.change_log', true);
  v_ids        uuid[];
begin
  -- The expression below is public.memory_decayed_strength(base_strength, last_accessed_at,
  -- p_now, decay_base), written out so the planner evaluates it inline (a function with a SET
  -- clause is never inlined).

  -- 1. strength-only changes
  update public.devai_memories m
     set strength = m.base_strength * power(v_base, least(v_max_days,
           greatest(0::double precision, floor(date_part('epoch', p_now - m.last_accessed_at) / 86400))))
   where m.ctid >= v_from and m.ctid < v_to
     and m.is_valid
     and m.state = 'active'
     and m.priority <> 'highest'
     and not m.pinned
     and m.source is distinct from 'conversation'
     and m.base_strength * power(v_base, least(v_max_days,
           greatest(0::double precision, floor(date_part('epoch', p_now - m.last_accessed_at) / 86400)))) >= v_prune
     and m.strength is distinct from m.base_strength * power(v_base, least(v_max_days,
           greatest(0::double precision, floor(date_part('epoch', p_now - m.last_accessed_at) / 86400))));
  get diagnostics decayed = row_count;

  -- 2. invalidations, audited: a history row each (trigger), the change log per tenant (below)
  perform set_config('memory.event', 'DECAY', true);
  perform set_config('memory.actor', coalesce(nullif(v_prev_actor, ''), 'cron:decay'), true);
  perform set_config('memory.change_log', 'bulk', true);
  with changed as (
  update public.devai_memories m
     set strength = m.base_strength * power(v_base, least(v_max_days,
           greatest(0::double precision, floor(date_part('epoch', p_now - m.last_accessed_at) / 86400)))),
         is_valid = false
   where m.ctid >= v_from and m.ctid < v_to
     and m.is_valid
     and m.state = 'active'
     and m.priority <> 'highest'
     and not m.pinned
     and m.source is distinct from 'conversation'
     and m.base_strength * power(v_base, least(v_max_days,
           greatest(0::double precision, floor(date_part('epoch', p_now - m.last_accessed_at) / 86400)))) < v_prune
  returning m.id
  )
  select array_agg(c.id) into v_ids from changed c;
  perform set_config('memory.change_log', coalesce(v_prev_log, ''), true);
  invalidated := coalesce(cardinality(v_ids), 0);
  perform memory_private.log_changes_in_bulk(v_ids, 'deleted', 'DECAY');
  decayed := decayed + invalidated;
  perform set_config('memory.event', coalesce(v_prev_event, ''), true);
  perform set_config('memory.actor', coalesce(v_prev_actor, ''), true);
  return next;
end;
$$;
revoke all on function memory_private.decay_page_range(timestamptz, bigint, bigint) from public;
grant execute on function memory_private.decay_page_range(timestamptz, bigint, bigint) to service_role;

-- 3. Ending sessions ----------------------------------------------------------------------------

insert into public.memory_settings (name, value, description) values
  ('session_idle_minutes', 60,
   'The nightly sweep (devai-session-idle-end) ends sessions whose last episode batch is older than this and queues their consolidation.'),
  ('entity_enrich_min_mentions', 3,
   'Nightly entity enrichment writes an LLM summary for entities with at least this many mentions and no summary.'),
  ('graph_enrich_per_night', 20,
   'At most this many entities are enriched per tenant per night.'),
  ('graph_causal_pairs_per_night', 50,
   'At most this many pairs of consecutive episodes are checked for cause and effect per tenant per night (one LLM call of at most 50 pairs).')
on conflict (name) do nothing;

alter table public.memory_settings
  add constraint memory_settings_graph_values_range check (
    case name
      when 'session_idle_minutes'         then value >= 1
      when 'entity_enrich_min_mentions'   then value >= 1 and value = trunc(value)
      when 'graph_enrich_per_night'       then value >= 0 and value <= 1000 and value = trunc(value)
      when 'graph_causal_pairs_per_night' then value >= 0 and value <= 50 and value = trunc(value)
      else true
    end);

-- Ends the sessions whose row ids are given (p_reason: 'explicit' | 'new_session' | 'idle') and
-- queues each one's consolidation job: kind 'consolidate', idempotency key
-- 'consolidate:<session_id>', so a session is consolidated by one job, once, however often or by
-- whichever path it is ended. A session that has ended already keeps its end and its job. Security
-- invoker: as a tenant (the memory API) RLS limits it to the tenant's sessions and jobs; as the
-- job owner (pg_cron's idle sweep) it covers every tenant. Returns, per session found: its row
-- id, session_id, the consolidation job's id, and whether this call ended it.
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
       set ended_at = p_now, end_reason = p_reason
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

-- The nightly idle sweep (pg_cron 'devai-session-idle-end', 02:00 UTC): ends the sessions, of
-- every tenant, whose last episode batch is more than session_idle_minutes (60) before p_now, at
-- most p_limit per call, oldest first, through public.end_memory_sessions (reason 'idle'), so
-- each gets its one consolidation job. Returns {"ended", "queued"}.
-- Run by hand: select memory_private.end_idle_sessions();
create or replace function memory_private.end_idle_sessions(p_now timestamptz default now(), p_limit integer default 5000)
returns jsonb
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
  v_idle interval := make_interval(secs => public.memory_setting('session_idle_minutes')::double precision * 60);
  v_ids  uuid[];
  v_result jsonb;
begin
  select coalesce(array_agg(x.id), '{}') into v_ids
    from (select s.id from public.memory_sessions s
           where s.ended_at is null and s.updated_at < p_now - v_idle
           order by s.updated_at
           limit p_limit
             for update skip locked) x;
  select jsonb_build_object('ended', count(*) filter (where e.ended_now), 'queued', count(e.job_id)) into v_result
    from public.end_memory_sessions(v_ids, 'idle', p_now) e;
  return v_result;
end;
$$;
revoke all on function memory_private.end_idle_sessions(timestamptz, integer) from public;
grant execute on function memory_private.end_idle_sessions(timestamptz, integer) to service_role;

-- 4. Nightly graph maintenance ---------------------------------------------------------------

-- Queues tonight's graph maintenance (pg_cron 'devai-graph-maintenance', 02:30 UTC), one job per
-- tenant and kind and night (idempotency key '<kind>:<UTC date of p_now>'), only for tenants with
-- work: 'enrich' where entities have at least entity_enrich_min_mentions mentions and no summary,
-- 'causal' where ended sessions have consecutive episode pairs not yet checked. The worker runs
-- them with the per-tenant caps graph_enrich_per_night and graph_causal_pairs_per_night, and
-- completes them as skipped when no LLM is configured. Returns {"enrich", "causal"}: jobs queued.
-- Run by hand: select memory_private.enqueue_graph_maintenance();
create or replace function memory_private.enqueue_graph_maintenance(p_now timestamptz default now())
returns jsonb
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
  v_night  text := to_char(p_now at time zone 'UTC', 'YYYY-MM-DD');
  v_min    numeric := public.memory_setting('entity_enrich_min_mentions');
  v_enrich integer;
  v_causal integer;
begin
  with queued as (
    insert into public.memory_jobs (owner_id, kind, payload, idempotency_key)
    select t.owner_id, 'enrich', jsonb_build_object('night', v_night), 'enrich:' || v_night
      from (select distinct e.owner_id from public.memory_entities e
             where e.summary is null and e.mention_count >= v_min) t
    on conflict (owner_id, kind, idempotency_key) do nothing
    returning 1
  )
  select count(*) into v_enrich from queued;

  with queued as (
    insert into public.memory_jobs (owner_id, kind, payload, idempotency_key)
    select t.owner_id, 'causal', jsonb_build_object('night', v_night), 'causal:' || v_night
      from (select distinct s.owner_id from public.memory_sessions s
             where s.ended_at is not null and s.causal_checked_seq < s.episode_count - 1) t
    on conflict (owner_id, kind, idempotency_key) do nothing
    returning 1
  )
  select count(*) into v_causal from queued;

  return jsonb_build_object('enrich', v_enrich, 'causal', v_causal);
end;
$$;
revoke all on function memory_private.enqueue_graph_maintenance(timestamptz) from public;
grant execute on function memory_private.enqueue_graph_maintenance(timestamptz) to service_role;

insert into public.memory_maintenance_schedules (job_name, schedule, command, description) values
  ('devai-session-idle-end', '0 2 * * *', 'select memory_private.end_idle_sessions()',
   'Ends sessions idle for more than session_idle_minutes and queues their consolidation (one job per session), daily at 02:00.'),
  ('devai-graph-maintenance', '30 2 * * *', 'select memory_private.enqueue_graph_maintenance()',
   'Queues tonight''s entity enrichment and causal inference jobs (one per tenant with work), daily at 02:30; the worker runs them.')
on conflict (job_name) do update
  set schedule = excluded.schedule, command = excluded.command, description = excluded.description;

select memory_private.register_maintenance_schedules();
