-- A usage report counts each memory once per session (docs/context.md#usage-feedback). Every
-- report used to count every memory it named: the same report sent ten times counted ten
-- retrievals and ten citations and reinforced the cited memories ten times, and an integration
-- that resends its cumulative list each turn (natural for a hook) inflated usage and strength with
-- every turn. Now public.memory_usage_sessions holds one record per (tenant, session, memory): a
-- memory's first report in a session is counted (retrieved, and cited or ignored) and its tokens
-- kept; a later citation of a memory the session first reported only retrieved turns that ignore
-- into a citation, once; anything else a resend names changes nothing, and the answer lists it as
-- already_recorded. The tenant's totals move only when a report counted something.
--
-- A report naming a memory that was corrected (superseded: is_valid false) or forgotten
-- (soft-deleted) counted it too, although no retrieval or assembly serves such a memory any more
-- (a report can only name it from a context given before the change, or by mistake): such ids now
-- come back in a list of their own, inactive, and nothing is written for them, like the ids that
-- are no memory of the caller's (unknown).
--
-- The records only serve to deduplicate a session's resends: the nightly devai-context-prune
-- deletes them with the session's prefetch and injections, first reported more than
-- context_session_retention_hours (48) ago (a resend coming later counts again, as a new
-- session's report would; the counters, strengths and totals they moved stay).

create table public.memory_usage_sessions (
  owner_id    uuid not null default auth.uid(),
  session_id  text not null,
  memory_id   uuid not null,
  cited       boolean not null,
  tokens      integer not null,
  reported_at timestamptz not null default now(),
  primary key (owner_id, session_id, memory_id),
  constraint memory_usage_sessions_memory_fkey foreign key (memory_id, owner_id)
    references public.devai_memories (id, owner_id) on delete cascade,
  constraint memory_usage_sessions_session_shape check (char_length(session_id) between 1 and 200),
  constraint memory_usage_sessions_tokens_nonnegative check (tokens >= 0)
);
comment on table public.memory_usage_sessions is
  'Per tenant, session and memory: whether a usage report counted it as cited and the tokens it counted (POST memory/usage): a memory is counted once per session. docs/context.md#usage-feedback.';

alter table public.memory_usage_sessions enable row level security;
revoke all on table public.memory_usage_sessions from anon, authenticated, public;
grant all on table public.memory_usage_sessions to service_role;
-- Owners read their records and write them through public.record_memory_usage (security invoker):
-- a record is added, and a retrieval turned into a citation; never deleted by a tenant.
grant select on public.memory_usage_sessions to authenticated;
grant insert (owner_id, session_id, memory_id, cited, tokens, reported_at) on public.memory_usage_sessions to authenticated;
grant update (cited) on public.memory_usage_sessions to authenticated;
create policy "Owners can read their session usage" on public.memory_usage_sessions
  for select to authenticated using (owner_id = (select auth.uid()));
create policy "Owners can record session usage of their memories" on public.memory_usage_sessions
  for insert to authenticated with check (owner_id = (select auth.uid()));
create policy "Owners can mark their session usage cited" on public.memory_usage_sessions
  for update to authenticated
  using (owner_id = (select auth.uid())) with check (owner_id = (select auth.uid()));

update public.memory_settings
   set description = 'Strength a memory gains when a session''s usage report first says it was cited (on top of its decayed strength, capped at 1). A memory retrieved but not cited gains nothing beyond the reinforcement of the retrieval itself.'
 where name = 'citation_reinforce_step';

-- The foreign key's lookup when a memory is purged.
create index memory_usage_sessions_memory on public.memory_usage_sessions (memory_id, owner_id);

-- One usage report (POST memory/usage, _shared/context/usage.ts), as the tenant. Returns what this
-- report counted (recorded: memories first reported in the session; cited: memories first cited
-- in it), the ids that are no memory of the caller's, the session's memories the report named
-- again (already_recorded), the corrected or forgotten ones it named (inactive), and the
-- prediction figures of its new citations. The return type gains two columns, hence drop and
-- create (the grants follow).
drop function public.record_memory_usage(text, uuid[], uuid[], integer[], timestamptz);
create function public.record_memory_usage(p_session_id text, p_retrieved uuid[], p_cited uuid[], p_tokens integer[],
                                           p_now timestamptz default now())
returns table (recorded integer, cited integer, unknown uuid[], cited_prefetched integer, predicted_session boolean,
               already_recorded uuid[], inactive uuid[])
language plpgsql
set search_path = ''
as $$
#variable_conflict use_column
declare
  v_owner        uuid := (select auth.uid());
  v_step         double precision := public.memory_setting('citation_reinforce_step')::double precision;
  v_base         double precision := public.memory_setting('decay_base')::double precision;
  v_known        uuid[];
  v_inactive     uuid[];
  v_new          uuid[];
  v_newly_cited  uuid[];
  v_tokens       bigint;
  v_cited_tokens bigint;
  v_hits         integer;
begin
  if coalesce(cardinality(p_retrieved), 0) <> coalesce(cardinality(p_tokens), 0) then
    raise exception 'p_tokens must have one count per retrieved id' using errcode = '22023';
  end if;
  -- The caller's memories among the reported ids (RLS), read by id: the active ones are counted,
  -- the corrected and forgotten ones (what lock_retrieved_memories leaves out too) are not.
  select coalesce(array_agg(r.id order by r.id) filter (where m.active), '{}'),
         coalesce(array_agg(r.id order by r.id) filter (where not m.active), '{}')
    into v_known, v_inactive
    from (select distinct x as id from unnest(coalesce(p_retrieved, '{}'::uuid[])) x) r
    cross join lateral (select m.is_valid and m.state = 'active' as active
                          from public.devai_memories m where m.id = r.id offset 0) m;

  -- The session's record decides what moves: a new record counts the memory; an existing one
  -- changes only from retrieved to cited (the upsert's WHERE), and returns nothing otherwise.
  -- Concurrent reports of one session serialize on these rows, so each change is made once.
  with r as (
    select distinct on (t.id) t.id, greatest(coalesce(t.tokens, 0), 0) as tokens
      from unnest(coalesce(p_retrieved, '{}'::uuid[]), coalesce(p_tokens, '{}'::integer[])) as t(id, tokens)
     where t.id = any (v_known)
     order by t.id
  ), w as (
    insert into public.memory_usage_sessions as s (owner_id, session_id, memory_id, cited, tokens, reported_at)
    select v_owner, p_session_id, r.id, r.id = any (coalesce(p_cited, '{}'::uuid[])), r.tokens, p_now
      from r
    on conflict (owner_id, session_id, memory_id) do update
       set cited = true
     where excluded.cited and not s.cited
    returning s.memory_id, s.cited, s.tokens, s.xmax = 0 as inserted
  )
  select coalesce(array_agg(w.memory_id order by w.memory_id) filter (where w.inserted), '{}'),
         coalesce(array_agg(w.memory_id order by w.memory_id) filter (where w.cited), '{}'),
         coalesce(sum(w.tokens) filter (where w.inserted), 0),
         coalesce(sum(w.tokens) filter (where w.cited), 0)
    into v_new, v_newly_cited, v_tokens, v_cited_tokens
    from w;

  -- Counters: a new record is a retrieval and a citation or an ignore; a record turned cited
  -- moves its ignore to the citations (the counts still add up).
  insert into public.memory_usage as u
    (memory_id, owner_id, retrieval_count, citation_count, ignore_count, last_reported_at, last_cited_at)
  select k, v_owner, 1, case when k = any (v_newly_cited) then 1 else 0 end,
         case when k = any (v_newly_cited) then 0 else 1 end, p_now,
         case when k = any (v_newly_cited) then p_now end
    from unnest(v_new) k
  on conflict (memory_id) do update
     set retrieval_count = u.retrieval_count + 1,
         citation_count = u.citation_count + excluded.citation_count,
         ignore_count = u.ignore_count + excluded.ignore_count,
         last_reported_at = greatest(u.last_reported_at, excluded.last_reported_at),
         last_cited_at = greatest(u.last_cited_at, excluded.last_cited_at);
  update public.memory_usage u
     set citation_count = u.citation_count + 1, ignore_count = u.ignore_count - 1,
         last_reported_at = greatest(u.last_reported_at, p_now), last_cited_at = greatest(u.last_cited_at, p_now)
   where u.memory_id = any (v_newly_cited) and not (u.memory_id = any (v_new));

  with target as (
    select l.id,
           least(1.0::double precision,
             case when l.priority = 'highest' or l.pinned then l.strength
                  else public.memory_decayed_strength(l.base_strength, l.last_accessed_at, p_now, v_base) + v_step
             end) as reinforced
      from public.lock_retrieved_memories(
             jsonb_build_array(jsonb_build_object('at', p_now, 'ids', to_jsonb(v_newly_cited)))) l
  )
  update public.devai_memories m
     set strength = t.reinforced, base_strength = t.reinforced,
         last_accessed_at = greatest(m.last_accessed_at, p_now)
    from target t
   where m.id = t.id;

  predicted_session := exists (select from public.context_prefetch p where p.session_id = p_session_id);
  select count(distinct k)::int into v_hits
    from unnest(v_newly_cited) k
   where predicted_session
     and exists (select from public.context_prefetch p where p.session_id = p_session_id and k = any (p.memory_ids));

  -- The tenant's totals, when the report counted something. Added by an UPDATE: a row proposed
  -- with a citation and no retrieval (a record turned cited) would fail the totals' checks.
  if cardinality(v_new) + cardinality(v_newly_cited) > 0 then
    insert into public.memory_usage_totals (owner_id, updated_at) values (v_owner, p_now)
    on conflict (owner_id) do nothing;
    update public.memory_usage_totals t
       set reports = t.reports + 1,
           retrieved = t.retrieved + cardinality(v_new),
           cited = t.cited + cardinality(v_newly_cited),
           cited_in_predicted_sessions = t.cited_in_predicted_sessions
                                         + case when predicted_session then cardinality(v_newly_cited) else 0 end,
           cited_prefetched = t.cited_prefetched + v_hits,
           injected_tokens = t.injected_tokens + v_tokens,
           cited_tokens = t.cited_tokens + v_cited_tokens,
           updated_at = p_now
     where t.owner_id = v_owner;
  end if;

  recorded := cardinality(v_new);
  cited := cardinality(v_newly_cited);
  unknown := coalesce((select array_agg(distinct x order by x) from unnest(coalesce(p_retrieved, '{}'::uuid[])) x
                        where not (x = any (v_known)) and not (x = any (v_inactive))), '{}');
  cited_prefetched := v_hits;
  already_recorded := coalesce((select array_agg(k order by k) from unnest(v_known) k where not (k = any (v_new))), '{}');
  inactive := v_inactive;
  return next;
end;
$$;
revoke all on function public.record_memory_usage(text, uuid[], uuid[], integer[], timestamptz) from public, anon, authenticated;
grant execute on function public.record_memory_usage(text, uuid[], uuid[], integer[], timestamptz) to authenticated, service_role;

create index memory_usage_sessions_reported_at on public.memory_usage_sessions (reported_at);

-- The nightly prune (20261124600100), with the usage records.
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

update public.memory_settings
   set description = 'Prefetch, injection and per-session usage records of a session are deleted this long after they were written (devai-context-prune).'
 where name = 'context_session_retention_hours';
