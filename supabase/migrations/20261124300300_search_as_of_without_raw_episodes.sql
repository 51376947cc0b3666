-- match_memories and query_memories learn as_of, and leave raw episodes out.
--
-- as_of (timestamptz, default null = now): the search answers from what the tenant's memory held at
-- that instant, by the one as-of rule public.memory_at (20261124300000): recorded by then, validity
-- not closed then, valid and active after its last change then, with its content then. An as-of
-- search compares every vector of the scope recorded by then (exact): superseded and forgotten
-- rows are not in the HNSW index, and they are what an as-of answer may need.
--
-- Raw episodes (source 'conversation': every message of a session, POST memory/episodes) are
-- never returned: a conversation turn is not a fact, and it would be the nearest neighbour of the
-- very facts consolidation derives from it (dedup would NOOP them against their own source).
-- They are reached through the graph signals (20261124300200) and the memory API; the rule is in
-- docs/graph.md#episodes-in-retrieval.
--
-- Everything else is 20261123000300's match_memories and 20261122003000's query_memories: the
-- new parameter comes last, so positional calls keep working. The old signatures are dropped.
--
-- The HNSW index leaves raw episodes out too: it holds the rows vector search can return (as in
-- 20261123000500), and inserting an episode's vector into it was most of the cost of storing a
-- batch of episodes (10k-memory corpus, 2 busy cores: a batch of 10 took ~25 ms without vectors,
-- ~60 ms with them). Episodes keep their embedding (an exact search over a session or a scope can
-- still rank them) and their fts entry (keyword search finds them at once). The search paths below
-- filter on the index predicate literally, so the planner proves it. Rebuilding the index takes
-- about 30 s per 100k memories on 2 cores; writes wait meanwhile, reads do not.

drop index public.devai_memories_embedding_hnsw;
create index devai_memories_embedding_hnsw on public.devai_memories
  using hnsw (embedding extensions.vector_cosine_ops) with (m = 16, ef_construction = 64)
  where is_valid and state = 'active' and source is distinct from 'conversation';
comment on index public.devai_memories_embedding_hnsw is
  'HNSW cosine index (m=16, ef_construction=64) over the rows match_memories can return: valid, active, not raw episodes. See migrations 20261123000500 and 20261124300300.';

drop function public.match_memories(extensions.vector, text, integer, double precision, uuid, text, text[]);
drop function public.query_memories(extensions.vector, text[], text, text[], integer, double precision, text, uuid,
  text, text, text, text, text, boolean, integer, integer, timestamptz, timestamptz);

-- The similarity search of retrieval and dedup (20261123000300, unchanged but for the two points
-- at the top of this file): scoped, tenant and embedding-model filtered, exact for small scopes,
-- HNSW with iterative scans for large ones. Called by memory-retrieve, memory-dedup and the benchmarks.
create or replace function public.match_memories(
  query_embedding extensions.vector(512),
  match_namespace text,
  match_count integer default 15,
  similarity_threshold double precision default 0.7,
  match_owner uuid default auth.uid(),
  match_embedding_model text default 'text-embedding-3-small',
  match_namespaces text[] default null,
  as_of timestamptz default null
)
returns table (
  id uuid,
  content text,
  similarity double precision,
  memory_type text,
  namespace text,
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
  max_relation_strength real
)
language plpgsql
stable
security invoker
set search_path = ''
set hnsw.iterative_scan = 'relaxed_order'
set hnsw.ef_search = 100
set plan_cache_mode = 'force_custom_plan'
as $$
declare
  v_bases     text[];
  v_scopes    text[];
  v_exact_max integer;
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
  v_exact_max := public.memory_setting('exact_scan_max_rows')::integer;

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
             where r.owner_id = m.owner_id and (r.from_id = m.id or r.to_id = m.id))
      from nearest n
      join public.devai_memories m on m.id = n.id
     where 1 - n.distance > similarity_threshold
     order by n.distance, n.id;
    return;
  end if;

  select count(*) into v_in_scope
    from (select 1
            from unnest(v_bases) as b(base)
           cross join lateral (
             select 1 from public.devai_memories m
              where m.owner_id = match_owner and m.is_valid and m.state = 'active'
                and m.namespace operator(pg_catalog.~>=~) b.base
                and m.namespace operator(pg_catalog.~<~) (b.base || '0')
                and (m.namespace = b.base or m.namespace ^@ (b.base || '/'))
              limit v_exact_max + 1) as hit
           limit v_exact_max + 1) as counted;

  -- Two statements, not one with both branches: a UNION ALL of the two paths, gated by
  -- v_in_scope, planned badly (693 ms p50 instead of 11). The projection they share is short.
  if v_in_scope <= v_exact_max then
    -- Small scope: compare every vector in it (exact, recall 1).
    return query
    with in_scope as materialized (
      select m.id, m.embedding operator(extensions.<=>) query_embedding as distance
        from unnest(v_bases) as b(base)
        join public.devai_memories m
          on m.owner_id = match_owner and m.is_valid and m.state = 'active'
         and m.namespace operator(pg_catalog.~>=~) b.base
         and m.namespace operator(pg_catalog.~<~) (b.base || '0')
         and (m.namespace = b.base or m.namespace ^@ (b.base || '/'))
       where m.strength > 0.05
         and m.source is distinct from 'conversation'
         and m.embedding_model = match_embedding_model
         and m.embedding is not null
    ),
    nearest as (
      select s.id, s.distance from in_scope s order by s.distance, s.id limit match_count
    )
    select n.id, m.content, 1 - n.distance, m.memory_type, m.namespace, m.strength, m.priority,
           m.importance, m.pinned, m.source, m.metadata, m.session_id, m.access_count,
           m.last_accessed_at, m.created_at, m.updated_at,
           (select max(r.strength) from public.memory_relations r
             where r.owner_id = m.owner_id and (r.from_id = m.id or r.to_id = m.id))
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
           where r.owner_id = m.owner_id and (r.from_id = m.id or r.to_id = m.id))
    from nearest n
    join public.devai_memories m on m.id = n.id
   where 1 - n.distance > similarity_threshold
   order by n.distance, n.id;
  perform set_config('enable_sort', v_sort, true);
end;
$$;

revoke all on function public.match_memories(extensions.vector, text, integer, double precision, uuid, text, text[], timestamptz) from public, anon;
grant execute on function public.match_memories(extensions.vector, text, integer, double precision, uuid, text, text[], timestamptz)
  to authenticated, service_role;

-- memory.query's search (seed 001 §6/§6.1): match_memories' safety (security invoker so RLS
-- applies, tenant + embedding-model filter, is_valid/state/strength, scopes matched by path
-- segment with starts_with, never LIKE; HNSW with iterative scans) plus, applied in SQL:
--   match_categories  categories to return, intersected with match_agent's allowlist
--   filter_*          seed 001 §6.1 filters (metadata user_id/agent_id/run_id/actor_id/role,
--                     pinned, importance range, updated_at range); null means "no filter"
-- Categories with context 'all' are returned without the similarity threshold (they are always
-- relevant); rag_length caps each category's rows. Rows come back most similar first.
--   as_of             answer as of that instant (see the top of this file)
-- Called by memory-retrieve (query mode).
create or replace function public.query_memories(
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
  as_of timestamptz default null
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
  max_relation_strength real
)
language plpgsql
stable
security invoker
set search_path = ''
set hnsw.iterative_scan = 'relaxed_order'
set plan_cache_mode = 'force_custom_plan'
as $$
declare
  v_scopes     text[];
  v_categories text[];
  v_all        text[];
  v_pool       integer;
begin
  if match_count is null or match_count < 1 or match_count > 200 then
    raise exception 'match_count must be between 1 and 200, got %', match_count using errcode = '22023';
  end if;
  select coalesce(array_agg(rtrim(s, '/') || '/'), '{}')
    into v_scopes
    from unnest(coalesce(match_namespaces, '{}'::text[])) as s
   where s is not null and rtrim(s, '/') <> '';
  if cardinality(v_scopes) = 0 then
    raise exception 'at least one namespace scope is required' using errcode = '22023';
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
  -- Per-category caps and the threshold are applied after the nearest-neighbour step, so look
  -- further than match_count to still fill it.
  v_pool := least(match_count * 4, 400);

  return query
  with eligible as (
    select m.id, m.owner_id, m.content, m.embedding, m.memory_type, m.namespace, m.strength, m.priority,
           m.importance, m.pinned, m.source, m.metadata, m.session_id, m.access_count,
           m.last_accessed_at, m.created_at, m.updated_at,
           case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end as cat
      from public.devai_memories m
     where m.owner_id = match_owner
       -- as_of is a constant for the planner (force_custom_plan): without it this is the plain
       -- "valid, active, strength > 0.05" that lets the HNSW index (valid, active rows) serve.
       and case when as_of is null then m.is_valid and m.state = 'active' and m.strength > 0.05
                else m.created_at <= as_of and (m.valid_until is null or m.valid_until > as_of)
                     and (select a.held from public.memory_at(m, as_of) a) end
       and m.source is distinct from 'conversation'
       and m.embedding_model = match_embedding_model
       and m.embedding is not null
       and (m.namespace || '/') ^@ any (v_scopes)
       and (filter_user_id is null or m.metadata ->> 'user_id' = filter_user_id)
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
  nearest as materialized (
    select e.id, e.cat, e.embedding operator(extensions.<=>) query_embedding as distance
      from eligible e
     where e.cat = any (v_categories)
     order by e.embedding operator(extensions.<=>) query_embedding
     limit v_pool
  ),
  candidates as (
    select n.id, n.cat, n.distance
      from nearest n
     where 1 - n.distance > similarity_threshold or n.cat = any (v_all)
    union all
    -- context 'all' categories: their memories regardless of similarity (most important first).
    select a.id, a.cat, a.distance
      from (select e.id, e.cat, e.embedding operator(extensions.<=>) query_embedding as distance
              from eligible e
             where cardinality(v_all) > 0 and e.cat = any (v_all)
               and e.id not in (select n.id from nearest n)
             order by e.importance desc, e.updated_at desc
             limit match_count) a
  ),
  capped as (
    select c.id, c.cat, c.distance, cfg.context as cat_context,
           row_number() over (partition by c.cat order by c.distance) as rank_in_category,
           cfg.rag_length
      from candidates c
      join public.memory_categories cfg on cfg.name = c.cat
  )
  select e.id, case when as_of is null then e.content else (select a.content from public.memory_at(e, as_of) a) end,
         1 - k.distance, e.memory_type, e.namespace, k.cat, k.cat_context,
         e.strength, e.priority, e.importance, e.pinned, e.source, e.metadata, e.session_id,
         e.access_count, e.last_accessed_at, e.created_at, e.updated_at,
         (select max(r.strength) from public.memory_relations r
           where r.owner_id = e.owner_id and (r.from_id = e.id or r.to_id = e.id))
    from capped k
    join public.devai_memories e on e.id = k.id
   where k.rag_length is null or k.rank_in_category <= k.rag_length
   order by k.distance
   limit match_count;
end;
$$;

revoke all on function public.query_memories(extensions.vector, text[], text, text[], integer, double precision, text, uuid,
  text, text, text, text, text, boolean, integer, integer, timestamptz, timestamptz, timestamptz) from public, anon;
grant execute on function public.query_memories(extensions.vector, text[], text, text[], integer, double precision, text, uuid,
  text, text, text, text, text, boolean, integer, integer, timestamptz, timestamptz, timestamptz) to authenticated, service_role;
