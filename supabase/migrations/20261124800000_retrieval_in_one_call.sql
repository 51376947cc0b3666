-- A retrieval in one round trip, its writes behind the answer (docs/retrieval.md#one-call,
-- docs/operations.md#write-behind).
--
-- Before, memory-retrieve ran a transaction of eight or more statements, each a round trip: the
-- tenant's claims and its rate-limit token, the hybrid search, the usage feedback, the related
-- bullets, the thread's revision, its changes, the fusion weights, the reinforcement UPDATE, the
-- memory_events INSERT, the commit (with a WAL flush, since it wrote). Now everything a retrieval
-- reads comes back from public.retrieve_for_turn, one statement that the service sends with the
-- tenant's role and claims set in the same statement; what it writes (reinforcement, the search
-- event) is queued by the server and applied in batches by public.record_retrievals.

-- The fusion weights of an embedding model (its own row, else '*') and rrf_k, as the response's
-- search block shows them. One definition for retrieve and memory.query.
create or replace function public.memory_search_weights_for(p_model text)
returns jsonb
language sql
stable
security invoker
set search_path = ''
as $$
  select jsonb_build_object(
           'keyword', coalesce(w.keyword, 1), 'vector', coalesce(w.vector, 1), 'graph', coalesce(w.graph, 0.5),
           'rrf_k', coalesce((select s.value from public.memory_settings s where s.name = 'rrf_k'), 60))
    from (select 1) as one
    left join lateral (
      select x.keyword, x.vector, x.graph
        from public.memory_search_weights x
       where x.embedding_model in (p_model, '*')
       order by (x.embedding_model = '*')
       limit 1) w on true
$$;
revoke all on function public.memory_search_weights_for(text) from public, anon;
grant execute on function public.memory_search_weights_for(text) to authenticated, service_role;

-- What agents reported about these memories and the files they cite (public.context_candidates'
-- details), as [{"id", "cited_files", "citation_count", "ignore_count"}], for ranking's usage factor
-- and code lineage (docs/context.md, _shared/context/feedback.ts). As the caller (RLS). Read in the
-- same statement as the search by retrieve_for_turn and by memory.query.
create or replace function public.memory_feedback(p_ids uuid[], p_namespaces text[], p_owner uuid default auth.uid())
returns jsonb
language plpgsql
stable
security invoker
set search_path = ''
as $$
begin
  if coalesce(cardinality(p_ids), 0) = 0 then
    return '[]';
  end if;
  return (select coalesce(jsonb_agg(jsonb_build_object('id', c.id, 'cited_files', c.cited_files,
                                                       'citation_count', c.citation_count, 'ignore_count', c.ignore_count)), '[]')
            from public.context_candidates(match_namespaces => p_namespaces, given_ids => p_ids, match_owner => p_owner) c);
end;
$$;
revoke all on function public.memory_feedback(uuid[], text[], uuid) from public, anon;
grant execute on function public.memory_feedback(uuid[], text[], uuid) to authenticated, service_role;

-- Everything one retrieval reads, as one jsonb, as the caller (security invoker: RLS applies):
--   memories  public.hybrid_search's rows, best first (its parameters, passed through)
--   related   up to 8 memories linked to the found ones, strongest edge first, in the same
--             scopes (never 'contradicts', never invalid, forgotten or raw episodes); only when a
--             found memory has an edge and the search is not as of an instant
--   revision  the thread's current revision (0 when none was recorded)
--   changes   the thread's newest changes after since_revision (at most 6: a replacement's two
--             rows become one bullet), each with the memory that replaced it, when one did
--   weights   the fusion weights of the embedding model (public.memory_search_weights_for)
--   feedback  the found memories' usage counters and cited files (public.memory_feedback), for
--             ranking's usage factor and code lineage (docs/context.md); none as of an instant
--   now       the database's clock for this statement: the instant reinforcement records
-- Called by the retrieval service (_shared/services/retrieval.ts) with the tenant's role and
-- claims set in the same statement.
create or replace function public.retrieve_for_turn(
  query_text text,
  query_embedding extensions.vector(512) default null,
  match_namespaces text[] default null,
  match_count integer default 15,
  similarity_threshold double precision default 0.7,
  match_embedding_model text default null,
  match_owner uuid default auth.uid(),
  search_mode text default 'hybrid',
  graph_depth integer default 1,
  graph_edge_types text[] default null,
  filter_after timestamptz default null,
  filter_before timestamptz default null,
  filter_memory_types text[] default null,
  filter_categories text[] default null,
  prefer_memory_types text[] default null,
  recency_weight double precision default 0,
  keyword_threshold double precision default null,
  as_of timestamptz default null,
  entity_terms text[] default null,
  graph_episodes boolean default false,
  thread_id text default 'default',
  since_revision bigint default null
)
returns jsonb
language plpgsql
stable
security invoker
set search_path = ''
-- Its statements take the same plan whatever the parameters (arrays of ids, one thread):
-- planned once per connection, not at every call.
set plan_cache_mode = 'force_generic_plan'
as $$
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
           entity_terms => entity_terms, graph_episodes => graph_episodes) with ordinality as h;

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
              join public.devai_memories m on m.id = e.id
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
      left join public.devai_memories o on c.event = 'merged' and o.id = c.memory_id
      left join public.devai_memories n on n.id = o.superseded_by;
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
revoke all on function public.retrieve_for_turn(text, extensions.vector, text[], integer, double precision, text, uuid, text,
  integer, text[], timestamptz, timestamptz, text[], text[], text[], double precision, double precision, timestamptz, text[], boolean,
  text, bigint)
  from public, anon;
grant execute on function public.retrieve_for_turn(text, extensions.vector, text[], integer, double precision, text, uuid, text,
  integer, text[], timestamptz, timestamptz, text[], text[], text[], double precision, double precision, timestamptz, text[], boolean,
  text, bigint)
  to authenticated, service_role;

-- What searches wrote in their own transaction, applied later in batches by the server that
-- answered them (_shared/retrieval/write-behind.ts): for each search, in order, the reinforcement
-- of the memories it used (public.reinforce_memories at the search's own instant, so the
-- strengths are those an immediate write would have given) and its memory_events row. As the
-- caller (security invoker: RLS limits both to the tenant's own rows). Items:
--   [{"at": timestamptz, "ids": [uuid...], "thread_id": text|null, "category": text|null,
--     "sim": number|null, "meta": {...}}, ...]
-- Returns the number of memories reinforced. A memory a nightly job holds locked misses that
-- reinforcement, as before (reinforce_memories skips locked rows).
create or replace function public.record_retrievals(p_items jsonb)
returns integer
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
  v_item  jsonb;
  v_at    timestamptz;
  v_ids   uuid[];
  v_count integer := 0;
  v_n     integer;
begin
  if jsonb_typeof(p_items) is distinct from 'array' then
    raise exception 'record_retrievals takes a jsonb array of searches' using errcode = '22023';
  end if;
  for v_item in select i from jsonb_array_elements(p_items) as i loop
    v_at := coalesce((v_item ->> 'at')::timestamptz, now());
    v_ids := array(select jsonb_array_elements_text(coalesce(v_item -> 'ids', '[]'))::uuid);
    if cardinality(v_ids) > 0 then
      select count(*) into v_n from public.reinforce_memories(v_ids, v_at);
      v_count := v_count + v_n;
    end if;
    if v_item ? 'meta' then
      insert into public.memory_events (owner_id, thread_id, node, op, status, category, sim, meta, ts)
      values (auth.uid(), v_item ->> 'thread_id', 'context', 'search', 'ok', v_item ->> 'category',
              (v_item ->> 'sim')::real, v_item -> 'meta', v_at);
    end if;
  end loop;
  return v_count;
end;
$$;
revoke all on function public.record_retrievals(jsonb) from public, anon;
grant execute on function public.record_retrievals(jsonb) to authenticated, service_role;

-- The search event keeps the instant of its search, not of the batch that wrote it.
grant insert (ts) on public.memory_events to authenticated;
