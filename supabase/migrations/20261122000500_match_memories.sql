-- Layer 5: RPCs. match_memories is the seed's similarity search, made safe for many tenants.
--
-- Kept from the seed: parameters (query_embedding, match_namespace, match_count,
-- similarity_threshold) and result columns (id, content, similarity, memory_type, namespace,
-- strength, priority). Added:
--   match_owner            the tenant (defaults to the caller's auth.uid(); RLS applies anyway:
--                          the function is security invoker)
--   match_embedding_model  only vectors from the same model are compared
--   match_namespaces       several scopes in one search (retrieval's global + project + user)
-- Scopes match by path segment with starts_with, never LIKE: `devai/project/task_forge` matches
-- `devai/project/task_forge` and `devai/project/task_forge/...`, never `devai/project/taskxforge`
-- nor `devai/project/task_forge2`. Excluded: invalid, soft-deleted, strength <= 0.05.
-- The nearest match_count rows are found first (HNSW with pgvector 0.8 iterative scans, so
-- selective tenant/namespace filters keep recall), then the threshold is applied and rows are
-- re-sorted exactly (relaxed_order may return them slightly out of order).
-- Called by memory-retrieve, memory-dedup and the benchmarks.
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
set plan_cache_mode = 'force_custom_plan'
as $$
declare
  v_scopes text[];
begin
  if match_count is null or match_count < 1 or match_count > 200 then
    raise exception 'match_count must be between 1 and 200, got %', match_count using errcode = '22023';
  end if;
  select coalesce(array_agg(rtrim(s, '/') || '/'), '{}')
    into v_scopes
    from unnest(coalesce(match_namespaces, '{}'::text[]) || match_namespace) as s
   where s is not null and rtrim(s, '/') <> '';
  if cardinality(v_scopes) = 0 then
    raise exception 'at least one namespace scope is required' using errcode = '22023';
  end if;

  return query
  with nearest as materialized (
    select m.*, m.embedding operator(extensions.<=>) query_embedding as distance
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
  select n.id, n.content, 1 - n.distance, n.memory_type, n.namespace, n.strength, n.priority,
         n.importance, n.pinned, n.source, n.metadata, n.session_id, n.access_count,
         n.last_accessed_at, n.created_at, n.updated_at,
         (select max(r.strength) from public.memory_relations r
           where r.owner_id = n.owner_id and (r.from_id = n.id or r.to_id = n.id))
    from nearest n
   where 1 - n.distance > similarity_threshold
   order by n.distance;
end;
$$;

revoke all on function public.match_memories(extensions.vector, text, integer, double precision, uuid, text, text[]) from public, anon;
grant execute on function public.match_memories(extensions.vector, text, integer, double precision, uuid, text, text[])
  to authenticated, service_role;
