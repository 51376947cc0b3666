-- A retrieval's answer carries only what the turn uses (issue 19). public.retrieve_for_turn gave
-- each memory as the whole search row (to_jsonb), about 850 bytes of jsonb for the bench's
-- memories, of which importance, session_id, access_count, last_accessed_at, updated_at and
-- category (some 2,400 of the 13,500 bytes of a 15-memory answer) are read by nothing the
-- memory-retrieve handler or the MCP search tool does with it (_shared/services/retrieval.ts):
-- each was built as jsonb, turned into text and parsed again in the function for every memory of
-- every retrieval. The memories are now built from the fields ranking, lineage, packing, the
-- answer's explanation and the search event read (docs/retrieval.md#one-call), in the same order;
-- everything else is as in 20261209700000.

-- One retrieval's reads in one call, as the tenant (memory-retrieve and the MCP search tool,
-- _shared/services/retrieval.ts; docs/retrieval.md#one-call): the hybrid search's memories with
-- the fields the turn uses, their related bullets, usage and cited files, the thread's revision and
-- changes, the fusion weights and the database's clock.
CREATE OR REPLACE FUNCTION public.retrieve_for_turn(query_text text, query_embedding extensions.vector DEFAULT NULL::extensions.vector, match_namespaces text[] DEFAULT NULL::text[], match_count integer DEFAULT 15, similarity_threshold double precision DEFAULT 0.7, match_embedding_model text DEFAULT NULL::text, match_owner uuid DEFAULT auth.uid(), search_mode text DEFAULT 'hybrid'::text, graph_depth integer DEFAULT 1, graph_edge_types text[] DEFAULT NULL::text[], filter_after timestamp with time zone DEFAULT NULL::timestamp with time zone, filter_before timestamp with time zone DEFAULT NULL::timestamp with time zone, filter_memory_types text[] DEFAULT NULL::text[], filter_categories text[] DEFAULT NULL::text[], prefer_memory_types text[] DEFAULT NULL::text[], recency_weight double precision DEFAULT 0, keyword_threshold double precision DEFAULT NULL::double precision, as_of timestamp with time zone DEFAULT NULL::timestamp with time zone, entity_terms text[] DEFAULT NULL::text[], graph_episodes boolean DEFAULT false, thread_id text DEFAULT 'default'::text, since_revision bigint DEFAULT NULL::bigint, query_complexity text DEFAULT NULL::text) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET search_path TO ''
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
#variable_conflict use_variable
declare
  v_rows     jsonb;
  v_linked   boolean;
  v_related  jsonb := '[]';
  v_revision bigint;
  v_changes  jsonb := '[]';
  v_feedback jsonb := '[]';
  v_fb_ids   uuid[];
  v_fb_meta  jsonb[];
begin
  -- each memory with what the turn reads of it: ranking (relevance, strength, priority, pinned,
  -- max_relation_strength, memory_type, created_at), lineage (metadata), packing and the block
  -- (content, memory_type, namespace, source), the answer's explanation (the signals) and the
  -- search event (similarity)
  select coalesce(jsonb_agg(jsonb_build_object(
           'id', h.id, 'content', h.content, 'memory_type', h.memory_type, 'namespace', h.namespace,
           'strength', h.strength, 'priority', h.priority, 'pinned', h.pinned, 'source', h.source,
           'metadata', h.metadata, 'created_at', h.created_at, 'max_relation_strength', h.max_relation_strength,
           'similarity', h.similarity, 'relevance', h.relevance, 'keyword_rank', h.keyword_rank,
           'keyword_score', h.keyword_score, 'keyword_coverage', h.keyword_coverage, 'vector_rank', h.vector_rank,
           'graph_rank', h.graph_rank, 'graph_via', h.graph_via, 'graph_edge', h.graph_edge)
           order by h.ordinality), '[]'),
         coalesce(bool_or(h.max_relation_strength is not null), false),
         -- the hits the feedback is about (those memory_feedback would keep: as_of is null here
         -- when it is read, so every hit is the tenant's, live and in scope; an episode, which a
         -- search asked for them returns, has none), with the metadata whose files they cite
         coalesce(array_agg(h.id order by h.ordinality)
                    filter (where h.source is distinct from 'conversation' and h.strength > 0.05), '{}'),
         coalesce(array_agg(h.metadata order by h.ordinality)
                    filter (where h.source is distinct from 'conversation' and h.strength > 0.05), '{}'),
         -- the related bullets: what the search read of its hits' edges for their boost (every
         -- row carries them)
         (array_agg(h.related))[1]
    into v_rows, v_linked, v_fb_ids, v_fb_meta, v_related
    from memory_search.hybrid_search(
           query_text => query_text, query_embedding => query_embedding, match_namespaces => match_namespaces,
           match_count => match_count, similarity_threshold => similarity_threshold,
           match_embedding_model => match_embedding_model, match_owner => match_owner, search_mode => search_mode,
           graph_depth => graph_depth, graph_edge_types => graph_edge_types, filter_after => filter_after,
           filter_before => filter_before, filter_memory_types => filter_memory_types,
           filter_categories => filter_categories, prefer_memory_types => prefer_memory_types,
           recency_weight => recency_weight, keyword_threshold => keyword_threshold, as_of => as_of,
           entity_terms => entity_terms, graph_episodes => graph_episodes,
           query_complexity => query_complexity, with_related => true) with ordinality as h;

  -- The hits' usage and cited files from the rows the search gave: public.memory_feedback would
  -- read each hit again (its row, then its metadata a second time for the files it cites).
  if as_of is null then
    v_feedback := memory_search.feedback(match_owner, v_fb_ids, v_fb_meta);
  end if;

  -- Related bullets: the hits' edges to visible memories, best first, from the search's own read
  -- of them (memory_search.hybrid_search, with_related); none as of an instant.
  if not (v_linked and as_of is null) or v_related is null then
    v_related := '[]';
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
$$;
