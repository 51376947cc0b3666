-- The HNSW walk of a large scope stops at the similarity floor (issue 19: the biggest tenant's
-- handler p95). The walk asked for match_count rows of the scope and pgvector's iterative scan
-- went on until it had them, however far: a question the scope holds fewer than match_count
-- answers to (one about another project) walked on through other tenants' memories for rows the
-- answer then drops (at or below similarity_threshold). On the bench's 100k corpus, 12 of the
-- biggest tenant's 100 messages (built as the handler suite builds its 50) walked that way:
-- 1,500-16,300 buffers where the others read 500-970, every row past the floor dropped, and
-- those messages made the handler's p95.
-- The walk now reads its rows one at a time (a cursor) and stops at the first at or below the
-- floor: the rows it read after that one were never answered. In the 100 messages no row above
-- the floor came after one below it (pgvector's relaxed order puts a later batch's rows after
-- an earlier one's; at the floor the walk was in distance order every time), and each answer is
-- the same rows. A walk stopped at the floor did not run out of memories: the short-walk
-- fallback (an exact comparison of a small scope) is for walks that did. Body of 20261211600000
-- (SET options restated; scope lists read in NFC); only the walk's lines change.
CREATE OR REPLACE FUNCTION public.match_memories(query_embedding vector, match_namespace text, match_count integer DEFAULT 15, similarity_threshold double precision DEFAULT 0.7, match_owner uuid DEFAULT auth.uid(), match_embedding_model text DEFAULT 'text-embedding-3-small'::text, match_namespaces text[] DEFAULT NULL::text[], as_of timestamp with time zone DEFAULT NULL::timestamp with time zone, with_relations boolean DEFAULT true, filter_after timestamp with time zone DEFAULT NULL::timestamp with time zone, filter_before timestamp with time zone DEFAULT NULL::timestamp with time zone, filter_memory_types text[] DEFAULT NULL::text[], filter_categories text[] DEFAULT NULL::text[], filter_exclude tsquery DEFAULT NULL::tsquery, filter_fields jsonb DEFAULT NULL::jsonb)
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
  v_walk_ids  uuid[];
  v_walk_dist double precision[];
  v_fallback  integer;
  v_short     boolean := false;
  v_plan_mode text;
  v_walk      refcursor;
  v_id        uuid;
  v_dist      double precision;
  v_at_floor  boolean := false;
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
  -- base whose parent is searched too adds nothing, and would count its rows twice). Read in NFC,
  -- the one form names are stored in (migration 20261210400000): a caller's 'café' spelled
  -- e + U+0301 is the scope 'café'.
  with bases as (
    select distinct rtrim(normalize(s, nfc), '/') as base
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
    -- Every row of the scope is compared (its distance), but what it held then (memory_at: a
    -- history lookup per row) and the filters are read only in distance order, until match_count
    -- rows held then and passed: reading them for every row of the scope first cost a function
    -- call and a history probe per row (a 8,500-row scope: 130,000 buffers and 373 ms; 84,000
    -- and about 130 ms so). The rows are sorted by distance with their row address, and each
    -- one checked is read again by that address (a TID scan, one page).
    with nearest as materialized (
      select s.id, r.content, r.memory_type, r.namespace, r.priority, r.importance, r.pinned, r.source, r.metadata,
             s.distance
        from (select m.ctid as tid, m.id, m.embedding operator(extensions.<=>) query_embedding as distance
                from public.devai_memories m
               where m.owner_id = match_owner
                 and m.created_at <= as_of
                 and (m.valid_until is null or m.valid_until > as_of)
                 and m.source is distinct from 'conversation'
                 and m.embedding_model = match_embedding_model
                 and m.embedding is not null
                 and (m.namespace || '/') ^@ any (v_scopes)
               order by distance, m.id
              offset 0) as s
       cross join lateral (
         select a.held, a.content, a.memory_type, a.namespace, a.priority, a.importance, a.pinned, a.source, a.metadata,
                m.content as content_now, m.fts, m.created_at, m.updated_at
           from public.devai_memories m
          cross join lateral memory_search.memory_at_fields(as_of, m.id, m.created_at, m.valid_until, m.is_valid, m.state,
                                                            m.superseded_by, m.content, m.namespace, m.memory_type, m.priority,
                                                            m.source, m.importance, m.pinned, m.metadata) a
          where m.ctid = s.tid
         offset 0) as r
       where r.held
         and (not v_filtered or memory_search.passes_filters(case when filter_exclude is null or r.updated_at <= as_of then r.fts
                                                                  else memory_search.fts_then(s.id, r.content_now, r.fts, as_of) end,
                                                             r.created_at, r.memory_type, r.metadata, r.pinned, r.importance,
                                                             case when r.updated_at > as_of and filter_fields ?| array['updated_after', 'updated_before']
                                                                  then memory_search.updated_at_then(s.id, r.created_at, r.updated_at, as_of)
                                                                  else r.updated_at end,
                                                             filter_exclude, filter_after, filter_before, filter_memory_types, filter_categories, filter_fields))
       order by s.distance, s.id
       limit match_count
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

  -- The scope's size up to the exact path's limit, as the write path keeps it
  -- (public.memory_scope_size: one index probe per scope base; migration 20261208300000).
  -- Counting the scope's index entries instead cost up to the limit's heap fetches per search.
  v_in_scope := public.memory_scope_size(match_owner, v_bases, v_exact_max);

  -- Two statements, not one with both branches: a UNION ALL of the two paths, gated by
  -- v_in_scope, planned badly (693 ms p50 instead of 11). The projection they share is short.
  if v_in_scope > v_exact_max then
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
    -- this owner, so this statement is planned for this call.
    -- Only the walk: the statements after it (the answer's fields and relation boost) keep their
    -- generic plans; planned afresh at every call too, they cost a tenant with its own index as much
    -- as the smaller walk saved (migration 20261210200000).
    v_plan_mode := current_setting('plan_cache_mode');
    if v_index is distinct from to_regclass('public.devai_memories_embedding_hnsw') then
      perform set_config('plan_cache_mode', 'force_custom_plan', true);
    end if;
    -- Read one row at a time (a FOR loop fetches ten at once, and each further row of an
    -- iterative scan can cost a pass of the walk): the first at or below the floor ends it.
    v_walk_ids := '{}';
    v_walk_dist := '{}';
    open v_walk no scroll for
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
             limit match_count;
    loop
      fetch v_walk into v_id, v_dist;
      exit when not found;
      if 1 - v_dist <= similarity_threshold then
        v_at_floor := true;
        exit;
      end if;
      v_walk_ids := v_walk_ids || v_id;
      v_walk_dist := v_walk_dist || v_dist;
    end loop;
    close v_walk;
    perform set_config('enable_sort', v_sort, true);
    perform set_config('plan_cache_mode', v_plan_mode, true);
    -- A walk that comes back with fewer than match_count may have stopped early, not run out of
    -- memories: pgvector's graph walk ends once it reaches no new entries, and many index entries
    -- of one vector (one text written again and again, by any tenant; dead entries count until
    -- vacuum) leave the graph's links within those copies. The walk then returned none of 5 live
    -- memories that the exact comparison finds (pgTAP 08). A scope of at most
    -- exact_scan_fallback_max_rows memories is then compared exactly below; a larger one keeps
    -- what the walk found.
    -- The setting and the count are read only for a walk that came back short (a full one, the
    -- usual case, pays nothing for the fallback). The scope is counted afresh here
    -- (memory_search.scope_rows), not read from the kept counts: a kept count too large (a drift)
    -- sent this small scope to the walk, and must not also keep the walk's short answer.
    -- A walk stopped at the floor (above) did not come back short: it is not counted.
    if cardinality(v_walk_ids) < match_count and not v_at_floor then
      v_fallback := public.memory_setting('exact_scan_fallback_max_rows')::integer;
      v_short := memory_search.scope_rows(match_owner, v_bases, v_fallback) <= v_fallback;
    end if;
    if not v_short then
      return query
      with nearest as (
        select w.id, w.distance from unnest(v_walk_ids, v_walk_dist) as w(id, distance)
      )
      select n.id, m.content, 1 - n.distance, m.memory_type, m.namespace, m.strength, m.priority,
             m.importance, m.pinned, m.source, m.metadata, m.session_id, m.access_count,
             m.last_accessed_at, m.created_at, m.updated_at,
             rs.strength
        from nearest n
        join public.devai_memories m on m.id = n.id
        left join memory_search.relation_strengths(match_owner, case when with_relations then v_walk_ids end, null, v_scopes) rs
          on rs.id = n.id
       where 1 - n.distance > similarity_threshold
       order by n.distance, n.id;
      return;
    end if;
  end if;

  -- A scope of at most v_exact_max memories, or a larger one whose walk came back short (above):
  -- compare every vector in it (exact, recall 1).
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
end;
$function$;
