-- The relation boost and the graph count only what the same search could see. Found by comparing
-- the search functions' scope rules with each other (each repro is a test in
-- supabase/tests/database/81_relation_boost_and_graph_read_live_memories.test.sql):
--
-- * The relation boost (max_relation_strength; docs/retrieval.md#ranking) was the strongest edge
--   touching a memory, spelled out six times in four functions. match_memories and
--   context_candidates still counted edges that had ended (hybrid_search and query_memories read
--   the edges valid now since 20261128200000), and none looked at the other end: an edge to a
--   deleted, superseded, faded or out-of-scope memory raised a memory's rank as if it were
--   corroborated, and so did a `contradicts` edge. It is now one function, called once per search
--   for all its memories, memory_search.relation_strengths: edges valid then (now, or as of
--   as_of), not `contradicts`, to a memory held then, in the request's scope, not a raw episode
--   and, now, above the retrieval floor. match_memories takes with_relations (default true):
--   hybrid_search's vector list passes false, as it uses ids and similarities only.
-- * A graph hop could pass through a faded memory (strength at or below 0.05) to reach another:
--   public.memory_graph_visible, which every hop and the entity lookup apply, now reads "visible
--   now" as valid, active and above the floor (as_of reads what was held then, as before).
-- * public.memory_entity_lookup and public.context_open_contradictions read auth.uid() where
--   their callers pass match_owner: for a service_role caller naming a tenant they returned
--   nothing. Both take match_owner now (default auth.uid(); RLS still decides what a tenant reads).
-- * context_open_contradictions built the critical tier around memories context_candidates then
--   hides (faded ones, raw episodes) and around `contradicts` edges not valid yet; the recent-error
--   lookup of memory_search.context_lookups let raw episodes take its slots.
--
-- Bodies otherwise as in 20261128300000 (hybrid_search), 20261128200000 (query_memories),
-- 20261125760300 (match_memories), 20261128100000 (context_candidates), 20261124900100
-- (context_lookups), 20261124800200 (memory_entity_lookup) and 20261125100000
-- (memory_graph_visible, context_open_contradictions).

-- public.memory_graph_visible: visible now also means above the retrieval floor.
CREATE OR REPLACE FUNCTION public.memory_graph_visible(m devai_memories, p_at timestamp with time zone, p_prefixes text[])
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE
 SET search_path TO ''
AS $function$
begin
  if not (p_prefixes is null or (m.namespace || '/') ^@ any (p_prefixes)) then
    return false;
  end if;
  if p_at is null then
    return m.is_valid and m.state = 'active' and m.strength > 0.05;
  end if;
  return (select a.held from public.memory_at(m, p_at) a);
end;
$function$;

-- memory_search.relation_strengths: the relation boost, in one place.
create function memory_search.relation_strengths(p_owner uuid, p_ids uuid[], p_at timestamptz, p_scopes text[])
returns table (id uuid, strength real)
language plpgsql
stable
set search_path = ''
as $$
#variable_conflict use_column
begin
  -- For each memory, the strongest edge valid at p_at (now when null) to a memory the same search
  -- could see then: held, in scope, not a raw episode (a fact's derived_from edge to the
  -- conversation it came from is provenance, not corroboration) and, now, above the retrieval
  -- floor. A contradiction corroborates nothing. One call for a search's memories (a call per
  -- memory cost a plpgsql call each, 20-200 of them per retrieval counting the vector list); per
  -- memory an aggregate over its edges, never a sort: callers run with sorting switched off
  -- (match_memories' index walk), where a sort is costed so high that the statement would be
  -- JIT-compiled at every call.
  if p_at is null then
    return query
    select x.id,
           (select max(e.strength)
              from (select r.strength, r.to_id as other from public.memory_relations r
                     where r.from_id = x.id and r.owner_id = p_owner and r.relation_type <> 'contradicts'
                       and r.valid_from <= now() and (r.valid_until is null or r.valid_until > now())
                    union all
                    select r.strength, r.from_id from public.memory_relations r
                     where r.to_id = x.id and r.owner_id = p_owner and r.relation_type <> 'contradicts'
                       and r.valid_from <= now() and (r.valid_until is null or r.valid_until > now())) e
              join public.devai_memories o on o.id = e.other
             where o.owner_id = p_owner and o.is_valid and o.state = 'active' and o.strength > 0.05
               and o.source is distinct from 'conversation'
               and (p_scopes is null or (o.namespace || '/') ^@ any (p_scopes)))
      from (select distinct u as id from unnest(p_ids) as u) x;
    return;
  end if;
  return query
  select x.id,
         (select max(e.strength)
            from (select r.strength, r.to_id as other from public.memory_relations r
                   where r.from_id = x.id and r.owner_id = p_owner and r.relation_type <> 'contradicts'
                     and r.created_at <= p_at and r.valid_from <= p_at and (r.valid_until is null or r.valid_until > p_at)
                  union all
                  select r.strength, r.from_id from public.memory_relations r
                   where r.to_id = x.id and r.owner_id = p_owner and r.relation_type <> 'contradicts'
                     and r.created_at <= p_at and r.valid_from <= p_at and (r.valid_until is null or r.valid_until > p_at)) e
            cross join lateral (select o from public.devai_memories o
                                 where o.id = e.other and o.owner_id = p_owner offset 0) v
           where (v.o).source is distinct from 'conversation'
             and public.memory_graph_visible(v.o, p_at, p_scopes))
    from (select distinct u as id from unnest(p_ids) as u) x;
end;
$$;
revoke all on function memory_search.relation_strengths(uuid, uuid[], timestamptz, text[]) from public, anon;
grant execute on function memory_search.relation_strengths(uuid, uuid[], timestamptz, text[]) to authenticated, service_role;

-- public.memory_entity_lookup and public.context_open_contradictions: the tenant they are given.
drop function public.memory_entity_lookup(text[], integer, timestamptz, text[]);
CREATE OR REPLACE FUNCTION public.memory_entity_lookup(terms text[], max_nodes integer DEFAULT 50, as_of timestamp with time zone DEFAULT NULL::timestamp with time zone, match_namespaces text[] DEFAULT NULL::text[], match_owner uuid DEFAULT auth.uid())
 RETURNS TABLE(id uuid, entity_id uuid, entity_name text, entity_type text, weight double precision, event_at timestamp with time zone)
 LANGUAGE plpgsql
 STABLE ROWS 50
 SET search_path TO ''
AS $function$
declare
  v_owner    uuid := match_owner;
  v_prefixes text[] := public.memory_scope_prefixes(match_namespaces);
  v_keys     text[];
begin
  if max_nodes is null or max_nodes < 1 or max_nodes > 500 then
    raise exception 'max_nodes must be between 1 and 500, got %', max_nodes using errcode = '22023';
  end if;
  if cardinality(terms) > 20 then
    raise exception 'at most 20 terms, got %', cardinality(terms) using errcode = '22023';
  end if;
  select array_agg(distinct public.memory_entity_key(left(t, 200))) into v_keys
    from unnest(coalesce(terms, '{}'::text[])) as t
   where public.memory_entity_key(left(t, 200)) <> '';
  if v_owner is null or v_keys is null then
    return;
  end if;

  return query
  with matched as (
    select e.id, 1.0::double precision as quality
      from public.memory_entities e
     where e.owner_id = v_owner and e.normalized_name = any (v_keys)
    union all
    select e.id, 0.8
      from public.memory_entities e
     where cardinality(e.alias_keys) > 0
       and e.alias_keys && (select array_agg(v_owner::text || '|' || k) from unnest(v_keys) as k)
  ),
  entities as (
    select e.id, e.canonical_name, e.entity_type, q.quality
      from (select m.id, max(m.quality) as quality from matched m group by m.id) q
      join public.memory_entities e on e.id = q.id
     order by q.quality desc, e.mention_count desc, e.id
     limit 20
  ),
  hits as (
    select distinct on (m.id) m.id, e.id as entity_id, e.canonical_name, e.entity_type,
           l.confidence * e.quality as weight, m.valid_from
      from entities e
     cross join lateral (
       select x.memory_id, x.confidence from public.memory_entity_links x
        where x.entity_id = e.id
        order by x.created_at desc
        limit max_nodes * 2) l
      join public.devai_memories m on m.id = l.memory_id
     where public.memory_graph_visible(m, as_of, v_prefixes)
     order by m.id, l.confidence * e.quality desc, e.id
  )
  select h.id, h.entity_id, h.canonical_name, h.entity_type, h.weight, h.valid_from
    from hits h
   order by h.valid_from desc, h.id
   limit max_nodes;
end;
$function$;
revoke all on function public.memory_entity_lookup(text[], integer, timestamptz, text[], uuid) from public, anon;
grant execute on function public.memory_entity_lookup(text[], integer, timestamptz, text[], uuid) to authenticated, service_role;

drop function public.context_open_contradictions(text[], integer);
CREATE OR REPLACE FUNCTION public.context_open_contradictions(match_namespaces text[], max_count integer DEFAULT 10, match_owner uuid DEFAULT auth.uid())
 RETURNS TABLE(memory_a uuid, memory_b uuid, detected_at timestamp with time zone)
 LANGUAGE plpgsql
 STABLE
 SET search_path TO ''
AS $function$
#variable_conflict use_column
begin
  return query
  select x.memory_a, x.memory_b, x.detected_at
    from (select distinct on (least(p.memory_a, p.memory_b), greatest(p.memory_a, p.memory_b))
                 p.memory_a, p.memory_b, p.detected_at
            from (select c.memory_a, c.memory_b, c.detected_at, 0 as pref
                    from public.memory_contradictions c
                   where c.resolution is null and c.owner_id = match_owner
                  union all
                  select r.to_id, r.from_id, r.created_at, 1
                    from public.memory_relations r
                   where r.relation_type = 'contradicts'
                     and r.owner_id = match_owner
                     and r.valid_from <= now() and (r.valid_until is null or r.valid_until > now())
                     and not exists (select 1 from public.memory_contradictions d
                                      where d.resolution is not null and d.owner_id = r.owner_id
                                        and least(d.memory_a, d.memory_b) = least(r.from_id, r.to_id)
                                        and greatest(d.memory_a, d.memory_b) = greatest(r.from_id, r.to_id))) p
            join public.devai_memories a on a.id = p.memory_a
            join public.devai_memories b on b.id = p.memory_b
           where a.is_valid and a.state = 'active' and a.strength > 0.05 and a.source is distinct from 'conversation'
             and b.is_valid and b.state = 'active' and b.strength > 0.05 and b.source is distinct from 'conversation'
             and (a.namespace || '/') ^@ any (public.context_scope_prefixes(match_namespaces))
             and (b.namespace || '/') ^@ any (public.context_scope_prefixes(match_namespaces))
           order by least(p.memory_a, p.memory_b), greatest(p.memory_a, p.memory_b), p.pref, p.detected_at desc) x
   order by x.detected_at desc, x.memory_a
   limit greatest(1, least(coalesce(max_count, 10), 50));
end;
$function$;
revoke all on function public.context_open_contradictions(text[], integer, uuid) from public, anon;
grant execute on function public.context_open_contradictions(text[], integer, uuid) to authenticated, service_role;

-- memory_search.context_lookups
CREATE OR REPLACE FUNCTION memory_search.context_lookups(p_owner uuid, p_scopes text[], p_files text[], p_modules text[], p_branch text, p_categories text[], p_recent_since timestamp with time zone, p_max_per_kind integer, OUT ids uuid[], OUT kinds text[], OUT details text[], OUT weights double precision[])
 RETURNS record
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO ''
 SET plan_cache_mode TO 'force_custom_plan'
AS $function$
declare
  v_dir text;
  v_key text;
  v_ids uuid[];
  v_det text[];
  v_w   double precision[];
begin
  ids := '{}'; kinds := '{}'; details := '{}'; weights := '{}';
  if not memory_search.caller_reads_owner(p_owner) then
    return;
  end if;

  -- Memories citing the files: their file entities by key (the unique index), then the links.
  if coalesce(cardinality(p_files), 0) > 0 then
    select coalesce(array_agg(y.id), '{}'), coalesce(array_agg(y.path), '{}') into v_ids, v_det
      from (select x.id, x.path
              from (select distinct on (m.id) m.id, f.path, m.importance, m.strength
                      from unnest(p_files) as f(path)
                      join public.memory_entities e
                        on e.owner_id = p_owner and e.normalized_name = public.memory_entity_key(f.path)
                       and e.entity_type = 'file' and regexp_replace(e.canonical_name, '^(\./)+', '') = f.path
                      join public.memory_entity_links l on l.entity_id = e.id and l.owner_id = p_owner
                      join public.devai_memories m on m.id = l.memory_id
                     where m.owner_id = p_owner and m.is_valid and m.state = 'active' and m.strength > 0.05
                       and m.source is distinct from 'conversation' and (m.namespace || '/') ^@ any (p_scopes)
                     order by m.id, f.path) x
             order by x.importance desc, x.strength desc, x.id
             limit p_max_per_kind) y;
    ids := ids || v_ids; details := details || v_det;
    kinds := kinds || array_fill('file'::text, array[cardinality(v_ids)]);
    weights := weights || array_fill(1::double precision, array[cardinality(v_ids)]);
  end if;

  -- A directory's files: normalized_name keeps letters and digits only, so the range
  -- [key, key || U+10FFFF) holds every name starting with the key (the text_pattern_ops index);
  -- the canonical name then checks the directory boundary exactly. At most 200 files a directory.
  foreach v_dir in array coalesce(p_modules, '{}'::text[]) loop
    v_key := public.memory_entity_key(v_dir);
    continue when v_key = '';
    select coalesce(array_agg(x.id), '{}') into v_ids
      from (select distinct m.id, m.importance, m.strength
              from (select e.id from public.memory_entities e
                     where e.owner_id = p_owner
                       and e.normalized_name operator(pg_catalog.~>=~) v_key
                       and e.normalized_name operator(pg_catalog.~<~) (v_key || chr(1114111))
                       and e.entity_type = 'file'
                       and regexp_replace(e.canonical_name, '^(\./)+', '') ^@ (v_dir || '/')
                     limit 200) e
              join public.memory_entity_links l on l.entity_id = e.id and l.owner_id = p_owner
              join public.devai_memories m on m.id = l.memory_id
             where m.owner_id = p_owner and m.is_valid and m.state = 'active' and m.strength > 0.05
               and m.source is distinct from 'conversation' and (m.namespace || '/') ^@ any (p_scopes)
               and not (m.id = any (ids))
             order by m.importance desc, m.strength desc, m.id
             limit p_max_per_kind) x;
    ids := ids || v_ids;
    details := details || array_fill(v_dir, array[cardinality(v_ids)]);
    kinds := kinds || array_fill('module'::text, array[cardinality(v_ids)]);
    weights := weights || array_fill(0.7::double precision, array[cardinality(v_ids)]);
  end loop;

  -- Recorded on the branch, newest first (devai_memories_owner_branch).
  if p_branch is not null then
    select coalesce(array_agg(x.id), '{}') into v_ids
      from (select m.id from public.devai_memories m
             where m.owner_id = p_owner and m.metadata ? 'branch' and m.is_valid and m.state = 'active'
               and (m.metadata ->> 'branch') = p_branch
               and m.strength > 0.05 and m.source is distinct from 'conversation' and (m.namespace || '/') ^@ any (p_scopes)
             order by m.created_at desc, m.id
             limit p_max_per_kind) x;
    ids := ids || v_ids;
    details := details || array_fill(p_branch, array[cardinality(v_ids)]);
    kinds := kinds || array_fill('branch'::text, array[cardinality(v_ids)]);
    weights := weights || array_fill(0.6::double precision, array[cardinality(v_ids)]);
  end if;

  -- Background: per category the most important first (devai_memories_owner_category), then the
  -- best of them all.
  if coalesce(cardinality(p_categories), 0) > 0 then
    select coalesce(array_agg(x.id), '{}'), coalesce(array_agg(x.cat), '{}'), coalesce(array_agg(x.importance / 5.0), '{}')
      into v_ids, v_det, v_w
      from (select c.cat, b.id, b.importance
              from unnest(p_categories) as c(cat)
              cross join lateral (
                select m.id, m.importance, m.created_at from public.devai_memories m
                 where m.owner_id = p_owner and m.is_valid and m.state = 'active'
                   and (case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end) = c.cat
                   and m.strength > 0.05 and m.source is distinct from 'conversation' and (m.namespace || '/') ^@ any (p_scopes)
                 order by m.importance desc, m.created_at desc
                 limit p_max_per_kind) b
             order by b.importance desc, b.created_at desc, b.id
             limit p_max_per_kind) x;
    ids := ids || v_ids; details := details || v_det; weights := weights || v_w;
    kinds := kinds || array_fill('background'::text, array[cardinality(v_ids)]);
  end if;

  -- Error memories since p_recent_since, newest first (devai_memories_owner_created).
  if p_recent_since is not null then
    select coalesce(array_agg(x.id), '{}') into v_ids
      from (select m.id from public.devai_memories m
             where m.owner_id = p_owner and m.created_at >= p_recent_since
               and m.is_valid and m.state = 'active' and m.strength > 0.05 and m.source is distinct from 'conversation'
               and (case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end) = 'errors_and_fixes'
               and (m.namespace || '/') ^@ any (p_scopes)
             order by m.created_at desc, m.id desc
             limit p_max_per_kind) x;
    ids := ids || v_ids;
    details := details || array_fill(null::text, array[cardinality(v_ids)]);
    kinds := kinds || array_fill('recent_error'::text, array[cardinality(v_ids)]);
    weights := weights || array_fill(0.6::double precision, array[cardinality(v_ids)]);
  end if;
end;
$function$;

-- public.hybrid_search
CREATE OR REPLACE FUNCTION public.hybrid_search(query_text text, query_embedding extensions.vector DEFAULT NULL::extensions.vector, match_namespaces text[] DEFAULT NULL::text[], match_count integer DEFAULT 15, similarity_threshold double precision DEFAULT 0.7, match_embedding_model text DEFAULT NULL::text, match_owner uuid DEFAULT auth.uid(), search_mode text DEFAULT 'hybrid'::text, graph_depth integer DEFAULT 1, graph_edge_types text[] DEFAULT NULL::text[], filter_after timestamp with time zone DEFAULT NULL::timestamp with time zone, filter_before timestamp with time zone DEFAULT NULL::timestamp with time zone, filter_memory_types text[] DEFAULT NULL::text[], filter_categories text[] DEFAULT NULL::text[], prefer_memory_types text[] DEFAULT NULL::text[], recency_weight double precision DEFAULT 0, keyword_threshold double precision DEFAULT NULL::double precision, as_of timestamp with time zone DEFAULT NULL::timestamp with time zone, entity_terms text[] DEFAULT NULL::text[], graph_episodes boolean DEFAULT false, query_complexity text DEFAULT NULL::text)
 RETURNS TABLE(id uuid, content text, memory_type text, namespace text, strength double precision, priority text, importance smallint, pinned boolean, source text, metadata jsonb, session_id text, access_count integer, last_accessed_at timestamp with time zone, created_at timestamp with time zone, updated_at timestamp with time zone, max_relation_strength real, category text, similarity double precision, keyword_rank integer, keyword_score double precision, keyword_coverage double precision, vector_rank integer, graph_rank integer, graph_via uuid, graph_edge text, relevance double precision)
 LANGUAGE plpgsql
 STABLE ROWS 20
 SET search_path TO ''
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
#variable_conflict use_column
declare
  v_bases      text[];
  v_scopes     text[];
  v_k          double precision;
  v_w_kw       double precision := 0;
  v_w_vec      double precision := 0;
  v_w_graph    double precision := 0;
  v_w_recent   double precision := greatest(coalesce(recency_weight, 0), 0);
  v_max_terms  integer;
  v_df_cap     integer;
  v_min_cov    double precision;
  v_k1         double precision;
  v_b          double precision;
  v_seed_count integer;
  v_share      double precision;
  v_kw_share   double precision[] := '{}';
  v_vec_share  double precision[] := '{}';
  v_n          integer;
  v_terms_all  tsquery[];
  v_excludes   tsquery[];
  v_ids        uuid[];
  v_df         integer;
  v_terms_q    tsquery[] := '{}';
  v_terms_idf  double precision[] := '{}';
  v_exclude    tsquery;
  v_cand       uuid[] := '{}';
  v_dfs        integer[];
  v_idf_total  double precision := 0;
  v_pool       integer;
  v_vec_pool   integer;
  -- signal lists (parallel arrays, best first)
  v_kw_ids     uuid[] := '{}';
  v_kw_score   double precision[] := '{}';
  v_kw_cov     double precision[] := '{}';
  v_vec_ids    uuid[] := '{}';
  v_vec_sims   double precision[] := '{}';
  v_conf       double precision;
  v_best_cov   double precision;
  v_seeds      uuid[] := '{}';
  v_g_ids      uuid[] := '{}';
  v_g_weight   double precision[] := '{}';
  v_g_via      uuid[] := '{}';
  v_g_edge     text[] := '{}';
  v_types      text[] := coalesce(graph_edge_types, array['related_to', 'supersedes', 'derived_from', 'temporal', 'causal']);
begin
  if match_count is null or match_count < 1 or match_count > 200 then
    raise exception 'match_count must be between 1 and 200, got %', match_count using errcode = '22023';
  end if;
  if search_mode is null or search_mode not in ('hybrid', 'vector', 'keyword') then
    raise exception 'search_mode must be hybrid, vector or keyword, got %', search_mode using errcode = '22023';
  end if;
  if graph_depth is null or graph_depth < 0 or graph_depth > 4 then
    raise exception 'graph_depth must be between 0 and 4, got %', graph_depth using errcode = '22023';
  end if;
  if query_complexity is not null and query_complexity not in ('simple', 'complex') then
    raise exception 'query_complexity must be simple or complex, got %', query_complexity using errcode = '22023';
  end if;

  -- Scopes as in match_memories: bases without the trailing '/', each once, none inside another.
  with bases as (
    select distinct rtrim(s, '/') as base
      from unnest(coalesce(match_namespaces, '{}'::text[])) as s
     where s is not null and rtrim(s, '/') <> ''
  )
  select coalesce(array_agg(b.base order by b.base), '{}') into v_bases
    from bases b
   where not exists (select from bases o where o.base <> b.base and (b.base || '/') ^@ (o.base || '/'));
  if cardinality(v_bases) = 0 then
    raise exception 'at least one namespace scope is required' using errcode = '22023';
  end if;
  select array_agg(b || '/') into v_scopes from unnest(v_bases) b;

  -- Settings (one read) and weights.
  select max(s.value) filter (where s.name = 'rrf_k'),
         max(s.value) filter (where s.name = 'keyword_max_terms'),
         max(s.value) filter (where s.name = 'keyword_df_cap'),
         max(s.value) filter (where s.name = 'keyword_min_coverage'),
         max(s.value) filter (where s.name = 'bm25_k1'),
         max(s.value) filter (where s.name = 'bm25_b'),
         max(s.value) filter (where s.name = 'graph_seed_count'),
         max(s.value) filter (where s.name = case when query_complexity = 'complex' then 'fusion_score_share_complex'
                                                    else 'fusion_score_share' end)
    into v_k, v_max_terms, v_df_cap, v_conf, v_k1, v_b, v_seed_count, v_share
    from public.memory_settings s
   where s.name in ('rrf_k', 'keyword_max_terms', 'keyword_df_cap', 'keyword_min_coverage', 'bm25_k1', 'bm25_b',
                    'graph_seed_count', 'fusion_score_share', 'fusion_score_share_complex');
  v_share := least(1, greatest(0, coalesce(v_share, 0)));
  v_min_cov := coalesce(keyword_threshold, v_conf);
  select w.keyword, w.vector, w.graph into v_w_kw, v_w_vec, v_w_graph
    from public.memory_search_weights w
   where w.embedding_model in (coalesce(match_embedding_model, '*'), '*')
   order by (w.embedding_model = '*')
   limit 1;
  v_w_kw := coalesce(v_w_kw, 1); v_w_vec := coalesce(v_w_vec, 1); v_w_graph := coalesce(v_w_graph, 0.5);
  if search_mode = 'vector' then v_w_kw := 0; v_w_graph := 0; v_w_recent := 0; end if;
  if search_mode = 'keyword' then v_w_vec := 0; v_w_graph := 0; v_w_recent := 0; end if;
  -- Without hops the graph signal is only the lookup of the names a who/what question asks about.
  if graph_depth = 0 and cardinality(coalesce(entity_terms, '{}')) = 0 then v_w_graph := 0; end if;
  if query_embedding is null or match_embedding_model is null then v_w_vec := 0; end if;
  v_pool := greatest(match_count * 3, 30);
  -- The vector list is only as deep as the answer (at least 20): in a big scope each further
  -- neighbour costs HNSW work under the filters, and a deep vector list adds little to the fusion.
  v_vec_pool := greatest(match_count, 20);

  -- The query's terms, and its exclusions (-word, -"a phrase"): a memory matching an exclusion is
  -- left out whichever signal finds it (the keyword, vector and graph lists alike). Without the
  -- keyword signal, the terms are read only when the text has an exclusion (reading them costs
  -- about as much as a small scope's vector search).
  if v_w_kw > 0 or query_text ~ '(^|\s)-("|[[:alpha:]][^\s"])' then
    select coalesce(array_agg(t.query order by t.ord) filter (where t.kind <> 'exclude'), '{}'),
           coalesce(array_agg(t.query order by t.ord) filter (where t.kind = 'exclude'), '{}')
      into v_terms_all, v_excludes
      from public.memory_keyword_terms(query_text, v_max_terms) with ordinality as t(term, kind, query, ord);
    select string_agg(q::text, ' | ')::tsquery into v_exclude from unnest(v_excludes) q;
  end if;

  -- Keyword signal. Each term's matches in scope, counted up to the cap (its document frequency);
  -- rare terms bring their matches in as candidates.
  if v_w_kw > 0 then
    -- The corpus size for idf, at least 1,000: a young tenant's few memories say little about how
    -- common a word is (with 3 memories, a word in one of them would look as common as "the").
    -- The scope is counted only to keyword_df_cap * 5 + 1: below 1,000 (the default cap, 25,
    -- counts to 126) the count cannot change the figure, and is not made.
    v_n := case when v_df_cap * 5 + 1 <= 1000 then 1000
                else greatest(public.memory_scope_size(match_owner, v_bases, v_df_cap * 5), 1000) end;
    -- Document frequencies (capped) and candidates, through the index (memory_search.keyword_postings).
    select p.term_df, p.candidates into v_dfs, v_cand
      from memory_search.keyword_postings(match_owner, v_scopes, v_terms_all, v_df_cap, v_pool * 2, as_of) p;
    for i in 1 .. coalesce(cardinality(v_terms_all), 0) loop
      v_df := coalesce(v_dfs[i], v_df_cap + 1);
      -- A term no memory has still counts in the best possible score (coverage's denominator):
      -- a memory that matches the common words of a question but not its rare ones is no answer.
      v_idf_total := v_idf_total + ln(1 + (greatest(v_n, v_df) - v_df + 0.5) / (v_df + 0.5));
      continue when v_df = 0;
      v_terms_q := v_terms_q || v_terms_all[i];
      v_terms_idf := v_terms_idf || ln(1 + (greatest(v_n, v_df) - v_df + 0.5) / (v_df + 0.5));
    end loop;

    -- BM25 over the candidates: sum of matched terms' idf, saturated and length-normalised
    -- (memories are a sentence or two, so a term's frequency in one is almost always 1).
    if coalesce(cardinality(v_cand), 0) > 0 and v_idf_total > 0 then
      with cand as (
        select distinct c.id from unnest(v_cand) c(id)
      ),
      matched as (
        select m.id, length(m.fts)::double precision as dl,
               (select coalesce(sum(t.idf), 0)
                  from unnest(v_terms_q, v_terms_idf) as t(q, idf)
                 where m.fts @@ t.q) as idf_sum
          from cand c
          cross join lateral (select m.* from public.devai_memories m where m.id = c.id offset 0) m
         where m.owner_id = match_owner
           and (as_of is not null or (m.is_valid and m.state = 'active' and m.strength > 0.05))
           and m.source is distinct from 'conversation'
           and (m.namespace || '/') ^@ any (v_scopes)
           and (v_exclude is null or not (m.fts @@ v_exclude))
           and (filter_after is null or m.created_at >= filter_after)
           and (filter_before is null or m.created_at < filter_before)
           and (filter_memory_types is null or m.memory_type = any (filter_memory_types))
           and (filter_categories is null
                or (case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end)
                   = any (filter_categories))
      ),
      scored as (
        select x.id,
               x.idf_sum * (v_k1 + 1)
                 / (1 + v_k1 * (1 - v_b + v_b * x.dl / greatest((select avg(y.dl) from matched y), 1))) as score
          from matched x
      ),
      ranked as (
        select s.id, s.score, least(1, s.score / (v_idf_total * (v_k1 + 1) / (1 + v_k1))) as coverage
          from scored s
         where s.score > 0
         order by s.score desc, s.id
         limit v_pool
      )
      select coalesce(array_agg(r.id order by r.score desc, r.id), '{}'),
             coalesce(array_agg(r.score order by r.score desc, r.id), '{}'),
             coalesce(array_agg(r.coverage order by r.score desc, r.id), '{}')
        into v_kw_ids, v_kw_score, v_kw_cov
        from ranked r;
    end if;
  end if;

  -- Vector signal: match_memories over the same scopes (exact or HNSW by scope size), filtered,
  -- down to half the threshold (companions of an answer, see below).
  if v_w_vec > 0 then
    select coalesce(array_agg(v.id order by v.similarity desc, v.id), '{}'),
           coalesce(array_agg(v.similarity order by v.similarity desc, v.id), '{}')
      into v_vec_ids, v_vec_sims
      from (select mm.id, mm.similarity
              from public.match_memories(
                     query_embedding, v_bases[1],
                     case when filter_after is null and filter_before is null and filter_memory_types is null
                               and filter_categories is null and v_exclude is null
                          then v_vec_pool else least(v_vec_pool * 4, 200) end,
                     similarity_threshold / 2, match_owner, match_embedding_model, v_bases[2:], as_of,
                     with_relations => false) mm
              join public.devai_memories m on m.id = mm.id
             where (v_exclude is null or not (m.fts @@ v_exclude))
               and (filter_after is null or m.created_at >= filter_after)
               and (filter_before is null or m.created_at < filter_before)
               and (filter_memory_types is null or m.memory_type = any (filter_memory_types))
               and (filter_categories is null
                    or (case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end)
                       = any (filter_categories))
             order by mm.similarity desc, mm.id
             limit v_vec_pool) v;
  end if;

  -- Does the query have an answer at all? Only when its best memory reaches a floor: keyword
  -- coverage keyword_threshold, or cosine similarity_threshold. Then memories reaching half those
  -- floors come with it (a multi-part answer's other parts match less of the question).
  v_best_cov := coalesce((select max(c) from unnest(v_kw_cov) c), 0);
  -- The answer to a question of many terms is usually spread over several memories, none
  -- matching most of it: past five terms, the floor is what five of them would need.
  v_min_cov := v_min_cov * least(1, 5.0 / greatest(cardinality(v_terms_all), 1));
  if not ((cardinality(v_kw_ids) > 0 and v_best_cov >= v_min_cov)
          or (cardinality(v_vec_ids) > 0 and v_vec_sims[1] > similarity_threshold)) then
    return;
  end if;
  -- A keyword list whose best match covers little of the query is mostly common words: it counts
  -- less, from nothing at a third of keyword_min_coverage to its full weight at it.
  if search_mode = 'hybrid' and v_conf > 0 then
    v_w_kw := v_w_kw * least(1, greatest(0, (v_best_cov - v_conf / 3) / (v_conf * 2 / 3)));
  end if;

  -- Each memory's share of the keyword and vector lists (1 for a list's first, parallel to the
  -- lists): its reciprocal rank (rrf_k + 1) / (rrf_k + rank), blended with its score as a share of
  -- the list's best by fusion_score_share (fusion_score_share_complex for a complex question: by
  -- rank alone, a memory answering one part of it, that one list ranks 3rd and the other does not
  -- hold, loses to memories both rank 10th-30th; docs/retrieval.md#fusion). Ranks are competition
  -- ranks: memories a signal scores alike get the same share.
  select coalesce(array_agg((1 - v_share) * (v_k + 1) / (v_k + x.rnk) + v_share * x.score / v_kw_score[1]
                            order by x.ord), '{}')
    into v_kw_share
    from (select y.score, y.ord, rank() over (order by y.score desc) as rnk
            from unnest(v_kw_score) with ordinality as y(score, ord)) x;
  select coalesce(array_agg((1 - v_share) * (v_k + 1) / (v_k + x.rnk)
                            + v_share * case when v_vec_sims[1] > 0 then greatest(x.sim, 0) / v_vec_sims[1] else 0 end
                            order by x.ord), '{}')
    into v_vec_share
    from (select y.sim, y.ord, rank() over (order by y.sim desc) as rnk
            from unnest(v_vec_sims) with ordinality as y(sim, ord)) x;

  -- Graph signal: from the best memories that pass on their own, hop over relations.
  if v_w_graph > 0 then
    select coalesce(array_agg(s.id order by s.fused desc, s.id), '{}') into v_seeds
      from (select u.id, sum(u.f) as fused
              from (select k.id, v_w_kw * k.sh as f
                      from unnest(v_kw_ids, v_kw_cov, v_kw_share) as k(id, cov, sh)
                     where k.cov >= v_min_cov / 2
                    union all
                    select v.id, v_w_vec * v.sh
                      from unnest(v_vec_ids, v_vec_share) as v(id, sh)) u
             group by u.id
             order by sum(u.f) desc, u.id
             limit v_seed_count) s;
    -- public.memory_graph_neighbours: bounded BFS over typed edges valid then, inside the scopes,
    -- both directions; entity lookup for who/what questions. Raw episodes only when asked for,
    -- at half weight.
    with reached as (
      select n.id, n.via, n.edge_type as edge, n.weight as w, false as lookup
        from public.memory_graph_neighbours(v_seeds, v_types, greatest(graph_depth, 1), least(v_pool, 500), as_of,
                                            v_bases, 'both') n
       where graph_depth > 0
      union all
      select e.id, e.entity_id, 'entity', e.weight, true
        from public.memory_entity_lookup(entity_terms, least(v_pool, 500), as_of, v_bases, match_owner) e
       where cardinality(coalesce(entity_terms, '{}')) > 0
      union all
      -- One hop through the entities the best hits name (a file, a package, an error code): the
      -- other memories naming them, weighted down by how common the entity is. Entities named by
      -- more than keyword_df_cap memories say little and are not followed.
      select l2.memory_id, l1.memory_id, 'entity',
             0.5 * l1.confidence * l2.confidence / ln(2 + e.mention_count), false
        from public.memory_entity_links l1
        join public.memory_entities e on e.id = l1.entity_id and e.mention_count <= v_df_cap
        join public.memory_entity_links l2 on l2.entity_id = l1.entity_id and l2.memory_id <> l1.memory_id
        cross join lateral (select m2 from public.devai_memories m2 where m2.id = l2.memory_id offset 0) v2
       where graph_depth > 0
         and l1.memory_id = any (v_seeds)
         and public.memory_graph_visible(v2.m2, as_of, v_scopes)
    ),
    best as (
      select distinct on (r.id) r.id, r.via, r.edge,
             r.w * case when m.source = 'conversation' then 0.5 else 1 end as w
        from reached r
        cross join lateral (select m.* from public.devai_memories m where m.id = r.id offset 0) m
       -- A hop back to a best hit adds nothing; a name the question asks about counts for a best
       -- hit too (the lookup is a direct match, not a hop from it).
       where (r.lookup or not (r.id = any (v_seeds)))
         and (graph_episodes or m.source is distinct from 'conversation')
         and (as_of is not null or m.strength > 0.05) -- faded: out of every signal
         and (v_exclude is null or not (m.fts @@ v_exclude))
         and (filter_after is null or m.created_at >= filter_after)
         and (filter_before is null or m.created_at < filter_before)
         and (filter_memory_types is null or m.memory_type = any (filter_memory_types))
         and (filter_categories is null
              or (case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end)
                 = any (filter_categories))
       order by r.id, r.w desc, r.via
    ),
    top as (
      select b.* from best b order by b.w desc, b.id limit v_pool
    )
    select coalesce(array_agg(t.id order by t.w desc, t.id), '{}'),
           coalesce(array_agg(t.w order by t.w desc, t.id), '{}'),
           coalesce(array_agg(t.via order by t.w desc, t.id), '{}'),
           coalesce(array_agg(t.edge order by t.w desc, t.id), '{}')
      into v_g_ids, v_g_weight, v_g_via, v_g_edge
      from top t;
  end if;

  -- Fusion: weighted shares of each list (keyword and vector: rank blended with score, above;
  -- graph and recency: reciprocal rank), normalised by what a memory first in every list that
  -- found anything would get (so a query with no keyword hit is not capped by the keyword
  -- weight), times 1.25 for a preferred type (capped at 1). A pinned single-signal mode ranks by
  -- that signal's own score instead.
  return query
  with kw as (
    select k.id, (rank() over (order by k.score desc))::integer as rnk, k.score, k.cov, k.sh
      from unnest(v_kw_ids, v_kw_score, v_kw_cov, v_kw_share) as k(id, score, cov, sh)
  ),
  vec as (
    select v.id, (rank() over (order by v.sim desc))::integer as rnk, v.sh
      from unnest(v_vec_ids, v_vec_sims, v_vec_share) as v(id, sim, sh)
  ),
  gr as (
    select g.id, (rank() over (order by g.w desc))::integer as rnk, g.via, g.edge
      from unnest(v_g_ids, v_g_weight, v_g_via, v_g_edge) as g(id, w, via, edge)
  ),
  candidates as (
    select u.id from (select kw.id from kw where kw.cov >= v_min_cov / 2
                      union select vec.id from vec
                      union select gr.id from gr) u
  ),
  recent as materialized (
    -- Only when recency counts ('when' questions), and once: not a plan per candidate.
    select c.id, row_number() over (order by m.created_at desc, c.id)::integer as rnk
      from candidates c
      cross join lateral (select m.created_at from public.devai_memories m where m.id = c.id offset 0) m
     where v_w_recent > 0
  ),
  fused as (
    select c.id, kw.rnk as kw_rnk, kw.score as kw_score, kw.cov as kw_cov, vec.rnk as vec_rnk,
           gr.rnk as g_rnk, gr.via as g_via, gr.edge as g_edge,
           (coalesce(v_w_kw * kw.sh, 0) + coalesce(v_w_vec * vec.sh, 0)
             + coalesce(v_w_graph * (v_k + 1) / (v_k + gr.rnk), 0) + coalesce(v_w_recent * (v_k + 1) / (v_k + rc.rnk), 0))
           / (case when cardinality(v_kw_ids) > 0 then v_w_kw else 0 end
              + case when cardinality(v_vec_ids) > 0 then v_w_vec else 0 end
              + case when cardinality(v_g_ids) > 0 then v_w_graph else 0 end
              + v_w_recent) as rel
      from candidates c
      left join kw on kw.id = c.id
      left join vec on vec.id = c.id
      left join gr on gr.id = c.id
      left join recent rc on rc.id = c.id
  ),
  final as (
    select f.*, m.strength as m_strength, m.created_at as m_created,
           -- A single signal keeps its own score (vector: cosine; keyword: coverage): nothing is fused.
           least(1, case search_mode when 'vector' then coalesce(vs.sim, 0)
                                     when 'keyword' then coalesce(f.kw_cov, 0)
                                     else f.rel end
                    * case when m.memory_type = any (coalesce(prefer_memory_types, '{}')) then 1.25 else 1 end) as relv
      from fused f
      cross join lateral (select m.strength, m.created_at, m.memory_type
                            from public.devai_memories m where m.id = f.id offset 0) m
      left join (select v.id, v.sim from unnest(v_vec_ids, v_vec_sims) as v(id, sim)) vs on vs.id = f.id
  ),
  top as (
    select x.* from final x order by x.relv * x.m_strength desc, x.m_created desc, x.id limit match_count
  )
  select m.id, case when as_of is null then m.content else (select a.content from public.memory_at(m.mrow, as_of) a) end,
         m.memory_type, m.namespace, m.strength, m.priority, m.importance, m.pinned,
         m.source, m.metadata, m.session_id, m.access_count, m.last_accessed_at, m.created_at, m.updated_at,
         rs.strength,
         case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end,
         -- Cosine similarity for every returned memory (the vector list has most of them already).
         coalesce((select v.sim from unnest(v_vec_ids, v_vec_sims) as v(id, sim) where v.id = m.id),
                  case when query_embedding is not null and m.embedding is not null
                            and m.embedding_model = match_embedding_model
                       then 1 - (m.embedding operator(extensions.<=>) query_embedding) end),
         t.kw_rnk, t.kw_score, t.kw_cov, t.vec_rnk, t.g_rnk, t.g_via, t.g_edge, t.relv
    from top t
    cross join lateral (select m.*, m as mrow from public.devai_memories m where m.id = t.id offset 0) m
    left join memory_search.relation_strengths(match_owner, array(select t2.id from top t2), as_of, v_scopes) rs
      on rs.id = t.id
   order by t.relv * t.m_strength desc, t.m_created desc, t.id;
end;
$function$;

-- public.query_memories
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
  -- Per-category caps and the filters below apply after the search: look further than match_count.
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
             entity_terms => entity_terms, graph_episodes => graph_episodes) h
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
       and (case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end) = any (v_all)
       -- The time window and the exclusions hold for them as for what the search found.
       and (filter_after is null or m.created_at >= filter_after)
       and (filter_before is null or m.created_at < filter_before)
       and (v_exclude is null or not (m.fts @@ v_exclude))
       and not exists (select 1 from found f where f.id = m.id)
     order by m.importance desc, m.updated_at desc, m.id
     limit match_count
  ),
  candidates as (
    select f.id, f.relevance, f.similarity, f.keyword_rank, f.keyword_score, f.keyword_coverage, f.vector_rank,
           f.graph_rank, f.graph_via, f.graph_edge
      from found f
    union all
    select e.id, e.relevance, null, null, null, null, null, null, null, null from everything e
  ),
  eligible as (
    select c.*, m.strength as m_strength, m.created_at as m_created,
           case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end as cat
      from candidates c
      cross join lateral (select m.* from public.devai_memories m where m.id = c.id offset 0) m
     where (filter_user_id is null or m.metadata ->> 'user_id' = filter_user_id)
       and (filter_agent_id is null or m.metadata ->> 'agent_id' = filter_agent_id)
       and (filter_run_id is null or m.metadata ->> 'run_id' = filter_run_id)
       and (filter_actor_id is null or m.metadata ->> 'actor_id' = filter_actor_id)
       and (filter_role is null or m.metadata ->> 'role' = filter_role)
       and (filter_pinned is null or m.pinned = filter_pinned)
       and (filter_importance_min is null or m.importance >= filter_importance_min)
       and (filter_importance_max is null or m.importance <= filter_importance_max)
       and (filter_updated_after is null or m.updated_at >= filter_updated_after)
       and (filter_updated_before is null or m.updated_at < filter_updated_before)
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
  select m.id, case when as_of is null then m.content else (select a.content from public.memory_at(m.mrow, as_of) a) end,
         t.similarity, m.memory_type, m.namespace, t.cat, t.cat_context,
         m.strength, m.priority, m.importance, m.pinned, m.source, m.metadata, m.session_id,
         m.access_count, m.last_accessed_at, m.created_at, m.updated_at,
         rs.strength,
         t.keyword_rank, t.keyword_score, t.keyword_coverage, t.vector_rank, t.graph_rank, t.graph_via, t.graph_edge,
         t.relevance
    from top t
    cross join lateral (select m.*, m as mrow from public.devai_memories m where m.id = t.id offset 0) m
    left join memory_search.relation_strengths(match_owner, array(select t2.id from top t2), as_of, v_scopes) rs
      on rs.id = t.id
   order by t.relevance * t.m_strength desc, t.m_created desc, t.id;
end;
$function$;

-- public.match_memories: with_relations false leaves max_relation_strength null (hybrid_search's
-- vector list uses ids and similarities only, and ranks what it returns with its own call).
drop function public.match_memories(extensions.vector, text, integer, double precision, uuid, text, text[], timestamptz);
CREATE FUNCTION public.match_memories(query_embedding extensions.vector, match_namespace text, match_count integer DEFAULT 15, similarity_threshold double precision DEFAULT 0.7, match_owner uuid DEFAULT auth.uid(), match_embedding_model text DEFAULT 'text-embedding-3-small'::text, match_namespaces text[] DEFAULT NULL::text[], as_of timestamp with time zone DEFAULT NULL::timestamp with time zone, with_relations boolean DEFAULT true)
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

revoke all on function public.match_memories(extensions.vector, text, integer, double precision, uuid, text, text[], timestamptz, boolean) from public, anon;
grant execute on function public.match_memories(extensions.vector, text, integer, double precision, uuid, text, text[], timestamptz, boolean) to authenticated, service_role;

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
      from (select o.memory_a as id, o.memory_b::text as other from public.context_open_contradictions(match_namespaces, 10, match_owner) o
            union all
            select o.memory_b, o.memory_a::text from public.context_open_contradictions(match_namespaces, 10, match_owner) o) c;
  end if;

  -- Each memory by its id (the primary key), read under RLS.
  return query
  select r.id, r.kind, r.detail, r.weight,
         m.content, m.memory_type, m.namespace, m.strength, m.priority, m.importance, m.pinned, m.source,
         m.metadata, m.created_at,
         case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end,
         rs.strength,
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
    left join memory_search.relation_strengths(match_owner, v_ids, null, v_scopes) rs on rs.id = m.id
   order by r.kind, r.weight desc, r.id;
end;
$function$;
