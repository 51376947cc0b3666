-- One name, one form, for the hybrid search's scopes too. Migration 20261210400000 keeps every
-- stored namespace in NFC and has public.memory_scope_prefixes and public.context_scope_prefixes
-- read the scopes they are given in NFC; memory_search.hybrid_search (under public.hybrid_search,
-- which memory-retrieve, memory.query, dedup and context assembly call) still read its
-- match_namespaces as sent, so a direct RPC caller that sends a namespace typed on macOS (NFD)
-- found nothing by any signal. It now reads each scope as rtrim(normalize(s, nfc), '/'), like the
-- prefixes functions. memory_search.keyword_postings is called only by hybrid_search, with the
-- scopes read here, so it needs no change. The scope rules are unchanged: the tenant's own memories,
-- whole path segments. The body is 20261209700000's, with only the scopes' reading changed.
-- pgTAP 99_hybrid_search_reads_scopes_in_nfc.

CREATE OR REPLACE FUNCTION memory_search.hybrid_search(query_text text, query_embedding extensions.vector DEFAULT NULL::extensions.vector, match_namespaces text[] DEFAULT NULL::text[], match_count integer DEFAULT 15, similarity_threshold double precision DEFAULT 0.7, match_embedding_model text DEFAULT NULL::text, match_owner uuid DEFAULT auth.uid(), search_mode text DEFAULT 'hybrid'::text, graph_depth integer DEFAULT 1, graph_edge_types text[] DEFAULT NULL::text[], filter_after timestamp with time zone DEFAULT NULL::timestamp with time zone, filter_before timestamp with time zone DEFAULT NULL::timestamp with time zone, filter_memory_types text[] DEFAULT NULL::text[], filter_categories text[] DEFAULT NULL::text[], prefer_memory_types text[] DEFAULT NULL::text[], recency_weight double precision DEFAULT 0, keyword_threshold double precision DEFAULT NULL::double precision, as_of timestamp with time zone DEFAULT NULL::timestamp with time zone, entity_terms text[] DEFAULT NULL::text[], graph_episodes boolean DEFAULT false, query_complexity text DEFAULT NULL::text, filter_fields jsonb DEFAULT NULL::jsonb, with_related boolean DEFAULT false) RETURNS TABLE(id uuid, content text, memory_type text, namespace text, strength double precision, priority text, importance smallint, pinned boolean, source text, metadata jsonb, session_id text, access_count integer, last_accessed_at timestamp with time zone, created_at timestamp with time zone, updated_at timestamp with time zone, max_relation_strength real, category text, similarity double precision, keyword_rank integer, keyword_score double precision, keyword_coverage double precision, vector_rank integer, graph_rank integer, graph_via uuid, graph_edge text, relevance double precision, related jsonb)
    LANGUAGE plpgsql STABLE ROWS 20
    SET search_path TO ''
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
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
  v_then_ids   uuid[] := '{}';
  v_then_fts   tsvector[] := '{}';
  v_exclude    tsquery;
  v_filtered   boolean;
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
  v_win_ids    uuid[] := '{}';
  v_win_rows   integer;
  v_rel_exclude tsquery;
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

  -- Scopes as in match_memories: bases without the trailing '/', each once, none inside another;
  -- in NFC, the form every stored namespace has (migration 20261210400000).
  with bases as (
    select distinct rtrim(normalize(s, nfc), '/') as base
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
         max(s.value) filter (where s.name = 'exact_scan_max_rows'),
         max(s.value) filter (where s.name = case when query_complexity = 'complex' then 'fusion_score_share_complex'
                                                    else 'fusion_score_share' end)
    into v_k, v_max_terms, v_df_cap, v_conf, v_k1, v_b, v_seed_count, v_win_rows, v_share
    from public.memory_settings s
   where s.name in ('rrf_k', 'keyword_max_terms', 'keyword_df_cap', 'keyword_min_coverage', 'bm25_k1', 'bm25_b',
                    'graph_seed_count', 'exact_scan_max_rows', 'fusion_score_share', 'fusion_score_share_complex');
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
  v_filtered := filter_after is not null or filter_before is not null or filter_memory_types is not null
                or filter_categories is not null or v_exclude is not null or filter_fields is not null;

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
      from memory_search.keyword_postings(match_owner, v_scopes, v_terms_all, v_df_cap, v_pool * 2, as_of, v_exclude,
                                          filter_after, filter_before, filter_memory_types, filter_categories,
                                          filter_fields) p;
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
      -- As of an instant, the words of then of the candidates changed since, once each (read
      -- below for the length and for each term).
      if as_of is not null then
        select coalesce(array_agg(m.id), '{}'), coalesce(array_agg(memory_search.fts_then(m.id, m.content, m.fts, as_of)), '{}')
          into v_then_ids, v_then_fts
          from public.devai_memories m
         where m.id = any (v_cand) and m.updated_at > as_of;
      end if;
      with cand as (
        select distinct c.id from unnest(v_cand) c(id)
      ),
      matched as (
        select m.id, length(w.fts)::double precision as dl,
               (select coalesce(sum(t.idf), 0)
                  from unnest(v_terms_q, v_terms_idf) as t(q, idf)
                 where w.fts @@ t.q) as idf_sum
          from cand c
          cross join lateral (select m.* from public.devai_memories m where m.id = c.id offset 0) m
          -- Its words: as of an instant, those of then (v_then_fts, above).
          cross join lateral (select case when as_of is null or m.updated_at <= as_of then m.fts
                                          else v_then_fts[array_position(v_then_ids, m.id)] end as fts) w
         where m.owner_id = match_owner
           and (as_of is not null or (m.is_valid and m.state = 'active' and m.strength > 0.05))
           and m.source is distinct from 'conversation'
           and (m.namespace || '/') ^@ any (v_scopes)
           and (not v_filtered
                or case when as_of is null
                        then memory_search.passes_filters(m.fts, m.created_at, m.memory_type, m.metadata, m.pinned, m.importance, m.updated_at,
                                                          v_exclude, filter_after, filter_before, filter_memory_types, filter_categories, filter_fields)
                        else memory_search.passes_filters_at(m.id, as_of, v_exclude, filter_after, filter_before, filter_memory_types,
                                                             filter_categories, filter_fields) end)
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

  -- Vector signal: match_memories over the same scopes (exact or HNSW by scope size), the filters
  -- applied while it searches, down to half the threshold (companions of an answer, see below).
  if v_w_vec > 0 then
    select coalesce(array_agg(v.id order by v.similarity desc, v.id), '{}'),
           coalesce(array_agg(v.similarity order by v.similarity desc, v.id), '{}')
      into v_vec_ids, v_vec_sims
      from public.match_memories(
             query_embedding, v_bases[1], v_vec_pool, similarity_threshold / 2, match_owner, match_embedding_model,
             v_bases[2:], as_of, with_relations => false, filter_after => filter_after, filter_before => filter_before,
             filter_memory_types => filter_memory_types, filter_categories => filter_categories,
             filter_exclude => v_exclude, filter_fields => filter_fields) v;
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
      -- other memories naming them, weighted down by how common the entity is: how many live
      -- facts name it now (memory_entity_links_profile, counted to keyword_df_cap + 1; episodes
      -- and forgotten or superseded memories do not make a file common), as of an instant its
      -- mention_count. Entities named by more than keyword_df_cap say little and are not
      -- followed; a followed one's newest keyword_df_cap live facts (and episodes, when asked
      -- for) are read. An edge of type 'entity': a graph_edge_types list that does not name it
      -- leaves the hop out (why/when questions follow only the edges their answer lives on;
      -- docs/retrieval.md#graph).
      -- Each entity once, however many best hits name it: how common it is and its newest facts
      -- were counted and read once per best hit naming it.
      select f.memory_id, l1.memory_id, 'entity',
             0.5 * l1.confidence * f.confidence / ln(2 + f.named), false
        from (
      -- (offset 0: the entity's count and facts are read once, before the best hits naming it are
      -- unnested; a join order with the hits first would read them for each again)
      select ent.seeds, ent.confidences, n.named, l2.memory_id, l2.confidence
        from (select s.entity_id, s.owner_id, array_agg(s.memory_id) as seeds, array_agg(s.confidence) as confidences
                from public.memory_entity_links s
               where graph_depth > 0
                 and (graph_edge_types is null or 'entity' = any (graph_edge_types))
                 and s.memory_id = any (v_seeds)
               group by s.entity_id, s.owner_id) ent
        cross join lateral (
          select case when as_of is null
                      then (select count(*)::integer
                              from (select 1 from public.memory_entity_links x
                                     where x.entity_id = ent.entity_id and x.owner_id = ent.owner_id
                                       and x.profile_kind = 'fact'
                                     limit v_df_cap + 1) c)
                      else (select e.mention_count from public.memory_entities e where e.id = ent.entity_id) end as named
          -- (offset 0: a select of one expression is pulled up into its caller, and the count was
          -- made again wherever named is used, for each of the entity's facts)
          offset 0
        ) n
        cross join lateral (
          (select x.memory_id, x.confidence from public.memory_entity_links x
            where as_of is null and x.entity_id = ent.entity_id and x.owner_id = ent.owner_id and x.profile_kind = 'fact'
            order by x.profile_at desc, x.memory_id desc
            limit v_df_cap)
          union all
          (select x.memory_id, x.confidence from public.memory_entity_links x
            where as_of is null and graph_episodes
              and x.entity_id = ent.entity_id and x.owner_id = ent.owner_id and x.profile_kind = 'episode'
            order by x.profile_at desc, x.memory_id desc
            limit v_df_cap)
          union all
          select x.memory_id, x.confidence from public.memory_entity_links x
           where as_of is not null and x.entity_id = ent.entity_id
        ) l2
       where n.named <= v_df_cap
      offset 0) f
        cross join lateral unnest(f.seeds, f.confidences) as l1(memory_id, confidence)
       where f.memory_id <> l1.memory_id
    ),
    best as (
      -- Each memory reached once, by its best way (the highest weight: an episode's halving is
      -- the memory's own, so it does not change which way is best), then read once: a memory that
      -- several best hits name an entity of was looked up for each, twice (its visibility, then
      -- its fields). Visible (in scope, held then; the entity hop's memories are tested here, the
      -- hops' and the lookup's were already) and kept by the filters.
      select r.id, r.via, r.edge,
             r.w * case when m.source = 'conversation' then 0.5 else 1 end as w
        from (select distinct on (r.id) r.id, r.via, r.edge, r.w
                from reached r
               -- A hop back to a best hit adds nothing; a name the question asks about counts for
               -- a best hit too (the lookup is a direct match, not a hop from it).
               where (r.lookup or not (r.id = any (v_seeds)))
               order by r.id, r.w desc, r.via) r
        cross join lateral (select m.* from public.devai_memories m where m.id = r.id offset 0) m
       where public.memory_graph_visible(m.id, m.namespace, m.is_valid, m.state, m.strength, m.created_at, m.valid_until,
                                         as_of, v_scopes)
         and (graph_episodes or m.source is distinct from 'conversation')
         and (as_of is not null or m.strength > 0.05) -- faded: out of every signal
         and (not v_filtered
              or case when as_of is null
                      then memory_search.passes_filters(m.fts, m.created_at, m.memory_type, m.metadata, m.pinned, m.importance, m.updated_at,
                                                        v_exclude, filter_after, filter_before, filter_memory_types, filter_categories, filter_fields)
                      else memory_search.passes_filters_at(m.id, as_of, v_exclude, filter_after, filter_before, filter_memory_types,
                                                           filter_categories, filter_fields) end)
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

  -- The asked period's own memories: for a when question with a time window (recency counts),
  -- each memory of the window is a candidate by its time alone, ranked by the recency list with
  -- the others. "Which bugs were fixed in the last ten days?" shares few words with the fixes,
  -- and the lexical embedder puts some of them below zero: the keyword and vector lists left out
  -- memories the question's own window holds. The newest v_pool of the window in the scopes,
  -- read newest first from the tenant's (owner_id, created_at) index: at most exact_scan_max_rows
  -- rows (1,000), the bound the vector path reads a window by, and never fewer than v_pool.
  if v_w_recent > 0 and (filter_after is not null or filter_before is not null) and as_of is null then
    select coalesce(array_agg(w.id order by w.created_at desc, w.id desc), '{}') into v_win_ids
      from (select r.id, r.created_at
              from (select m.id, m.created_at, m.namespace, m.is_valid, m.state, m.strength, m.source, m.fts,
                           m.memory_type, m.metadata, m.pinned, m.importance, m.updated_at
                      from public.devai_memories m
                     where m.owner_id = match_owner
                       and (filter_after is null or m.created_at >= filter_after)
                       and (filter_before is null or m.created_at < filter_before)
                     order by m.created_at desc, m.id desc
                     limit greatest(v_pool, coalesce(v_win_rows, 1000))) r
             where r.is_valid and r.state = 'active' and r.strength > 0.05
               and r.source is distinct from 'conversation'
               and (r.namespace || '/') ^@ any (v_scopes)
               and memory_search.passes_filters(r.fts, r.created_at, r.memory_type, r.metadata, r.pinned, r.importance, r.updated_at,
                                                v_exclude, filter_after, filter_before, filter_memory_types, filter_categories, filter_fields)
             order by r.created_at desc, r.id desc
             limit v_pool) w;
  end if;

  -- Fusion: weighted shares of each list (keyword and vector: rank blended with score, above;
  -- graph and recency: reciprocal rank), normalised by what a memory first in every list that
  -- found anything would get (so a query with no keyword hit is not capped by the keyword
  -- weight), times 1.25 for a preferred type (capped at 1). A pinned single-signal mode ranks by
  -- that signal's own score instead.
  -- The related bullets leave out what the question excludes, its every exclusion (the keyword
  -- list reads at most keyword_max_terms of its terms).
  if with_related and as_of is null and query_text ~ '(^|\s)-("|[[:alpha:]][^\s"])' then
    select string_agg(t.query::text, ' | ')::tsquery into v_rel_exclude
      from public.memory_keyword_terms(query_text) t where t.kind = 'exclude';
  end if;

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
                      union select gr.id from gr
                      union select w.id from unnest(v_win_ids) as w(id)) u
  ),
  recent as materialized (
    -- Only when recency counts ('when' questions), and once: not a plan per candidate. With a
    -- time window the candidates include the window's own memories (v_win_ids, above).
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
    select f.*, m.strength as m_strength, m.created_at as m_created, m.memory_type as m_memory_type,
           m.content as m_content, m.namespace as m_namespace, m.priority as m_priority,
           m.importance as m_importance, m.pinned as m_pinned, m.source as m_source, m.metadata as m_metadata,
           m.session_id as m_session_id, m.access_count as m_access_count,
           m.last_accessed_at as m_last_accessed_at, m.updated_at as m_updated_at,
           m.embedding as m_embedding, m.embedding_model as m_embedding_model,
           -- A single signal keeps its own score (vector: cosine; keyword: coverage): nothing is fused.
           least(1, case search_mode when 'vector' then coalesce(vs.sim, 0)
                                     when 'keyword' then coalesce(f.kw_cov, 0)
                                     else f.rel end
                    * case when m.memory_type = any (coalesce(prefer_memory_types, '{}')) then 1.25 else 1 end) as relv
      from fused f
      -- Each candidate read once, with what the answer shows of it (the answer's rows were read
      -- again by id below; the embedding stays a pointer until a similarity needs it).
      cross join lateral (select m.strength, m.created_at, m.memory_type, m.content, m.namespace, m.priority,
                                 m.importance, m.pinned, m.source, m.metadata, m.session_id, m.access_count,
                                 m.last_accessed_at, m.updated_at, m.embedding, m.embedding_model
                            from public.devai_memories m where m.id = f.id offset 0) m
      left join (select v.id, v.sim from unnest(v_vec_ids, v_vec_sims) as v(id, sim)) vs on vs.id = f.id
  ),
  top as (
    select x.* from final x order by x.relv * x.m_strength desc, x.m_created desc, x.id limit match_count
  ),
  -- The answer's edges to memories the search could see (public.retrieve_for_turn's related
  -- bullets are the best of them): read once, for the boost (max_relation_strength) and the bullets.
  edges as materialized (
    select e.* from memory_search.relation_edges(match_owner, array(select t2.id from top t2), as_of, v_scopes,
                                                 with_related and as_of is null) e
  ),
  -- What the search was asked to keep, the related bullets keep too; a memory of the answer is no
  -- bullet, and a memory related to two of them is a bullet for each.
  related as (
    select coalesce(jsonb_agg(jsonb_build_object('id', x.other, 'anchor_id', x.id, 'content', x.content,
                                                 'strength', x.strength) order by x.strength desc, x.other, x.id), '[]') as bullets
      from (select e.id, e.other, e.content, e.strength
              from edges e
             where with_related and as_of is null
               and not (e.other = any (array(select t2.id from top t2)))
               and (filter_after is null or e.created_at >= filter_after)
               and (filter_before is null or e.created_at < filter_before)
               and (filter_memory_types is null or e.memory_type = any (filter_memory_types))
               and (filter_categories is null
                    or (case when e.memory_type = 'procedural' then 'procedural' else e.metadata ->> 'category' end)
                       = any (filter_categories))
               and (v_rel_exclude is null or not (e.fts @@ v_rel_exclude))
             -- a memory related to two hits as strongly: by its anchor (it was the order the edges
             -- happened to be read in)
             order by e.strength desc, e.other, e.id
             limit 8) x
  )
  select t.id, v.content, v.memory_type, v.namespace, t.m_strength, v.priority, v.importance, v.pinned,
         v.source, v.metadata, t.m_session_id, t.m_access_count, t.m_last_accessed_at, t.m_created, t.m_updated_at,
         rs.strength,
         case when v.memory_type = 'procedural' then 'procedural' else v.metadata ->> 'category' end,
         -- Cosine similarity for every returned memory (the vector list has most of them already).
         coalesce((select v.sim from unnest(v_vec_ids, v_vec_sims) as v(id, sim) where v.id = t.id),
                  case when query_embedding is not null and t.m_embedding is not null
                            and t.m_embedding_model = match_embedding_model
                       then 1 - (t.m_embedding operator(extensions.<=>) query_embedding) end),
         t.kw_rnk, t.kw_score, t.kw_cov, t.vec_rnk, t.g_rnk, t.g_via, t.g_edge, t.relv,
         (select r.bullets from related r)
    from top t
    -- Its fields as the answer shows them: as they were at as_of (public.memory_at), else as they are.
    cross join lateral (select a.content, a.memory_type, a.namespace, a.priority, a.importance, a.pinned, a.source, a.metadata
                          from public.devai_memories r
                         cross join lateral memory_search.memory_at_fields(as_of, r.id, r.created_at, r.valid_until, r.is_valid, r.state,
                                                                           r.superseded_by, r.content, r.namespace, r.memory_type,
                                                                           r.priority, r.source, r.importance, r.pinned, r.metadata) a
                         where r.id = t.id and as_of is not null
                        union all
                        select t.m_content, t.m_memory_type, t.m_namespace, t.m_priority, t.m_importance, t.m_pinned, t.m_source,
                               t.m_metadata
                         where as_of is null) v
    left join (select e.id, max(e.strength) as strength from edges e group by e.id) rs on rs.id = t.id
   order by t.relv * t.m_strength desc, t.m_created desc, t.id;
end;
$$;

revoke all on function memory_search.hybrid_search(text, extensions.vector, text[], integer, double precision, text, uuid, text, integer, text[], timestamptz, timestamptz, text[], text[], text[], double precision, double precision, timestamptz, text[], boolean, text, jsonb, boolean) from public, anon;
grant execute on function memory_search.hybrid_search(text, extensions.vector, text[], integer, double precision, text, uuid, text, integer, text[], timestamptz, timestamptz, text[], text[], text[], double precision, double precision, timestamptz, text[], boolean, text, jsonb, boolean) to authenticated, service_role;
