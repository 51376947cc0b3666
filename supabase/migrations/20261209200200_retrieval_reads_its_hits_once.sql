-- A retrieval (public.retrieve_for_turn) read each hit again after the search: public.memory_feedback
-- looked every hit up by id to test what the search had tested already (the tenant's, live, above
-- the floor, in scope), and public.memory_cited_files looked it up a second time for the files its
-- metadata cites. Now the hits' usage counters and cited files come from the rows the search gave
-- (memory_search.feedback, given the ids and their metadata); memory_feedback and
-- memory_cited_files, which other readers call with ids alone, read the rows once and call the same
-- code (memory_search.cited_files: the one derivation of a memory's cited files). The answers are
-- the same (docs/retrieval.md#speed: replayed retrievals hashed before and after).
-- pgTAP 99_retrieval_reads_its_hits_once; docs/retrieval.md#speed.

-- The files memories cite (p_ids, with their metadata p_metadata, parallel): their file entities'
-- names and their metadata's "files", each without a leading "./", sorted, once. Each id probes
-- its links by key (an id = any (ids) beside the owner let the planner read the tenant's whole
-- owner index instead: 2 ms a call for the bench's biggest tenant).
create or replace function memory_search.cited_files(p_owner uuid, p_ids uuid[], p_metadata jsonb[])
returns table (memory_id uuid, files text[])
language plpgsql
stable
rows 20
set search_path = ''
as $$
begin
  return query
  select c.id, array_agg(distinct c.path order by c.path)
    from (select l.memory_id as id, regexp_replace(e.canonical_name, '^(\./)+', '') as path
            from (select distinct u.id from unnest(p_ids) as u(id)) i
            join public.memory_entity_links l on l.memory_id = i.id and l.owner_id = p_owner
            join public.memory_entities e on e.id = l.entity_id and e.entity_type = 'file'
          union all
          select m.id, regexp_replace(x, '^(\./)+', '')
            from unnest(p_ids, p_metadata) as m(id, metadata)
           cross join lateral jsonb_array_elements_text(
                  case when jsonb_typeof(m.metadata -> 'files') = 'array' then m.metadata -> 'files'
                       else '[]'::jsonb end) as x) c
   group by c.id;
end;
$$;
revoke all on function memory_search.cited_files(uuid, uuid[], jsonb[]) from public, anon;
grant execute on function memory_search.cited_files(uuid, uuid[], jsonb[]) to authenticated, service_role;

-- The files the tenant's memories p_ids cite (as context assembly and memory_feedback read them).
create or replace function public.memory_cited_files(p_ids uuid[], p_owner uuid)
returns table (memory_id uuid, files text[])
language plpgsql
stable
rows 20
set search_path = ''
as $$
declare
  v_ids  uuid[];
  v_meta jsonb[];
begin
  select coalesce(array_agg(m.id), '{}'), coalesce(array_agg(m.metadata), '{}') into v_ids, v_meta
    from (select distinct u.id from unnest(p_ids) as u(id)) i
    cross join lateral (select m.id, m.metadata from public.devai_memories m
                         where m.id = i.id and m.owner_id = p_owner offset 0) m;
  return query select f.memory_id, f.files from memory_search.cited_files(p_owner, v_ids, v_meta) f;
end;
$$;

-- The usage counters and cited files of memories a search shows (p_ids, with their metadata
-- p_metadata, parallel), as the "feedback" of a retrieval: one object per memory.
create or replace function memory_search.feedback(p_owner uuid, p_ids uuid[], p_metadata jsonb[])
returns jsonb
language plpgsql
stable
set search_path = ''
as $$
begin
  return (
  select coalesce(jsonb_agg(jsonb_build_object(
           'id', i.id, 'cited_files', coalesce(f.files, '{}'),
           'citation_count', coalesce(u.citation_count, 0), 'ignore_count', coalesce(u.ignore_count, 0))), '[]')
    from (select distinct x.id from unnest(p_ids) as x(id)) i
    left join public.memory_usage u on u.memory_id = i.id
    left join memory_search.cited_files(p_owner, p_ids, p_metadata) f on f.memory_id = i.id);
end;
$$;
revoke all on function memory_search.feedback(uuid, uuid[], jsonb[]) from public, anon;
grant execute on function memory_search.feedback(uuid, uuid[], jsonb[]) to authenticated, service_role;

-- The feedback of the tenant's memories p_ids that a search in p_namespaces may show now (live,
-- above the floor, not a raw episode, in scope); memory.query's statement calls it with its hits.
create or replace function public.memory_feedback(p_ids uuid[], p_namespaces text[], p_owner uuid default auth.uid())
returns jsonb
language plpgsql
stable
set search_path = ''
as $$
declare
  v_scopes text[] := public.context_scope_prefixes(p_namespaces);
  v_ids    uuid[];
  v_meta   jsonb[];
begin
  select coalesce(array_agg(m.id), '{}'), coalesce(array_agg(m.metadata), '{}') into v_ids, v_meta
    from (select distinct x.id from unnest(p_ids) as x(id)) i
    cross join lateral (select m.id, m.metadata, m.owner_id, m.is_valid, m.state, m.strength, m.source, m.namespace
                          from public.devai_memories m where m.id = i.id offset 0) m
   where m.owner_id = p_owner and m.is_valid and m.state = 'active' and m.strength > 0.05
     and m.source is distinct from 'conversation'
     and (m.namespace || '/') ^@ any (v_scopes);
  return memory_search.feedback(p_owner, v_ids, v_meta);
end;
$$;

CREATE OR REPLACE FUNCTION public.retrieve_for_turn(query_text text, query_embedding extensions.vector DEFAULT NULL::extensions.vector, match_namespaces text[] DEFAULT NULL::text[], match_count integer DEFAULT 15, similarity_threshold double precision DEFAULT 0.7, match_embedding_model text DEFAULT NULL::text, match_owner uuid DEFAULT auth.uid(), search_mode text DEFAULT 'hybrid'::text, graph_depth integer DEFAULT 1, graph_edge_types text[] DEFAULT NULL::text[], filter_after timestamp with time zone DEFAULT NULL::timestamp with time zone, filter_before timestamp with time zone DEFAULT NULL::timestamp with time zone, filter_memory_types text[] DEFAULT NULL::text[], filter_categories text[] DEFAULT NULL::text[], prefer_memory_types text[] DEFAULT NULL::text[], recency_weight double precision DEFAULT 0, keyword_threshold double precision DEFAULT NULL::double precision, as_of timestamp with time zone DEFAULT NULL::timestamp with time zone, entity_terms text[] DEFAULT NULL::text[], graph_episodes boolean DEFAULT false, thread_id text DEFAULT 'default'::text, since_revision bigint DEFAULT NULL::bigint, query_complexity text DEFAULT NULL::text) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET search_path TO ''
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
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
  v_fb_ids   uuid[];
  v_fb_meta  jsonb[];
  v_exclude  tsquery;
begin
  select coalesce(jsonb_agg(to_jsonb(h) - 'ordinality' order by h.ordinality), '[]'),
         coalesce(array_agg(h.id order by h.ordinality), '{}'),
         coalesce(bool_or(h.max_relation_strength is not null), false),
         -- the hits the feedback is about (those memory_feedback would keep: as_of is null here
         -- when it is read, so every hit is the tenant's, live and in scope; an episode, which a
         -- search asked for them returns, has none), with the metadata whose files they cite
         coalesce(array_agg(h.id order by h.ordinality)
                    filter (where h.source is distinct from 'conversation' and h.strength > 0.05), '{}'),
         coalesce(array_agg(h.metadata order by h.ordinality)
                    filter (where h.source is distinct from 'conversation' and h.strength > 0.05), '{}')
    into v_rows, v_ids, v_linked, v_fb_ids, v_fb_meta
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

  -- The hits' usage and cited files from the rows the search gave: public.memory_feedback would
  -- read each hit again (its row, then its metadata a second time for the files it cites).
  if as_of is null then
    v_feedback := memory_search.feedback(match_owner, v_fb_ids, v_fb_meta);
  end if;

  if v_linked and as_of is null then
    select coalesce(array_agg(rtrim(s, '/') || '/'), '{}') into v_prefixes
      from unnest(match_namespaces) s where s is not null and rtrim(s, '/') <> '';
    if query_text ~ '(^|\s)-("|[[:alpha:]][^\s"])' then
      select string_agg(t.query::text, ' | ')::tsquery into v_exclude
        from public.memory_keyword_terms(query_text) t where t.kind = 'exclude';
    end if;
    select coalesce(jsonb_agg(jsonb_build_object('id', x.id, 'anchor_id', x.anchor_id, 'content', x.content,
                                                 'strength', x.strength) order by x.strength desc, x.id), '[]')
      into v_related
      from (select m.id, e.anchor_id, m.content, e.strength
              from (select r.to_id as id, r.from_id as anchor_id, r.strength
                      from public.memory_relations r
                     where r.from_id = any (v_ids) and r.relation_type <> 'contradicts'
                       and r.valid_from <= now() and (r.valid_until is null or r.valid_until > now())
                    union all
                    select r.from_id, r.to_id, r.strength
                      from public.memory_relations r
                     where r.to_id = any (v_ids) and r.relation_type <> 'contradicts'
                       and r.valid_from <= now() and (r.valid_until is null or r.valid_until > now())) e
              cross join lateral (select m.* from public.devai_memories m where m.id = e.id offset 0) m
             where m.is_valid and m.state = 'active' and m.strength > 0.05 and m.source is distinct from 'conversation'
               and not (m.id = any (v_ids))
               and (m.namespace || '/') ^@ any (v_prefixes)
               -- What the search was asked to keep, the related bullets keep too.
               and (filter_after is null or m.created_at >= filter_after)
               and (filter_before is null or m.created_at < filter_before)
               and (filter_memory_types is null or m.memory_type = any (filter_memory_types))
               and (filter_categories is null
                    or (case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end)
                       = any (filter_categories))
               and (v_exclude is null or not (m.fts @@ v_exclude))
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
$$;

