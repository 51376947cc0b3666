-- match_memories picks its search path from the size of the scope instead of leaving it to the
-- planner. The planner cannot estimate the scope filter ((namespace || '/') ^@ any(scopes): it
-- guessed 141 rows where 4,000 matched), so it sorted every in-scope row by exact distance, and
-- each distance reads a 2 KB vector out of TOAST (~14 us a row): 62 ms p50 for a 10k-memory
-- tenant (scripts/retrieve-latency.ts). Now:
--   1. count the rows in scope, stopping at exact_scan_max_rows + 1, through the owner + namespace
--      btree as byte ranges (namespace ~>=~ base and namespace ~<~ base || '0'; '0' follows '/'),
--      an index-only scan that costs well under a millisecond;
--   2. at most exact_scan_max_rows rows: exact search over just those rows (recall 1);
--   3. more: the HNSW index with pgvector 0.8 iterative scans (relaxed order, re-sorted exactly
--      after), which reads vectors from the index and fetches only the rows it returns.
--      ef_search 100 (pgvector's default is 40): on the local embedder's sparse vectors recall@15
--      against exact search rose from 0.953 to 0.973 for +0.1 ms (10k-memory tenant, 40 queries).
-- Parameters, result columns and rules are those of 20261122000500_match_memories.sql.

insert into public.memory_settings (name, value, description) values
  ('exact_scan_max_rows', 1000,
   'match_memories searches a scope of at most this many memories exactly (every vector compared); larger scopes go through the HNSW index with iterative scans. bench/README.md shows the trade-off.')
on conflict (name) do nothing;

alter table public.memory_settings add constraint memory_settings_exact_scan_max_rows_range
  check (name <> 'exact_scan_max_rows' or (value >= 0 and value <= 1000000 and value = trunc(value)));

create or replace function public.match_memories(
  query_embedding extensions.vector(512),
  match_namespace text,
  match_count integer default 15,
  similarity_threshold double precision default 0.7,
  match_owner uuid default auth.uid(),
  match_embedding_model text default 'text-embedding-3-small',
  match_namespaces text[] default null
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

revoke all on function public.match_memories(extensions.vector, text, integer, double precision, uuid, text, text[]) from public, anon;
grant execute on function public.match_memories(extensions.vector, text, integer, double precision, uuid, text, text[])
  to authenticated, service_role;
