-- Memories read by their ids, whatever the sizes of the tenants.
--
-- Under RLS every read of public.devai_memories carries owner_id = (select auth.uid()), a value
-- the planner cannot know when it plans, so it takes the tenant for an average one. Where most
-- tenants are small and one is big (a deployment with many occasional users and a few heavy ones),
-- the average tenant is a few dozen memories, and a join of a search's few ids with the table
-- looked cheapest as a scan of "the tenant" (a hash join, or a nested loop with the tenant
-- outside). For the big tenant that is all of its memories, read once per join: with 3,000
-- memories among 300 one-memory tenants, a retrieval (public.retrieve_for_turn, keyword signal,
-- two graph hops, related bullets) read all the tenant's memories six times, 58 ms, 41 of them
-- for the related bullets (a nested loop probing the relations once per memory of the tenant),
-- where reading by id takes under a millisecond. The 100k bench did not show it: its average tenant is 500 memories, large
-- enough that the same joins were planned by id.
--
-- Each of those joins now looks its memories up one by one: a lateral subquery by id with
-- `offset 0`, which the planner cannot flatten into a join, so it is always a probe of the primary
-- key (two hundred ids, two hundred probes). In:
--   public.hybrid_search       the keyword signal's matches, the entity hop, the graph signal's
--                              hops, the recency list, the fused candidates (5 joins)
--   public.retrieve_for_turn   the related bullets; the delta's merged memories and their successors
--   public.memory_feedback, public.memory_cited_files   the usage feedback of a search's ids
--   public.query_memories      memory.query's candidates
--   public.context_candidates  the candidates of context assembly (its lateral read had no
--                              `offset 0` and was flattened into the same join)
--   public.record_context_assembly  the check that each injected memory is the caller's
--   public.record_memory_usage the usage report's known ids; its cited memories are now read and
--                              locked through public.lock_retrieved_memories (20261128000000), as
--                              the write-behind's are
-- and the UPDATEs that write what was read (the write-behind's batch, reinforce_memories, a usage
-- report) join rows the planner expects one of (below: an UPDATE's target cannot be a lateral
-- lookup). What each function computes and returns is unchanged; the bodies are those of their
-- last migrations (hybrid_search and retrieve_for_turn 20261125400000, query_memories
-- 20261125760100, memory_feedback, memory_cited_files and context_candidates 20261125760200,
-- record_context_assembly and record_memory_usage 20261124600100, record_retrievals 20261128000000)
-- but for these reads and writes. CREATE OR REPLACE keeps their grants. pgTAP
-- 77_reads_by_id_whatever_the_tenant_sizes counts the rows each of these calls reads;
-- bench/tenants/skewed.sh times them (bench/README.md, "tenant sizes").

-- Statements that join the rows of these two functions to public.devai_memories by id (the
-- UPDATEs of the write-behind's batch, of reinforce_memories and of a usage report) are planned
-- for one row from them, so that each memory is looked up by its id: with the 20 rows declared
-- before (and the batch's arrays, which the planner counts), an UPDATE still looked cheaper as a
-- hash join over "the tenant" where the average tenant is small (a batch of 200 read all 20,000
-- memories of a big tenant among 2,000 tenants of 40). Against one row, a scan of the tenant is
-- cheaper only where tenants average a memory or two.
alter function public.lock_retrieved_memories(jsonb) rows 1;

-- A write-behind batch's new values, one row per memory, for public.record_retrievals' UPDATE (as
-- lock_retrieved_memories above: the planner expects one row, so the UPDATE finds each by its id).
create function memory_search.reinforcement_rows(p_ids uuid[], p_counts integer[], p_lasts timestamptz[],
                                                 p_strengths double precision[])
returns table (id uuid, access_count integer, last_accessed_at timestamptz, strength double precision)
language plpgsql
immutable
rows 1
set search_path = ''
as $$
begin
  -- plpgsql: an sql function would be inlined into the UPDATE, and its row estimate with it.
  return query select * from unnest(p_ids, p_counts, p_lasts, p_strengths);
end;
$$;
revoke all on function memory_search.reinforcement_rows(uuid[], integer[], timestamptz[], double precision[]) from public, anon;
grant execute on function memory_search.reinforcement_rows(uuid[], integer[], timestamptz[], double precision[])
  to authenticated, service_role;

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
  if graph_depth = 0 then v_w_graph := 0; end if;
  if query_embedding is null or match_embedding_model is null then v_w_vec := 0; end if;
  v_pool := greatest(match_count * 3, 30);
  -- The vector list is only as deep as the answer (at least 20): in a big scope each further
  -- neighbour costs HNSW work under the filters, and a deep vector list adds little to the fusion.
  v_vec_pool := greatest(match_count, 20);

  -- Keyword signal. Each term's matches in scope, counted up to the cap (its document frequency);
  -- rare terms bring their matches in as candidates.
  if v_w_kw > 0 then
    -- The corpus size for idf, at least 1,000: a young tenant's few memories say little about how
    -- common a word is (with 3 memories, a word in one of them would look as common as "the").
    -- The scope is counted only to keyword_df_cap * 5 + 1: below 1,000 (the default cap, 25,
    -- counts to 126) the count cannot change the figure, and is not made.
    v_n := case when v_df_cap * 5 + 1 <= 1000 then 1000
                else greatest(public.memory_scope_size(match_owner, v_bases, v_df_cap * 5), 1000) end;
    select coalesce(array_agg(t.query order by t.ord) filter (where t.kind <> 'exclude'), '{}'),
           coalesce(array_agg(t.query order by t.ord) filter (where t.kind = 'exclude'), '{}')
      into v_terms_all, v_excludes
      from public.memory_keyword_terms(query_text, v_max_terms) with ordinality as t(term, kind, query, ord);
    select string_agg(q::text, ' | ')::tsquery into v_exclude from unnest(v_excludes) q;
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
                               and filter_categories is null then v_vec_pool else least(v_vec_pool * 4, 200) end,
                     similarity_threshold / 2, match_owner, match_embedding_model, v_bases[2:], as_of) mm
              join public.devai_memories m on m.id = mm.id
             where (filter_after is null or m.created_at >= filter_after)
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
      select n.id, n.via, n.edge_type as edge, n.weight as w
        from public.memory_graph_neighbours(v_seeds, v_types, graph_depth, least(v_pool, 500), as_of, v_bases, 'both') n
      union all
      select e.id, e.entity_id, 'entity', e.weight
        from public.memory_entity_lookup(entity_terms, least(v_pool, 500), as_of, v_bases) e
       where cardinality(coalesce(entity_terms, '{}')) > 0
      union all
      -- One hop through the entities the best hits name (a file, a package, an error code): the
      -- other memories naming them, weighted down by how common the entity is. Entities named by
      -- more than keyword_df_cap memories say little and are not followed.
      select l2.memory_id, l1.memory_id, 'entity',
             0.5 * l1.confidence * l2.confidence / ln(2 + e.mention_count)
        from public.memory_entity_links l1
        join public.memory_entities e on e.id = l1.entity_id and e.mention_count <= v_df_cap
        join public.memory_entity_links l2 on l2.entity_id = l1.entity_id and l2.memory_id <> l1.memory_id
        cross join lateral (select m2 from public.devai_memories m2 where m2.id = l2.memory_id offset 0) v2
       where l1.memory_id = any (v_seeds)
         and public.memory_graph_visible(v2.m2, as_of, v_scopes)
    ),
    best as (
      select distinct on (r.id) r.id, r.via, r.edge,
             r.w * case when m.source = 'conversation' then 0.5 else 1 end as w
        from reached r
        cross join lateral (select m.* from public.devai_memories m where m.id = r.id offset 0) m
       where not (r.id = any (v_seeds))
         and (graph_episodes or m.source is distinct from 'conversation')
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
         (select max(r.strength) from public.memory_relations r
           where r.owner_id = m.owner_id and (r.from_id = m.id or r.to_id = m.id)),
         case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end,
         -- Cosine similarity for every returned memory (the vector list has most of them already).
         coalesce((select v.sim from unnest(v_vec_ids, v_vec_sims) as v(id, sim) where v.id = m.id),
                  case when query_embedding is not null and m.embedding is not null
                            and m.embedding_model = match_embedding_model
                       then 1 - (m.embedding operator(extensions.<=>) query_embedding) end),
         t.kw_rnk, t.kw_score, t.kw_cov, t.vec_rnk, t.g_rnk, t.g_via, t.g_edge, t.relv
    from top t
    cross join lateral (select m.*, m as mrow from public.devai_memories m where m.id = t.id offset 0) m
   order by t.relv * t.m_strength desc, t.m_created desc, t.id;
end;
$function$;

-- public.retrieve_for_turn
CREATE OR REPLACE FUNCTION public.retrieve_for_turn(query_text text, query_embedding extensions.vector DEFAULT NULL::extensions.vector, match_namespaces text[] DEFAULT NULL::text[], match_count integer DEFAULT 15, similarity_threshold double precision DEFAULT 0.7, match_embedding_model text DEFAULT NULL::text, match_owner uuid DEFAULT auth.uid(), search_mode text DEFAULT 'hybrid'::text, graph_depth integer DEFAULT 1, graph_edge_types text[] DEFAULT NULL::text[], filter_after timestamp with time zone DEFAULT NULL::timestamp with time zone, filter_before timestamp with time zone DEFAULT NULL::timestamp with time zone, filter_memory_types text[] DEFAULT NULL::text[], filter_categories text[] DEFAULT NULL::text[], prefer_memory_types text[] DEFAULT NULL::text[], recency_weight double precision DEFAULT 0, keyword_threshold double precision DEFAULT NULL::double precision, as_of timestamp with time zone DEFAULT NULL::timestamp with time zone, entity_terms text[] DEFAULT NULL::text[], graph_episodes boolean DEFAULT false, thread_id text DEFAULT 'default'::text, since_revision bigint DEFAULT NULL::bigint, query_complexity text DEFAULT NULL::text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
 SET search_path TO ''
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
#variable_conflict use_variable
declare
  v_rows     jsonb;
  v_ids      uuid[];
  v_linked   boolean;
  v_prefixes text[];
  v_related  jsonb := '[]';
  v_revision bigint;
  v_changes  jsonb := '[]';
  v_feedback jsonb := '[]';
begin
  select coalesce(jsonb_agg(to_jsonb(h) - 'ordinality' order by h.ordinality), '[]'),
         coalesce(array_agg(h.id order by h.ordinality), '{}'),
         coalesce(bool_or(h.max_relation_strength is not null), false)
    into v_rows, v_ids, v_linked
    from public.hybrid_search(
           query_text => query_text, query_embedding => query_embedding, match_namespaces => match_namespaces,
           match_count => match_count, similarity_threshold => similarity_threshold,
           match_embedding_model => match_embedding_model, match_owner => match_owner, search_mode => search_mode,
           graph_depth => graph_depth, graph_edge_types => graph_edge_types, filter_after => filter_after,
           filter_before => filter_before, filter_memory_types => filter_memory_types,
           filter_categories => filter_categories, prefer_memory_types => prefer_memory_types,
           recency_weight => recency_weight, keyword_threshold => keyword_threshold, as_of => as_of,
           entity_terms => entity_terms, graph_episodes => graph_episodes,
           query_complexity => query_complexity) with ordinality as h;

  if as_of is null then
    v_feedback := public.memory_feedback(v_ids, match_namespaces, match_owner);
  end if;

  if v_linked and as_of is null then
    select coalesce(array_agg(rtrim(s, '/') || '/'), '{}') into v_prefixes
      from unnest(match_namespaces) s where s is not null and rtrim(s, '/') <> '';
    select coalesce(jsonb_agg(jsonb_build_object('id', x.id, 'anchor_id', x.anchor_id, 'content', x.content,
                                                 'strength', x.strength) order by x.strength desc, x.id), '[]')
      into v_related
      from (select m.id, e.anchor_id, m.content, e.strength
              from (select r.to_id as id, r.from_id as anchor_id, r.strength
                      from public.memory_relations r
                     where r.from_id = any (v_ids) and r.relation_type <> 'contradicts'
                    union all
                    select r.from_id, r.to_id, r.strength
                      from public.memory_relations r
                     where r.to_id = any (v_ids) and r.relation_type <> 'contradicts') e
              cross join lateral (select m.* from public.devai_memories m where m.id = e.id offset 0) m
             where m.is_valid and m.state = 'active' and m.source is distinct from 'conversation'
               and not (m.id = any (v_ids))
               and (m.namespace || '/') ^@ any (v_prefixes)
             order by e.strength desc, m.id
             limit 8) x;
  end if;

  select r.revision into v_revision
    from public.memory_thread_revisions r
   where r.owner_id = match_owner and r.thread_id = thread_id;
  v_revision := coalesce(v_revision, 0);
  if since_revision is not null and since_revision < v_revision then
    select coalesce(jsonb_agg(jsonb_build_object(
             'revision', c.revision, 'event', c.event, 'summary', c.summary, 'meta', c.meta,
             'memory_id', c.memory_id,
             'replacement', case when n.id is null then null
                                 else jsonb_build_object('id', n.id, 'content', n.content, 'source', n.source) end)
             order by c.revision desc), '[]')
      into v_changes
      from (select c.* from public.memory_change_log c
             where c.owner_id = match_owner and c.thread_id = thread_id and c.revision > since_revision
             order by c.revision desc
             limit 6) c
      left join lateral (select o.superseded_by from public.devai_memories o
                          where c.event = 'merged' and o.id = c.memory_id offset 0) o on true
      left join lateral (select n.id, n.content, n.source from public.devai_memories n
                          where n.id = o.superseded_by offset 0) n on true;
  end if;

  return jsonb_build_object(
    'memories', v_rows,
    'related', v_related,
    'revision', v_revision,
    'changes', v_changes,
    'weights', public.memory_search_weights_for(coalesce(match_embedding_model, '*')),
    'feedback', v_feedback,
    'now', now());
end;
$function$;

-- public.memory_cited_files
CREATE OR REPLACE FUNCTION public.memory_cited_files(p_ids uuid[], p_owner uuid)
 RETURNS TABLE(memory_id uuid, files text[])
 LANGUAGE plpgsql
 STABLE ROWS 20
 SET search_path TO ''
AS $function$
begin
  return query
  select c.id, array_agg(distinct c.path order by c.path)
    -- Each id probes its rows by key (an id = any (ids) beside the owner let the planner read
    -- the tenant's whole owner index instead: 2 ms a call for the bench's biggest tenant).
    from (select l.memory_id as id, regexp_replace(e.canonical_name, '^(\./)+', '') as path
            from (select distinct u.id from unnest(p_ids) as u(id)) i
            join public.memory_entity_links l on l.memory_id = i.id and l.owner_id = p_owner
            join public.memory_entities e on e.id = l.entity_id and e.entity_type = 'file'
          union all
          select m.id, regexp_replace(x, '^(\./)+', '')
            from (select distinct u.id from unnest(p_ids) as u(id)) i
            cross join lateral (select m.id, m.metadata from public.devai_memories m
                                 where m.id = i.id and m.owner_id = p_owner offset 0) m
           cross join lateral jsonb_array_elements_text(
                  case when jsonb_typeof(m.metadata -> 'files') = 'array' then m.metadata -> 'files'
                       else '[]'::jsonb end) as x) c
   group by c.id;
end;
$function$;

-- public.memory_feedback
CREATE OR REPLACE FUNCTION public.memory_feedback(p_ids uuid[], p_namespaces text[], p_owner uuid DEFAULT auth.uid())
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
 SET search_path TO ''
AS $function$
declare
  v_scopes text[] := public.context_scope_prefixes(p_namespaces);
begin
  return (
  select coalesce(jsonb_agg(jsonb_build_object(
           'id', m.id, 'cited_files', coalesce(f.files, '{}'),
           'citation_count', coalesce(u.citation_count, 0), 'ignore_count', coalesce(u.ignore_count, 0))), '[]')
    from (select distinct x.id from unnest(p_ids) as x(id)) i
    cross join lateral (select m.* from public.devai_memories m where m.id = i.id offset 0) m
    left join public.memory_usage u on u.memory_id = m.id
    left join public.memory_cited_files(p_ids, p_owner) f on f.memory_id = m.id
   where m.owner_id = p_owner and m.is_valid and m.state = 'active' and m.strength > 0.05
     and m.source is distinct from 'conversation'
     and (m.namespace || '/') ^@ any (v_scopes));
end;
$function$;

-- public.query_memories
CREATE OR REPLACE FUNCTION public.query_memories(query_text text, query_embedding extensions.vector, match_namespaces text[], match_agent text, match_categories text[], match_count integer DEFAULT 5, similarity_threshold double precision DEFAULT 0.7, match_embedding_model text DEFAULT 'text-embedding-3-small'::text, match_owner uuid DEFAULT auth.uid(), filter_user_id text DEFAULT NULL::text, filter_agent_id text DEFAULT NULL::text, filter_run_id text DEFAULT NULL::text, filter_actor_id text DEFAULT NULL::text, filter_role text DEFAULT NULL::text, filter_pinned boolean DEFAULT NULL::boolean, filter_importance_min integer DEFAULT NULL::integer, filter_importance_max integer DEFAULT NULL::integer, filter_updated_after timestamp with time zone DEFAULT NULL::timestamp with time zone, filter_updated_before timestamp with time zone DEFAULT NULL::timestamp with time zone, search_mode text DEFAULT 'hybrid'::text, graph_depth integer DEFAULT 1, filter_after timestamp with time zone DEFAULT NULL::timestamp with time zone, filter_before timestamp with time zone DEFAULT NULL::timestamp with time zone, keyword_threshold double precision DEFAULT NULL::double precision, as_of timestamp with time zone DEFAULT NULL::timestamp with time zone, query_complexity text DEFAULT NULL::text)
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
             query_complexity => query_complexity) h
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
         (select max(r.strength) from public.memory_relations r
           where r.owner_id = m.owner_id and (r.from_id = m.id or r.to_id = m.id)),
         t.keyword_rank, t.keyword_score, t.keyword_coverage, t.vector_rank, t.graph_rank, t.graph_via, t.graph_edge,
         t.relevance
    from top t
    cross join lateral (select m.*, m as mrow from public.devai_memories m where m.id = t.id offset 0) m
   order by t.relevance * t.m_strength desc, t.m_created desc, t.id;
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
           where rel.owner_id = m.owner_id and (rel.from_id = m.id or rel.to_id = m.id)),
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

-- public.record_context_assembly
CREATE OR REPLACE FUNCTION public.record_context_assembly(p_session_id text, p_ids uuid[], p_tiers text[], p_levels text[], p_tokens integer[], p_reinforce uuid[], p_thread_id text, p_meta jsonb)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
begin
  if coalesce(cardinality(p_reinforce), 0) > 0 then
    perform count(*) from public.reinforce_memories(p_reinforce);
  end if;
  if p_session_id is not null and coalesce(cardinality(p_ids), 0) > 0 then
    insert into public.context_injections as i (owner_id, session_id, memory_id, tier, level, tokens, injected_at)
    select (select auth.uid()), p_session_id, t.id, t.tier, t.level, t.tokens, now()
      from unnest(p_ids, p_tiers, p_levels, p_tokens) as t(id, tier, level, tokens)
      cross join lateral (select from public.devai_memories m where m.id = t.id offset 0) m
    on conflict (owner_id, session_id, memory_id) do update
       set tier = excluded.tier, level = excluded.level, tokens = excluded.tokens, injected_at = excluded.injected_at;
  end if;
  insert into public.memory_events (owner_id, thread_id, node, op, status, meta)
  values ((select auth.uid()), p_thread_id, 'context', 'search', 'ok', coalesce(p_meta, '{}'::jsonb));
end;
$function$;

-- public.record_memory_usage
CREATE OR REPLACE FUNCTION public.record_memory_usage(p_session_id text, p_retrieved uuid[], p_cited uuid[], p_tokens integer[], p_now timestamp with time zone DEFAULT now())
 RETURNS TABLE(recorded integer, cited integer, unknown uuid[], cited_prefetched integer, predicted_session boolean)
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
#variable_conflict use_column
declare
  v_owner        uuid := (select auth.uid());
  v_step         double precision := public.memory_setting('citation_reinforce_step')::double precision;
  v_base         double precision := public.memory_setting('decay_base')::double precision;
  v_known        uuid[];
  v_known_cited  uuid[];
  v_tokens       bigint;
  v_cited_tokens bigint;
  v_hits         integer;
begin
  if coalesce(cardinality(p_retrieved), 0) <> coalesce(cardinality(p_tokens), 0) then
    raise exception 'p_tokens must have one count per retrieved id' using errcode = '22023';
  end if;
  with r as (
    select distinct on (t.id) t.id, greatest(coalesce(t.tokens, 0), 0) as tokens
      from unnest(coalesce(p_retrieved, '{}'::uuid[]), coalesce(p_tokens, '{}'::integer[])) as t(id, tokens)
     order by t.id
  )
  select coalesce(array_agg(r.id order by r.id), '{}'),
         coalesce(sum(r.tokens), 0),
         coalesce(sum(r.tokens) filter (where r.id = any (coalesce(p_cited, '{}'::uuid[]))), 0)
    into v_known, v_tokens, v_cited_tokens
    from r
    cross join lateral (select from public.devai_memories m where m.id = r.id offset 0) m;
  select coalesce(array_agg(k order by k), '{}') into v_known_cited
    from unnest(v_known) k where k = any (coalesce(p_cited, '{}'::uuid[]));

  insert into public.memory_usage as u
    (memory_id, owner_id, retrieval_count, citation_count, ignore_count, last_reported_at, last_cited_at)
  select k, v_owner, 1, case when k = any (v_known_cited) then 1 else 0 end,
         case when k = any (v_known_cited) then 0 else 1 end, p_now,
         case when k = any (v_known_cited) then p_now end
    from unnest(v_known) k
  on conflict (memory_id) do update
     set retrieval_count = u.retrieval_count + 1,
         citation_count = u.citation_count + excluded.citation_count,
         ignore_count = u.ignore_count + excluded.ignore_count,
         last_reported_at = greatest(u.last_reported_at, excluded.last_reported_at),
         last_cited_at = greatest(u.last_cited_at, excluded.last_cited_at);

  with target as (
    select l.id,
           least(1.0::double precision,
             case when l.priority = 'highest' or l.pinned then l.strength
                  else public.memory_decayed_strength(l.base_strength, l.last_accessed_at, p_now, v_base) + v_step
             end) as reinforced
      from public.lock_retrieved_memories(
             jsonb_build_array(jsonb_build_object('at', p_now, 'ids', to_jsonb(v_known_cited)))) l
  )
  update public.devai_memories m
     set strength = t.reinforced, base_strength = t.reinforced,
         last_accessed_at = greatest(m.last_accessed_at, p_now)
    from target t
   where m.id = t.id;

  predicted_session := exists (select from public.context_prefetch p where p.session_id = p_session_id);
  select count(distinct k)::int into v_hits
    from unnest(v_known_cited) k
   where predicted_session
     and exists (select from public.context_prefetch p where p.session_id = p_session_id and k = any (p.memory_ids));

  insert into public.memory_usage_totals as t
    (owner_id, reports, retrieved, cited, cited_in_predicted_sessions, cited_prefetched, injected_tokens, cited_tokens, updated_at)
  values (v_owner, 1, cardinality(v_known), cardinality(v_known_cited),
          case when predicted_session then cardinality(v_known_cited) else 0 end, v_hits, v_tokens, v_cited_tokens, p_now)
  on conflict (owner_id) do update
     set reports = t.reports + 1,
         retrieved = t.retrieved + excluded.retrieved,
         cited = t.cited + excluded.cited,
         cited_in_predicted_sessions = t.cited_in_predicted_sessions + excluded.cited_in_predicted_sessions,
         cited_prefetched = t.cited_prefetched + excluded.cited_prefetched,
         injected_tokens = t.injected_tokens + excluded.injected_tokens,
         cited_tokens = t.cited_tokens + excluded.cited_tokens,
         updated_at = excluded.updated_at;

  recorded := cardinality(v_known);
  cited := cardinality(v_known_cited);
  unknown := coalesce((select array_agg(distinct x order by x) from unnest(coalesce(p_retrieved, '{}'::uuid[])) x
                        where not (x = any (v_known))), '{}');
  cited_prefetched := v_hits;
  return next;
end;
$function$;

-- public.record_retrievals
CREATE OR REPLACE FUNCTION public.record_retrievals(p_items jsonb)
 RETURNS integer
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
declare
  v_count      integer := 0;
  v_decay_base double precision;
  v_step       double precision;
  v_log_weight double precision;
  v_log_scale  double precision;
  v_memory     record;
  v_at         timestamptz;
  v_strength   double precision;
  v_base       double precision;
  v_accesses   integer;
  v_last       timestamptz;
  -- what the UPDATE writes, one element per memory
  v_ids        uuid[] := '{}';
  v_new_count  integer[] := '{}';
  v_new_last   timestamptz[] := '{}';
  v_new_str    double precision[] := '{}';
begin
  if jsonb_typeof(p_items) is distinct from 'array' then
    raise exception 'record_retrievals takes a jsonb array of searches' using errcode = '22023';
  end if;
  v_decay_base := public.memory_setting('decay_base')::double precision;
  v_step := public.memory_setting('reinforce_step')::double precision;
  v_log_weight := public.memory_setting('reinforce_log_weight')::double precision;
  v_log_scale := public.memory_setting('reinforce_log_scale')::double precision;

  -- Each memory once, with the instants of the searches that used it in the batch's order, read
  -- and locked in one statement, each by its id (public.lock_retrieved_memories).
  for v_memory in select * from public.lock_retrieved_memories(p_items)
  loop
    v_strength := v_memory.strength;
    v_base := v_memory.base_strength;
    v_accesses := v_memory.access_count;
    v_last := v_memory.last_accessed_at;
    -- One access per search that used the memory, in turn.
    foreach v_at in array v_memory.ats loop
      v_strength := public.memory_reinforced_strength(v_strength, v_base, v_accesses, v_last, v_at,
                                                      v_memory.priority = 'highest' or v_memory.pinned,
                                                      v_decay_base, v_step, v_log_weight, v_log_scale);
      v_base := v_strength;
      v_accesses := v_accesses + 1;
      v_last := greatest(v_last, v_at);
      v_count := v_count + 1;
    end loop;
    v_ids := v_ids || v_memory.id;
    v_new_count := v_new_count || v_accesses;
    v_new_last := v_new_last || v_last;
    v_new_str := v_new_str || v_strength;
  end loop;

  -- One row version per memory, all in one statement (each row is locked above), each found by its
  -- id (memory_search.reinforcement_rows).
  update public.devai_memories m
     set access_count = u.access_count, last_accessed_at = u.last_accessed_at,
         strength = u.strength, base_strength = u.strength
    from memory_search.reinforcement_rows(v_ids, v_new_count, v_new_last, v_new_str) u
   where m.id = u.id;

  insert into public.memory_events (owner_id, thread_id, node, op, status, category, sim, meta, ts)
  select auth.uid(), i.v ->> 'thread_id', 'context', 'search', 'ok', i.v ->> 'category',
         (i.v ->> 'sim')::real, i.v -> 'meta', coalesce((i.v ->> 'at')::timestamptz, now())
    from jsonb_array_elements(p_items) with ordinality as i(v, ord)
   where i.v ? 'meta'
   order by i.ord;
  return v_count;
end;
$function$;
