-- query_memories' context-'all' part (the memories of categories such as 'profile', given whatever
-- the query) reads those categories through devai_memories_owner_category instead of every memory
-- of the tenant. The category was checked only inside memory_search.passes_filters, which the
-- planner cannot see into, so a live search scanned the tenant's memories: at 20,000 memories of
-- which 200 are 'profile', 4,723 buffers and 52 ms for that part, 202 buffers and 1.1 ms now
-- (pgTAP 99_context_all_memories_read_by_category_index). Only the live path names the category in
-- the index's terms: as of an instant a memory's category is the one of then (memory_at), which
-- the index does not hold. The answer and its order are unchanged.
CREATE OR REPLACE FUNCTION public.query_memories(query_text text, query_embedding extensions.vector, match_namespaces text[], match_agent text, match_categories text[], match_count integer DEFAULT 5, similarity_threshold double precision DEFAULT 0.7, match_embedding_model text DEFAULT 'text-embedding-3-small'::text, match_owner uuid DEFAULT auth.uid(), filter_user_id text DEFAULT NULL::text, filter_agent_id text DEFAULT NULL::text, filter_run_id text DEFAULT NULL::text, filter_actor_id text DEFAULT NULL::text, filter_role text DEFAULT NULL::text, filter_pinned boolean DEFAULT NULL::boolean, filter_importance_min integer DEFAULT NULL::integer, filter_importance_max integer DEFAULT NULL::integer, filter_updated_after timestamp with time zone DEFAULT NULL::timestamp with time zone, filter_updated_before timestamp with time zone DEFAULT NULL::timestamp with time zone, search_mode text DEFAULT 'hybrid'::text, graph_depth integer DEFAULT 1, filter_after timestamp with time zone DEFAULT NULL::timestamp with time zone, filter_before timestamp with time zone DEFAULT NULL::timestamp with time zone, keyword_threshold double precision DEFAULT NULL::double precision, as_of timestamp with time zone DEFAULT NULL::timestamp with time zone, query_complexity text DEFAULT NULL::text, graph_edge_types text[] DEFAULT NULL::text[], prefer_memory_types text[] DEFAULT NULL::text[], recency_weight double precision DEFAULT 0, entity_terms text[] DEFAULT NULL::text[], graph_episodes boolean DEFAULT false)
 RETURNS TABLE(id uuid, content text, similarity double precision, memory_type text, namespace text, category text, category_context text, strength double precision, priority text, importance smallint, pinned boolean, source text, metadata jsonb, session_id text, access_count integer, last_accessed_at timestamp with time zone, created_at timestamp with time zone, updated_at timestamp with time zone, max_relation_strength real, keyword_rank integer, keyword_score double precision, keyword_coverage double precision, vector_rank integer, graph_rank integer, graph_via uuid, graph_edge text, relevance double precision)
 LANGUAGE plpgsql
 STABLE ROWS 20
 SET search_path TO ''
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
#variable_conflict use_column
declare
  v_categories text[];
  v_all        text[];
  v_pool       integer;
  v_scopes     text[];
  v_exclude    tsquery;
  -- The field filters, for the search to apply as it searches (each list, and the context-all
  -- memories): applied after it, a filter on one user of a shared project found what passed
  -- among the best 20 (4 x match_count) of every user's memories, often nothing.
  v_fields     jsonb := nullif(jsonb_strip_nulls(jsonb_build_object(
                   'user_id', filter_user_id, 'agent_id', filter_agent_id, 'run_id', filter_run_id,
                   'actor_id', filter_actor_id, 'role', filter_role, 'pinned', filter_pinned,
                   'importance_min', filter_importance_min, 'importance_max', filter_importance_max,
                   'updated_after', filter_updated_after, 'updated_before', filter_updated_before)), '{}'::jsonb);
begin
  if match_count is null or match_count < 1 or match_count > 200 then
    raise exception 'match_count must be between 1 and 200, got %', match_count using errcode = '22023';
  end if;
  -- Only categories both requested and allowed for the agent; nothing allowed, nothing returned.
  select coalesce(array_agg(a.category), '{}'),
         coalesce(array_agg(a.category) filter (where c.context = 'all'), '{}')
    into v_categories, v_all
    from public.memory_agent_allowlists a
    join public.memory_categories c on c.name = a.category
   where a.agent = match_agent
     and a.category = any (coalesce(match_categories, '{}'::text[]));
  if cardinality(v_categories) = 0 then
    return;
  end if;
  select coalesce(array_agg(rtrim(s, '/') || '/'), '{}') into v_scopes
    from unnest(coalesce(match_namespaces, '{}'::text[])) as s
   where s is not null and rtrim(s, '/') <> '';
  if query_text ~ '(^|\s)-("|[[:alpha:]][^\s"])' then
    select string_agg(t.query::text, ' | ')::tsquery into v_exclude
      from public.memory_keyword_terms(query_text) t where t.kind = 'exclude';
  end if;
  -- Per-category caps apply after the search: look further than match_count.
  v_pool := least(match_count * 4, 200);

  return query
  with found as (
    select h.*
      from public.hybrid_search(
             query_text => query_text, query_embedding => query_embedding, match_namespaces => match_namespaces,
             match_count => v_pool, similarity_threshold => similarity_threshold,
             match_embedding_model => match_embedding_model, match_owner => match_owner, search_mode => search_mode,
             graph_depth => graph_depth, filter_after => filter_after, filter_before => filter_before,
             filter_categories => v_categories, keyword_threshold => keyword_threshold, as_of => as_of,
             query_complexity => query_complexity, graph_edge_types => graph_edge_types,
             prefer_memory_types => prefer_memory_types, recency_weight => recency_weight,
             entity_terms => entity_terms, graph_episodes => graph_episodes, filter_fields => v_fields) h
  ),
  everything as (
    -- context 'all' categories: their memories regardless of the query (most important first).
    select m.id, 0::double precision as relevance
      from public.devai_memories m
     where cardinality(v_all) > 0
       and m.owner_id = match_owner
       and m.source is distinct from 'conversation'
       and (case when as_of is null then m.is_valid and m.state = 'active' and m.strength > 0.05
                 else m.created_at <= as_of and (select a.held from public.memory_at(m, as_of) a) end)
       -- The category in devai_memories_owner_category's terms, for a live search (folded away as of an
       -- instant by force_custom_plan): the index then reads only these categories' memories.
       and (as_of is not null
            or (case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end) = any (v_all))
       and (m.namespace || '/') ^@ any (v_scopes)
       -- Their categories; the time window, the exclusions and the field filters hold for them as for
       -- what the search found.
       and case when as_of is null
                then memory_search.passes_filters(m.fts, m.created_at, m.memory_type, m.metadata, m.pinned, m.importance,
                                                  m.updated_at, v_exclude, filter_after, filter_before, null, v_all, v_fields)
                else memory_search.passes_filters_at(m.id, as_of, v_exclude, filter_after, filter_before, null, v_all,
                                                     v_fields) end
       and not exists (select 1 from found f where f.id = m.id)
     -- As of an instant, the last change then (force_custom_plan folds the case away for a live search).
     order by m.importance desc,
              case when as_of is null or m.updated_at <= as_of then m.updated_at
                   else memory_search.updated_at_then(m.id, m.created_at, m.updated_at, as_of) end desc,
              m.id
     limit match_count
  ),
  -- Each with its fields as the answer shows them: as they were at as_of, else as they are (the
  -- search's rows carry them; a context-all memory's are read through public.memory_at).
  candidates as (
    select f.id, f.relevance, f.similarity, f.keyword_rank, f.keyword_score, f.keyword_coverage, f.vector_rank,
           f.graph_rank, f.graph_via, f.graph_edge, f.content, f.memory_type, f.namespace, f.priority, f.importance,
           f.pinned, f.source, f.metadata
      from found f
    union all
    select e.id, e.relevance, null, null, null, null, null, null, null, null, v.content, v.memory_type, v.namespace,
           v.priority, v.importance, v.pinned, v.source, v.metadata
      from everything e
     cross join lateral (select m.content, m.memory_type, m.namespace, m.priority, m.importance, m.pinned, m.source,
                                m.metadata
                           from public.devai_memories m where m.id = e.id and as_of is null
                         union all
                         select a.content, a.memory_type, a.namespace, a.priority, a.importance, a.pinned, a.source,
                                a.metadata
                           from public.devai_memories m cross join lateral public.memory_at(m, as_of) a
                          where m.id = e.id and as_of is not null) v
  ),
  eligible as (
    select c.*, m.strength as m_strength, m.created_at as m_created,
           case when c.memory_type = 'procedural' then 'procedural' else c.metadata ->> 'category' end as cat
      from candidates c
      cross join lateral (select m.strength, m.created_at from public.devai_memories m where m.id = c.id offset 0) m
  ),
  capped as (
    select e.*, cfg.context as cat_context, cfg.rag_length,
           row_number() over (partition by e.cat order by e.relevance * e.m_strength desc, e.m_created desc, e.id) as rank_in_category
      from eligible e
      join public.memory_categories cfg on cfg.name = e.cat
  ),
  top as (
    select k.* from capped k
     where k.rag_length is null or k.rank_in_category <= k.rag_length
     order by k.relevance * k.m_strength desc, k.m_created desc, k.id
     limit match_count
  )
  select m.id, t.content, t.similarity, t.memory_type, t.namespace, t.cat, t.cat_context,
         m.strength, t.priority, t.importance, t.pinned, t.source, t.metadata, m.session_id,
         m.access_count, m.last_accessed_at, m.created_at, m.updated_at,
         rs.strength,
         t.keyword_rank, t.keyword_score, t.keyword_coverage, t.vector_rank, t.graph_rank, t.graph_via, t.graph_edge,
         t.relevance
    from top t
    cross join lateral (select m.* from public.devai_memories m where m.id = t.id offset 0) m
    left join memory_search.relation_strengths(match_owner, array(select t2.id from top t2), as_of, v_scopes) rs
      on rs.id = t.id
   order by t.relevance * t.m_strength desc, t.m_created desc, t.id;
end;
$function$

;
