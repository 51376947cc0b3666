-- memory.query fuses a complex (multi-part) question by scores, as memory-retrieve does: the
-- retrieval planner's complexity is passed to public.hybrid_search (query_complexity, migration
-- 20261125400000; docs/retrieval.md#fusion). Without it memory.query fused every question by rank
-- alone. Memories that end with the same score are kept and ordered newer first, then by id, as
-- hybrid_search orders them (they were ordered by id alone). Body otherwise as 20261124400000.

-- A new argument changes the signature: the old function goes first, so that no call can match two.
drop function public.query_memories(text, extensions.vector, text[], text, text[], integer, double precision, text, uuid,
  text, text, text, text, text, boolean, integer, integer, timestamptz, timestamptz, text, integer, timestamptz, timestamptz,
  double precision, timestamptz);

create function public.query_memories(
  query_text text,
  query_embedding extensions.vector(512),
  match_namespaces text[],
  match_agent text,
  match_categories text[],
  match_count integer default 5,
  similarity_threshold double precision default 0.7,
  match_embedding_model text default 'text-embedding-3-small',
  match_owner uuid default auth.uid(),
  filter_user_id text default null,
  filter_agent_id text default null,
  filter_run_id text default null,
  filter_actor_id text default null,
  filter_role text default null,
  filter_pinned boolean default null,
  filter_importance_min integer default null,
  filter_importance_max integer default null,
  filter_updated_after timestamptz default null,
  filter_updated_before timestamptz default null,
  search_mode text default 'hybrid',
  graph_depth integer default 1,
  filter_after timestamptz default null,
  filter_before timestamptz default null,
  keyword_threshold double precision default null,
  as_of timestamptz default null,
  query_complexity text default null
)
returns table (
  id uuid,
  content text,
  similarity double precision,
  memory_type text,
  namespace text,
  category text,
  category_context text,
  strength double precision,
  priority text,
  importance smallint,
  pinned boolean,
  source text,
  metadata jsonb,
  session_id text,
  access_count integer,
  last_accessed_at timestamptz,
  created_at timestamptz,
  updated_at timestamptz,
  max_relation_strength real,
  keyword_rank integer,
  keyword_score double precision,
  keyword_coverage double precision,
  vector_rank integer,
  graph_rank integer,
  graph_via uuid,
  graph_edge text,
  relevance double precision
)
language plpgsql
stable
security invoker
set search_path = ''
set plan_cache_mode = 'force_custom_plan'
rows 20
as $$
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
      join public.devai_memories m on m.id = c.id
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
  select m.id, case when as_of is null then m.content else (select a.content from public.memory_at(m, as_of) a) end,
         t.similarity, m.memory_type, m.namespace, t.cat, t.cat_context,
         m.strength, m.priority, m.importance, m.pinned, m.source, m.metadata, m.session_id,
         m.access_count, m.last_accessed_at, m.created_at, m.updated_at,
         (select max(r.strength) from public.memory_relations r
           where r.owner_id = m.owner_id and (r.from_id = m.id or r.to_id = m.id)),
         t.keyword_rank, t.keyword_score, t.keyword_coverage, t.vector_rank, t.graph_rank, t.graph_via, t.graph_edge,
         t.relevance
    from top t
    join public.devai_memories m on m.id = t.id
   order by t.relevance * t.m_strength desc, t.m_created desc, t.id;
end;
$$;

revoke all on function public.query_memories(text, extensions.vector, text[], text, text[], integer, double precision, text, uuid,
  text, text, text, text, text, boolean, integer, integer, timestamptz, timestamptz, text, integer, timestamptz, timestamptz,
  double precision, timestamptz, text) from public, anon;
grant execute on function public.query_memories(text, extensions.vector, text[], text, text[], integer, double precision, text, uuid,
  text, text, text, text, text, boolean, integer, integer, timestamptz, timestamptz, text, integer, timestamptz, timestamptz,
  double precision, timestamptz, text) to authenticated, service_role;
