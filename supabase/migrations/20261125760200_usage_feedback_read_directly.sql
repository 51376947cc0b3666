-- Usage feedback read for what a search found, not through context assembly's candidate lookup.
-- retrieve_for_turn and memory.query called public.memory_feedback for the ids their search
-- returned, and memory_feedback called public.context_candidates: its file, module, branch and
-- category lookups (empty, but planned and run), its scope and argument checks, its relation
-- subquery, per call. On the 100k bench's handler suite (pg_stat_statements, track = all) that was
-- 0.80 ms of the 9.4 ms retrieve_for_turn took, for at most 20 ids whose usage is one primary-key
-- probe each; 0.33 ms with this file (9.4 -> 8.7 ms for retrieve_for_turn). memory_feedback now
-- reads memory_usage and the cited files for those ids directly, under the same visibility rules
-- (the tenant, valid, active, strength > 0.05, no raw episodes, '/'-bounded scopes). The cited
-- files (entity links to file entities and metadata.files, leading ./ removed) are read for all
-- the ids in one statement by public.memory_cited_files, which context_candidates uses too (for
-- all its candidates at once); context_candidates is otherwise as 20261124600100.

-- The files each of these memories cites: its links to file entities and its metadata.files,
-- leading ./ removed, each once, sorted; a memory that cites none has no row. Code lineage
-- compares them with the files an agent reports deleted or renamed (docs/context.md#code-lineage).
-- One statement for all the ids (the same read per memory cost a statement each).
create or replace function public.memory_cited_files(p_ids uuid[], p_owner uuid)
returns table (memory_id uuid, files text[])
language plpgsql
stable
security invoker
set search_path = ''
rows 20
as $$
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
            join public.devai_memories m on m.id = i.id and m.owner_id = p_owner
           cross join lateral jsonb_array_elements_text(
                  case when jsonb_typeof(m.metadata -> 'files') = 'array' then m.metadata -> 'files'
                       else '[]'::jsonb end) as x) c
   group by c.id;
end;
$$;
revoke all on function public.memory_cited_files(uuid[], uuid) from public, anon;
grant execute on function public.memory_cited_files(uuid[], uuid) to authenticated, service_role;

-- What agents reported about these memories and the files they cite, as [{"id", "cited_files",
-- "citation_count", "ignore_count"}], for ranking's usage factor and code lineage (docs/context.md,
-- _shared/context/feedback.ts); only memories the search's rules let a live search return. As the
-- caller (RLS). Read in the same statement as the search by retrieve_for_turn and memory.query.
create or replace function public.memory_feedback(p_ids uuid[], p_namespaces text[], p_owner uuid default auth.uid())
returns jsonb
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
  v_scopes text[] := public.context_scope_prefixes(p_namespaces);
begin
  return (
  select coalesce(jsonb_agg(jsonb_build_object(
           'id', m.id, 'cited_files', coalesce(f.files, '{}'),
           'citation_count', coalesce(u.citation_count, 0), 'ignore_count', coalesce(u.ignore_count, 0))), '[]')
    from (select distinct x.id from unnest(p_ids) as x(id)) i
    join public.devai_memories m on m.id = i.id
    left join public.memory_usage u on u.memory_id = m.id
    left join public.memory_cited_files(p_ids, p_owner) f on f.memory_id = m.id
   where m.owner_id = p_owner and m.is_valid and m.state = 'active' and m.strength > 0.05
     and m.source is distinct from 'conversation'
     and (m.namespace || '/') ^@ any (v_scopes));
end;
$$;

create or replace function public.context_candidates(
  match_namespaces text[],
  given_ids uuid[] default null,
  files text[] default null,
  modules text[] default null,
  branch text default null,
  background_categories text[] default null,
  recent_since timestamptz default null,
  contradictions boolean default false,
  max_per_kind integer default 30,
  match_owner uuid default auth.uid()
)
returns table (
  id uuid,
  kind text,
  detail text,
  weight double precision,
  content text,
  memory_type text,
  namespace text,
  strength double precision,
  priority text,
  importance smallint,
  pinned boolean,
  source text,
  metadata jsonb,
  created_at timestamptz,
  category text,
  max_relation_strength real,
  cited_files text[],
  retrieval_count integer,
  citation_count integer,
  ignore_count integer
)
language plpgsql
stable
security invoker
set search_path = ''
as $$
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
         and mm.source is distinct from 'conversation' and (mm.namespace || '/') ^@ any (v_scopes)) m
    left join public.memory_usage u on u.memory_id = m.id
    left join public.memory_cited_files(v_ids, match_owner) f on f.memory_id = m.id
   order by r.kind, r.weight desc, r.id;
end;
$$;
revoke all on function public.context_candidates(text[], uuid[], text[], text[], text, text[], timestamptz, boolean, integer, uuid)
  from public, anon;
grant execute on function public.context_candidates(text[], uuid[], text[], text[], text, text[], timestamptz, boolean, integer, uuid)
  to authenticated, service_role;
