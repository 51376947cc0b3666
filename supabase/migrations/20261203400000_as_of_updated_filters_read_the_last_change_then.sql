-- As of an instant, memory.query's filters.updated_after / updated_before and the order of a
-- context-all category's memories (most important, then most recently changed first) read when the
-- memory had last changed then, not today's updated_at. Before, a memory pinned, unpinned,
-- forgotten, restored or filed under a category after the instant counted, as of it, as changed
-- after it: updated_before the instant left out a memory that had not changed since before it,
-- updated_after the instant served it, and a context-all category put it first
-- (docs/retrieval.md#as-of-an-instant). The live searches are unchanged (their plans are the same
-- statement for statement): only match_memories' scan as of an instant and passes_filters_at (the
-- other lists as of an instant) take the updated_at of then, and query_memories' order takes it
-- only with as_of (force_custom_plan folds the case away without it).

-- When memory p_id had last changed at p_at: its updated_at when that is no later (nothing changed
-- since), else the instant of its last history row by then that snapshots the row (every change
-- that touches updated_at writes one, in the same transaction, but an embedding written after the
-- memory: a reindex, or the one a job adds when the embedder had none to give), else its
-- created_at. Called by the searches as of an instant. plpgsql, not SQL: a SQL function with a SET
-- clause is planned again in every statement that calls it (pgTAP 64).
create function memory_search.updated_at_then(p_id uuid, p_created_at timestamptz, p_updated_at timestamptz,
                                              p_at timestamptz)
returns timestamptz
language plpgsql
stable
set search_path = ''
as $$
begin
  if p_updated_at <= p_at then
    return p_updated_at;
  end if;
  return coalesce((select x.ts from public.memory_history x
                    where x.memory_id = p_id and x.ts <= p_at and x.meta ? 'state'
                    order by x.ts desc, x.id desc
                    limit 1), p_created_at);
end;
$$;

revoke all on function memory_search.updated_at_then(uuid, timestamptz, timestamptz, timestamptz) from public, anon;
grant execute on function memory_search.updated_at_then(uuid, timestamptz, timestamptz, timestamptz)
  to authenticated, service_role;

-- passes_filters on memory p_id as it was at p_at: the type, metadata (category, user, agent, run,
-- actor, role), pin and importance public.memory_at gives of then, and when it had last changed
-- then (updated_at_then, read only for an updated_after / updated_before filter on a memory changed
-- since); its words and created_at are the row's (neither changes in place). Called by the
-- searches as of an instant (keyword_postings, hybrid_search, query_memories) where a live search
-- calls passes_filters.
create or replace function memory_search.passes_filters_at(p_id uuid, p_at timestamptz, p_exclude tsquery,
                                                           p_after timestamptz, p_before timestamptz,
                                                           p_types text[], p_categories text[], p_fields jsonb)
returns boolean
language plpgsql
stable
set search_path = ''
as $$
begin
  return coalesce((
    select memory_search.passes_filters(m.fts, m.created_at, a.memory_type, a.metadata, a.pinned, a.importance,
                                        case when m.updated_at > p_at and p_fields ?| array['updated_after', 'updated_before']
                                             then memory_search.updated_at_then(m.id, m.created_at, m.updated_at, p_at)
                                             else m.updated_at end,
                                        p_exclude, p_after, p_before, p_types, p_categories, p_fields)
      from public.devai_memories m
     cross join lateral public.memory_at(m, p_at) a
     where m.id = p_id), false);
end;
$$;

-- The vector signal: as of an instant, the updated_at filters on the last change then.
CREATE OR REPLACE FUNCTION public.match_memories(query_embedding extensions.vector, match_namespace text, match_count integer DEFAULT 15, similarity_threshold double precision DEFAULT 0.7, match_owner uuid DEFAULT auth.uid(), match_embedding_model text DEFAULT 'text-embedding-3-small'::text, match_namespaces text[] DEFAULT NULL::text[], as_of timestamp with time zone DEFAULT NULL::timestamp with time zone, with_relations boolean DEFAULT true, filter_after timestamp with time zone DEFAULT NULL::timestamp with time zone, filter_before timestamp with time zone DEFAULT NULL::timestamp with time zone, filter_memory_types text[] DEFAULT NULL::text[], filter_categories text[] DEFAULT NULL::text[], filter_exclude tsquery DEFAULT NULL::tsquery, filter_fields jsonb DEFAULT NULL::jsonb)
 RETURNS TABLE(id uuid, content text, similarity double precision, memory_type text, namespace text, strength double precision, priority text, importance smallint, pinned boolean, source text, metadata jsonb, session_id text, access_count integer, last_accessed_at timestamp with time zone, created_at timestamp with time zone, updated_at timestamp with time zone, max_relation_strength real)
 LANGUAGE plpgsql
 STABLE ROWS 20
 SET search_path TO ''
 SET "hnsw.iterative_scan" TO 'relaxed_order'
 SET "hnsw.ef_search" TO '100'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
declare
  v_bases     text[];
  v_uppers    text[];
  v_scopes    text[];
  v_exact_max integer;
  v_index     regclass;
  v_in_scope  integer;
  v_sort      text;
  v_in_window integer;
  v_from      timestamptz := coalesce(filter_after, '-infinity');
  v_until     timestamptz := coalesce(filter_before, 'infinity');
  -- The request's filters (time window, types, categories, exclusions) hold inside each path, so
  -- a strict filter gets its match_count nearest memories that pass it, not what passes among
  -- the nearest of all.
  v_filtered  boolean := filter_after is not null or filter_before is not null or filter_memory_types is not null
                         or filter_categories is not null or filter_exclude is not null or filter_fields is not null;
begin
  if match_count is null or match_count < 1 or match_count > 200 then
    raise exception 'match_count must be between 1 and 200, got %', match_count using errcode = '22023';
  end if;
  -- The scopes as namespace bases without the trailing '/', each once, none inside another (a
  -- base whose parent is searched too adds nothing, and would count its rows twice).
  with bases as (
    select distinct rtrim(s, '/') as base
      from unnest(coalesce(match_namespaces, '{}'::text[]) || match_namespace) as s
     where s is not null and rtrim(s, '/') <> ''
  )
  select coalesce(array_agg(b.base order by b.base), '{}') into v_bases
    from bases b
   where not exists (select from bases o where o.base <> b.base and (b.base || '/') ^@ (o.base || '/'));
  if cardinality(v_bases) = 0 then
    raise exception 'at least one namespace scope is required' using errcode = '22023';
  end if;
  -- Scopes match by path segment, never LIKE: base 'devai/project/task_forge' matches itself and
  -- 'devai/project/task_forge/...', never 'devai/project/taskxforge' nor '.../task_forge2'.
  select array_agg(b || '/') into v_scopes from unnest(v_bases) b;
  -- Each scope's byte range ends before base || '0' ('0' follows '/'), computed here so the index
  -- condition holds only values (see the top of this file).
  select array_agg(b || '0' order by o) into v_uppers from unnest(v_bases) with ordinality as u(b, o);
  v_index := public.memory_vector_index_of(match_owner);
  v_exact_max := public.memory_exact_scan_limit(match_count, v_index);

  -- As of an instant: what the tenant's memory held then (public.memory_at: recorded by then,
  -- validity not closed, valid and active after its last change then), filtered and answered with
  -- its fields as they were then (content, type, scope, priority, importance, pin, source,
  -- metadata). Exact: the invalidated rows it may need are not in the HNSW index. Strength is not
  -- filtered (it is today's, not then's).
  if as_of is not null then
    return query
    with in_scope as materialized (
      select m.id, a.content, a.memory_type, a.namespace, a.priority, a.importance, a.pinned, a.source, a.metadata,
             m.embedding operator(extensions.<=>) query_embedding as distance
        from public.devai_memories m
       cross join lateral public.memory_at(m, as_of) a
       where m.owner_id = match_owner
         and m.created_at <= as_of
         and (m.valid_until is null or m.valid_until > as_of)
         and m.source is distinct from 'conversation'
         and m.embedding_model = match_embedding_model
         and m.embedding is not null
         and (m.namespace || '/') ^@ any (v_scopes)
         and a.held
         and (not v_filtered or memory_search.passes_filters(m.fts, m.created_at, a.memory_type, a.metadata, a.pinned, a.importance,
                                                             case when m.updated_at > as_of and filter_fields ?| array['updated_after', 'updated_before']
                                                                  then memory_search.updated_at_then(m.id, m.created_at, m.updated_at, as_of)
                                                                  else m.updated_at end,
                                                             filter_exclude, filter_after, filter_before, filter_memory_types, filter_categories, filter_fields))
    ),
    nearest as (
      select s.* from in_scope s order by s.distance, s.id limit match_count
    )
    select n.id, n.content, 1 - n.distance, n.memory_type, n.namespace, m.strength, n.priority,
           n.importance, n.pinned, n.source, n.metadata, m.session_id, m.access_count,
           m.last_accessed_at, m.created_at, m.updated_at,
           rs.strength
      from nearest n
      join public.devai_memories m on m.id = n.id
      left join memory_search.relation_strengths(match_owner, case when with_relations then array(select n2.id from nearest n2) end, as_of, v_scopes) rs
        on rs.id = n.id
     where 1 - n.distance > similarity_threshold
     order by n.distance, n.id;
    return;
  end if;

  select count(*) into v_in_scope
    from (select 1
            from unnest(v_bases, v_uppers) as b(base, upper)
           cross join lateral (
             select 1 from public.devai_memories m
              where m.owner_id = match_owner and m.is_valid and m.state = 'active'
                and m.namespace operator(pg_catalog.~>=~) b.base
                and m.namespace operator(pg_catalog.~<~) b.upper
                and (m.namespace = b.base or m.namespace ^@ (b.base || '/'))
              limit v_exact_max + 1) as hit
           limit v_exact_max + 1) as counted;

  -- Two statements, not one with both branches: a UNION ALL of the two paths, gated by
  -- v_in_scope, planned badly (693 ms p50 instead of 11). The projection they share is short.
  if v_in_scope <= v_exact_max then
    -- Small scope: compare every vector in it (exact, recall 1).
    return query
    -- One lookup per scope (a lateral subquery that offset 0 keeps from being flattened into a
    -- join): each scope's range is then an index condition. As a plain join, the generic plan
    -- read every row of the tenant and applied the ranges as a join filter (a 109-row scope of
    -- a 21k-row tenant: 33 ms instead of under 1; the bench's same-size check).
    with in_scope as materialized (
      select m.id, m.distance
        from unnest(v_bases, v_uppers) as b(base, upper)
       cross join lateral (
         select m.id, m.embedding operator(extensions.<=>) query_embedding as distance
           from public.devai_memories m
          where m.owner_id = match_owner and m.is_valid and m.state = 'active'
            and m.namespace operator(pg_catalog.~>=~) b.base
            and m.namespace operator(pg_catalog.~<~) b.upper
            and (m.namespace = b.base or m.namespace ^@ (b.base || '/'))
            and m.strength > 0.05
            and m.source is distinct from 'conversation'
            and m.embedding_model = match_embedding_model
            and m.embedding is not null
            and (not v_filtered or memory_search.passes_filters(m.fts, m.created_at, m.memory_type, m.metadata, m.pinned, m.importance, m.updated_at,
                                                                filter_exclude, filter_after, filter_before, filter_memory_types, filter_categories, filter_fields))
         offset 0) as m
    ),
    nearest as (
      select s.id, s.distance from in_scope s order by s.distance, s.id limit match_count
    )
    select n.id, m.content, 1 - n.distance, m.memory_type, m.namespace, m.strength, m.priority,
           m.importance, m.pinned, m.source, m.metadata, m.session_id, m.access_count,
           m.last_accessed_at, m.created_at, m.updated_at,
           rs.strength
      from nearest n
      join public.devai_memories m on m.id = n.id
      left join memory_search.relation_strengths(match_owner, case when with_relations then array(select n2.id from nearest n2) end, null, v_scopes) rs
        on rs.id = n.id
     where 1 - n.distance > similarity_threshold
     order by n.distance, n.id;
    return;
  end if;

  -- A large scope, but a time window few of the tenant's memories fall in (a `when` question's
  -- week): those are compared exactly, read by their (owner_id, created_at) range. The index walk
  -- would pass over most of the scope to find them (a week of a 21k-memory tenant: 25 ms for half
  -- the answer; an empty window, 66 ms for none).
  if filter_after is not null or filter_before is not null then
    select count(*) into v_in_window
      from (select 1 from public.devai_memories m
             where m.owner_id = match_owner and m.created_at >= v_from and m.created_at < v_until
             limit v_exact_max + 1) as counted;
  end if;
  if v_in_window <= v_exact_max then
    return query
    with nearest as materialized (
      select s.id, s.distance
        from (select m.id, m.embedding operator(extensions.<=>) query_embedding as distance
                from public.devai_memories m
               where m.owner_id = match_owner and m.created_at >= v_from and m.created_at < v_until
                 and m.is_valid and m.state = 'active'
                 and m.strength > 0.05
                 and m.source is distinct from 'conversation'
                 and m.embedding_model = match_embedding_model
                 and m.embedding is not null
                 and (m.namespace || '/') ^@ any (v_scopes)
                 and memory_search.passes_filters(m.fts, m.created_at, m.memory_type, m.metadata, m.pinned, m.importance,
                                                  m.updated_at, filter_exclude, filter_after, filter_before,
                                                  filter_memory_types, filter_categories, filter_fields)
              offset 0) as s
       order by s.distance, s.id
       limit match_count
    )
    select n.id, m.content, 1 - n.distance, m.memory_type, m.namespace, m.strength, m.priority,
           m.importance, m.pinned, m.source, m.metadata, m.session_id, m.access_count,
           m.last_accessed_at, m.created_at, m.updated_at,
           rs.strength
      from nearest n
      join public.devai_memories m on m.id = n.id
      left join memory_search.relation_strengths(match_owner, case when with_relations then array(select n2.id from nearest n2) end, null, v_scopes) rs
        on rs.id = n.id
     where 1 - n.distance > similarity_threshold
     order by n.distance, n.id;
    return;
  end if;

  -- Large scope: the HNSW index, filtered while it is walked (iterative scan, so selective filters
  -- keep recall). Sorting is switched off for this statement only, so the planner cannot fall
  -- back to sorting the whole scope; the rows found are re-sorted exactly below. With a filter
  -- of the request's own that few memories pass, the walk goes on until it has match_count of
  -- them or has read pgvector's hnsw.max_scan_tuples index entries (20,000; a filter nothing
  -- passes costs about 65 ms in a 100k-memory index). A bound of 2,000 was tried: 7 ms, but the
  -- entries of other tenants and dead rows count too, and it missed most of what a user's filter
  -- in a shared index should find.
  v_sort := current_setting('enable_sort');
  perform set_config('enable_sort', 'off', true);
  -- A tenant with its own index: the planner can use that partial index only in a plan made for
  -- this owner, so this statement is planned for this call (the function's SET clause restores
  -- plan_cache_mode when it returns).
  if v_index is distinct from to_regclass('public.devai_memories_embedding_hnsw') then
    perform set_config('plan_cache_mode', 'force_custom_plan', true);
  end if;
  return query
  with nearest as materialized (
    select m.id, m.embedding operator(extensions.<=>) query_embedding as distance
      from public.devai_memories m
     where m.owner_id = match_owner
       and m.is_valid
       and m.state = 'active'
       and m.strength > 0.05
       and m.source is distinct from 'conversation'
       and m.embedding_model = match_embedding_model
       and m.embedding is not null
       and (m.namespace || '/') ^@ any (v_scopes)
       and (not v_filtered or memory_search.passes_filters(m.fts, m.created_at, m.memory_type, m.metadata, m.pinned, m.importance, m.updated_at,
                                                           filter_exclude, filter_after, filter_before, filter_memory_types, filter_categories, filter_fields))
     order by m.embedding operator(extensions.<=>) query_embedding
     limit match_count
  )
  select n.id, m.content, 1 - n.distance, m.memory_type, m.namespace, m.strength, m.priority,
         m.importance, m.pinned, m.source, m.metadata, m.session_id, m.access_count,
         m.last_accessed_at, m.created_at, m.updated_at,
         rs.strength
    from nearest n
    join public.devai_memories m on m.id = n.id
    left join memory_search.relation_strengths(match_owner, case when with_relations then array(select n2.id from nearest n2) end, null, v_scopes) rs
      on rs.id = n.id
   where 1 - n.distance > similarity_threshold
   order by n.distance, n.id;
  perform set_config('enable_sort', v_sort, true);
end;
$function$;


-- memory.query: a context-all category's memories as of an instant in the order of their last change then.
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
$function$;
