-- match_memories searches a scope exactly up to a size that grows with the table, not only up to
-- exact_scan_max_rows. Which path is cheaper depends on the scope's share of the HNSW index, not
-- on the scope's size alone: comparing every vector of a scope costs about a in each of its s
-- rows; the index walk, filtered by tenant and scope as it goes, examines about k·N/s entries of
-- an index of N to keep k (each a heap fetch and a distance: about b). Exact is cheaper while
-- s < √(b/a · k · N). On the bench's 100k corpus (as postgres, 40 queries, `npm run bench`'s
-- database), a 1,024-memory project of the biggest tenant took 27.7 ms p50 / 55.3 ms p95 by the
-- index and 6.9 / 8.0 ms exactly (a ≈ 6.7 µs a row); a 7,871-memory scope 10.7 / 32.2 ms by the
-- index and 45.1 / 49.1 exactly; the tenant's whole memory (19,182) 3.7 / 5.9 ms by the index
-- and 120 / 163 exactly. b/a ≈ 3 puts the crossing at √(3 · 20 · 100,000) ≈ 2,450 memories for
-- the 20 a hybrid search asks: the project goes exact, the others stay on the index. N is the
-- index's own row estimate (pg_class.reltuples, kept by autovacuum); the new setting
-- exact_scan_cost_ratio is b/a (0: exact_scan_max_rows alone decides, as before), and
-- exact_scan_max_rows stays the floor.
--
-- And a big tenant can have an HNSW index of its own. In the shared index a scope of 7,871
-- memories of the bench's biggest tenant is 9% of the entries: for a query whose nearest
-- neighbours belong to other tenants the walk examined 2,352 entries (17,089 buffers) to keep 20,
-- 33 ms p95 over 60 queries. In an index of the tenant's 19,000 memories the same scope is 40%:
-- 5.8 ms p95, 2.9 ms p50 (11.7 by the shared index). The index is partial (owner_id = the
-- tenant), built by the operator with CREATE INDEX CONCURRENTLY, which no function can run:
-- public.memory_dedicated_vector_index_sql gives the statement (and the one that drops it),
-- scripts/dedicated-vector-index.sh runs it; the index's name, devai_memories_hnsw_owner_<the
-- tenant's uuid without dashes>, is how match_memories finds it. The planner uses a partial index
-- only in a plan made for the owner's value, so match_memories plans its index walk for each call
-- (about 0.4 ms) for such a tenant, and keeps the generic plan for every other.
-- docs/operations.md#a-dedicated-vector-index-for-a-big-tenant.
--
-- match_memories' body is otherwise as 20261124800100 with 20261124800200's settings (generic
-- plans, rows 20). docs/retrieval.md#vector.

insert into public.memory_settings (name, value, description) values
  ('exact_scan_cost_ratio', 3,
   'match_memories: the cost of one HNSW entry examined against one vector compared exactly; scopes up to sqrt(ratio * match_count * indexed memories) are searched exactly (0: exact_scan_max_rows alone). docs/retrieval.md#vector.')
on conflict (name) do nothing;
alter table public.memory_settings add constraint memory_settings_exact_scan_cost_ratio_range check (
  name <> 'exact_scan_cost_ratio' or (value >= 0 and value <= 1000));

-- The HNSW index a tenant's searches walk: its own (a dedicated index, above), else the shared one.
create or replace function public.memory_vector_index_of(p_owner uuid)
returns regclass
language plpgsql
stable
set search_path = ''
as $$
begin
  return coalesce(to_regclass('public.devai_memories_hnsw_owner_' || replace(p_owner::text, '-', '')),
                  to_regclass('public.devai_memories_embedding_hnsw'));
end;
$$;
revoke all on function public.memory_vector_index_of(uuid) from public, anon;
grant execute on function public.memory_vector_index_of(uuid) to authenticated, service_role;

-- The most memories in scope match_memories compares exactly for a search of match_count:
-- exact_scan_max_rows, or √(exact_scan_cost_ratio · match_count · memories in p_index, the index
-- the search would walk: public.memory_vector_index_of) when that is more.
create or replace function public.memory_exact_scan_limit(
  p_match_count integer, p_index regclass default to_regclass('public.devai_memories_embedding_hnsw'))
returns integer
language plpgsql
stable
set search_path = ''
as $$
begin
  return greatest(
    public.memory_setting('exact_scan_max_rows')::integer,
    floor(sqrt(public.memory_setting('exact_scan_cost_ratio') * greatest(p_match_count, 1)
               * coalesce((select greatest(c.reltuples, 0) from pg_catalog.pg_class c
                            where c.oid = p_index), 0)))::integer);
end;
$$;
revoke all on function public.memory_exact_scan_limit(integer, regclass) from public, anon;
grant execute on function public.memory_exact_scan_limit(integer, regclass) to authenticated, service_role;

-- The statement that builds a tenant's own HNSW index (p_drop: the one that drops it), for the
-- operator to run outside a transaction (CONCURRENTLY: the tenants' writes go on while it builds).
-- The index holds the tenant's memories the shared index would (valid, active, no raw episodes),
-- with the shared index's parameters. service_role only.
create or replace function public.memory_dedicated_vector_index_sql(p_owner uuid, p_drop boolean default false)
returns text
language plpgsql
immutable
set search_path = ''
as $$
declare
  v_name text := 'devai_memories_hnsw_owner_' || replace(p_owner::text, '-', '');
begin
  if p_owner is null then
    raise exception 'a tenant id is required' using errcode = '22023';
  end if;
  if p_drop then
    return format('drop index concurrently if exists public.%I', v_name);
  end if;
  return format('create index concurrently if not exists %I on public.devai_memories '
                || 'using hnsw (embedding extensions.vector_cosine_ops) with (m = 16, ef_construction = 64) '
                || 'where owner_id = %L::uuid and is_valid and state = ''active'' '
                || 'and source is distinct from ''conversation''', v_name, p_owner);
end;
$$;
revoke all on function public.memory_dedicated_vector_index_sql(uuid, boolean) from public, anon, authenticated;
grant execute on function public.memory_dedicated_vector_index_sql(uuid, boolean) to service_role;

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
set plan_cache_mode = 'force_generic_plan'
rows 20
as $$
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
             where r.owner_id = m.owner_id and (r.from_id = m.id or r.to_id = m.id))
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
           where r.owner_id = m.owner_id and (r.from_id = m.id or r.to_id = m.id))
    from nearest n
    join public.devai_memories m on m.id = n.id
   where 1 - n.distance > similarity_threshold
   order by n.distance, n.id;
  perform set_config('enable_sort', v_sort, true);
end;
$$;

