-- An ended relation boosts nothing, in every search. 20261128200000 made hybrid_search's relation
-- boost read only the edges valid now (or as of as_of); match_memories (the vector signal's SQL,
-- also callable on its own) and context_candidates (living context's lookups by file, module,
-- branch and contradiction) still took the strongest edge ever recorded, so a relation that had
-- ended, or, as of an instant, one not yet made, still raised a memory's rank. Both now read the
-- edges valid now, and match_memories' as_of answer the edges valid then, with the predicate
-- hybrid_search uses. Bodies as in 20261125760300_vector_path_by_scope_share_and_tenant_index.sql
-- and 20261128100000_memories_read_by_id_whatever_the_tenant_sizes.sql otherwise unchanged; test
-- supabase/tests/database/81_ended_relations_boost_nothing.test.sql.

-- public.match_memories
CREATE OR REPLACE FUNCTION public.match_memories(query_embedding extensions.vector, match_namespace text, match_count integer DEFAULT 15, similarity_threshold double precision DEFAULT 0.7, match_owner uuid DEFAULT auth.uid(), match_embedding_model text DEFAULT 'text-embedding-3-small'::text, match_namespaces text[] DEFAULT NULL::text[], as_of timestamp with time zone DEFAULT NULL::timestamp with time zone)
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
  -- validity not closed, valid and active after its last change then; its content then). Exact:
  -- the invalidated rows it may need are not in the HNSW index. Strength is not filtered (it is
  -- today's, not then's).
  if as_of is not null then
    return query
    with in_scope as materialized (
      select m.id, a.content, m.embedding operator(extensions.<=>) query_embedding as distance
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
    ),
    nearest as (
      select s.id, s.content, s.distance from in_scope s order by s.distance, s.id limit match_count
    )
    select n.id, n.content, 1 - n.distance, m.memory_type, m.namespace, m.strength, m.priority,
           m.importance, m.pinned, m.source, m.metadata, m.session_id, m.access_count,
           m.last_accessed_at, m.created_at, m.updated_at,
           (select max(r.strength) from public.memory_relations r
             where r.owner_id = m.owner_id and (r.from_id = m.id or r.to_id = m.id)
               and r.created_at <= as_of and r.valid_from <= as_of
               and (r.valid_until is null or r.valid_until > as_of))
      from nearest n
      join public.devai_memories m on m.id = n.id
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
         offset 0) as m
    ),
    nearest as (
      select s.id, s.distance from in_scope s order by s.distance, s.id limit match_count
    )
    select n.id, m.content, 1 - n.distance, m.memory_type, m.namespace, m.strength, m.priority,
           m.importance, m.pinned, m.source, m.metadata, m.session_id, m.access_count,
           m.last_accessed_at, m.created_at, m.updated_at,
           (select max(r.strength) from public.memory_relations r
             where r.owner_id = m.owner_id and (r.from_id = m.id or r.to_id = m.id)
               and r.valid_from <= now() and (r.valid_until is null or r.valid_until > now()))
      from nearest n
      join public.devai_memories m on m.id = n.id
     where 1 - n.distance > similarity_threshold
     order by n.distance, n.id;
    return;
  end if;

  -- Large scope: the HNSW index, filtered while it is walked (iterative scan, so selective filters
  -- keep recall). Sorting is switched off for this statement only, so the planner cannot fall
  -- back to sorting the whole scope; the rows found are re-sorted exactly below.
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
     order by m.embedding operator(extensions.<=>) query_embedding
     limit match_count
  )
  select n.id, m.content, 1 - n.distance, m.memory_type, m.namespace, m.strength, m.priority,
         m.importance, m.pinned, m.source, m.metadata, m.session_id, m.access_count,
         m.last_accessed_at, m.created_at, m.updated_at,
         (select max(r.strength) from public.memory_relations r
           where r.owner_id = m.owner_id and (r.from_id = m.id or r.to_id = m.id)
             and r.valid_from <= now() and (r.valid_until is null or r.valid_until > now()))
    from nearest n
    join public.devai_memories m on m.id = n.id
   where 1 - n.distance > similarity_threshold
   order by n.distance, n.id;
  perform set_config('enable_sort', v_sort, true);
end;
$function$;

-- public.context_candidates
CREATE OR REPLACE FUNCTION public.context_candidates(match_namespaces text[], given_ids uuid[] DEFAULT NULL::uuid[], files text[] DEFAULT NULL::text[], modules text[] DEFAULT NULL::text[], branch text DEFAULT NULL::text, background_categories text[] DEFAULT NULL::text[], recent_since timestamp with time zone DEFAULT NULL::timestamp with time zone, contradictions boolean DEFAULT false, max_per_kind integer DEFAULT 30, match_owner uuid DEFAULT auth.uid())
 RETURNS TABLE(id uuid, kind text, detail text, weight double precision, content text, memory_type text, namespace text, strength double precision, priority text, importance smallint, pinned boolean, source text, metadata jsonb, created_at timestamp with time zone, category text, max_relation_strength real, cited_files text[], retrieval_count integer, citation_count integer, ignore_count integer)
 LANGUAGE plpgsql
 STABLE
 SET search_path TO ''
AS $function$
#variable_conflict use_column
declare
  v_scopes  text[] := public.context_scope_prefixes(match_namespaces);
  v_files   text[] := (select coalesce(array_agg(distinct regexp_replace(f, '^(\./)+', '')), '{}')
                         from unnest(coalesce(files, '{}'::text[])) f where f <> '');
  v_modules text[] := (select coalesce(array_agg(distinct rtrim(regexp_replace(d, '^(\./)+', ''), '/')), '{}')
                         from unnest(coalesce(modules, '{}'::text[])) d where rtrim(regexp_replace(d, '^(\./)+', ''), '/') <> '');
  v_found   record;
  v_ids     uuid[];
  v_kinds   text[];
  v_details text[];
  v_weights double precision[];
begin
  if cardinality(v_scopes) = 0 then
    raise exception 'at least one namespace scope is required' using errcode = '22023';
  end if;
  if max_per_kind is null or max_per_kind < 1 or max_per_kind > 100 then
    raise exception 'max_per_kind must be between 1 and 100, got %', max_per_kind using errcode = '22023';
  end if;
  if coalesce(cardinality(given_ids), 0) > 500 or cardinality(v_files) > 100 or cardinality(v_modules) > 20 then
    raise exception 'at most 500 given ids, 100 files and 20 modules' using errcode = '22023';
  end if;
  select * into v_found
    from memory_search.context_lookups(match_owner, v_scopes, v_files, v_modules, branch, background_categories,
                                       recent_since, max_per_kind);
  select array_agg(g.id), array_agg('given'::text), array_agg(null::text), array_agg(0::double precision)
    into v_ids, v_kinds, v_details, v_weights
    from (select distinct x as id from unnest(coalesce(given_ids, '{}'::uuid[])) x) g;
  v_ids := coalesce(v_ids, '{}') || v_found.ids;
  v_kinds := coalesce(v_kinds, '{}') || v_found.kinds;
  v_details := coalesce(v_details, '{}') || v_found.details;
  v_weights := coalesce(v_weights, '{}') || v_found.weights;
  if contradictions then
    select v_ids || coalesce(array_agg(c.id), '{}'), v_kinds || coalesce(array_agg('contradiction'::text), '{}'),
           v_details || coalesce(array_agg(c.other), '{}'), v_weights || coalesce(array_agg(1::double precision), '{}')
      into v_ids, v_kinds, v_details, v_weights
      from (select o.memory_a as id, o.memory_b::text as other from public.context_open_contradictions(match_namespaces, 10) o
            union all
            select o.memory_b, o.memory_a::text from public.context_open_contradictions(match_namespaces, 10) o) c;
  end if;

  -- Each memory by its id (the primary key), read under RLS.
  return query
  select r.id, r.kind, r.detail, r.weight,
         m.content, m.memory_type, m.namespace, m.strength, m.priority, m.importance, m.pinned, m.source,
         m.metadata, m.created_at,
         case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end,
         (select max(rel.strength) from public.memory_relations rel
           where rel.owner_id = m.owner_id and (rel.from_id = m.id or rel.to_id = m.id)
             and rel.valid_from <= now() and (rel.valid_until is null or rel.valid_until > now())),
         coalesce(f.files, '{}'),
         coalesce(u.retrieval_count, 0), coalesce(u.citation_count, 0), coalesce(u.ignore_count, 0)
    from unnest(v_ids, v_kinds, v_details, v_weights) as r(id, kind, detail, weight)
    cross join lateral (
      select mm.* from public.devai_memories mm
       where mm.id = r.id and mm.owner_id = match_owner and mm.is_valid and mm.state = 'active' and mm.strength > 0.05
         and mm.source is distinct from 'conversation' and (mm.namespace || '/') ^@ any (v_scopes)
      offset 0) m
    left join public.memory_usage u on u.memory_id = m.id
    left join public.memory_cited_files(v_ids, match_owner) f on f.memory_id = m.id
   order by r.kind, r.weight desc, r.id;
end;
$function$;
