-- Prediction accuracy counts what context/predict predicted (docs/context.md#usage-feedback).
--
-- A prefetch row keeps everything its signal found (memory_ids, up to 100, whatever the lineage:
-- the session's assemble judges each memory with its own signals), while context/predict answers
-- at most `limit` (20 by default) of them, another branch's unmerged notes left out. A usage
-- report counted as prefetched every cited memory among memory_ids, so a cited memory predict had
-- ranked 21st, or had left out as another branch's work in progress, raised prediction_accuracy
-- (tests/context_usage: 3 of 3 cited counted prefetched where predict had answered 1 of them).
-- Each row now also records predicted_ids, the signal's memories in predict's answer, and the
-- report counts those. Rows written before have none: they count memory_ids as before until
-- devai-context-prune deletes them (context_session_retention_hours, 48).
alter table public.context_prefetch add column predicted_ids uuid[];
alter table public.context_prefetch add constraint context_prefetch_predicted_shape
  check (predicted_ids is null or cardinality(predicted_ids) <= 50);
comment on column public.context_prefetch.predicted_ids is
  'The memories of this signal that context/predict answered (prediction accuracy counts them); null in rows written before 20261203200000.';
-- Written with the rest of the prediction, by its insert and by a lazy refresh's update.
grant insert (predicted_ids), update (predicted_ids) on public.context_prefetch to authenticated;

-- The body is that of 20261202500100 but for the prefetched check (predicted_ids); CREATE OR
-- REPLACE keeps its grants.
-- One usage report (POST memory/usage, called as the tenant by the memory function): the
-- session's records, the counters, the citations' reinforcement and the tenant's totals.
CREATE OR REPLACE FUNCTION public.record_memory_usage(p_session_id text, p_retrieved uuid[], p_cited uuid[], p_tokens integer[], p_now timestamp with time zone DEFAULT now()) RETURNS TABLE(recorded integer, cited integer, unknown uuid[], cited_prefetched integer, predicted_session boolean, already_recorded uuid[], inactive uuid[])
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO ''
    AS $$
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
  perform memory_private.require_the_service('record_memory_usage');
  -- Security definer: RLS does not apply here, so every read and write below names the tenant.
  if v_owner is null then
    raise exception 'record_memory_usage reports for a tenant: no tenant in the request''s claims' using errcode = '42501';
  end if;
  -- A report dated ahead would keep its session records from devai-context-prune.
  if p_now is null or p_now > now() then
    raise exception 'p_now must be a time no later than now(), got %', p_now using errcode = '22023';
  end if;
  if coalesce(cardinality(p_retrieved), 0) <> coalesce(cardinality(p_tokens), 0) then
    raise exception 'p_tokens must have one count per retrieved id' using errcode = '22023';
  end if;
  -- The caller's memories among the reported ids, read by id: the active ones are counted,
  -- the corrected and forgotten ones (what lock_retrieved_memories leaves out too) are not.
  select coalesce(array_agg(r.id order by r.id) filter (where m.active), '{}'),
         coalesce(array_agg(r.id order by r.id) filter (where not m.active), '{}')
    into v_known, v_inactive
    from (select distinct x as id from unnest(coalesce(p_retrieved, '{}'::uuid[])) x) r
    cross join lateral (select m.is_valid and m.state = 'active' as active
                          from public.devai_memories m where m.id = r.id and m.owner_id = v_owner offset 0) m;

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

  -- The counters this report changes, locked in memory id order before any is changed: below, the
  -- new records' rows are upserted and then the rows of records turned cited updated, so without
  -- this two sessions' reports (one new to a and turning b cited, the other the reverse) took a
  -- and b in opposite orders and deadlocked. A counter row that does not exist yet is only ever
  -- inserted, in id order, by the upsert.
  perform 1 from public.memory_usage u
   where u.memory_id = any (v_new || v_newly_cited) and u.owner_id = v_owner
   order by u.memory_id
     for update;

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
   where u.memory_id = any (v_newly_cited) and not (u.memory_id = any (v_new)) and u.owner_id = v_owner;

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
   where m.id = t.id and m.owner_id = v_owner;

  predicted_session := exists (select from public.context_prefetch p where p.owner_id = v_owner and p.session_id = p_session_id);
  select count(distinct k)::int into v_hits
    from unnest(v_newly_cited) k
   where predicted_session
     and exists (select from public.context_prefetch p
                  where p.owner_id = v_owner and p.session_id = p_session_id
                    and k = any (coalesce(p.predicted_ids, p.memory_ids)));

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
