-- Graph memory, part 3: the graph signals retrieval follows. Three SQL functions, all security
-- invoker (RLS: the caller's tenant only), search_path '', bounded in work whatever the input,
-- and limited to the caller's scopes when given (text[] of namespace prefixes, each matched by
-- path segment with starts_with, as match_memories does; null = the whole tenant):
--   memory_graph_neighbours  bounded BFS over typed edges from seed memories
--   memory_temporal_chain    the episodes before / after a seed episode (temporal edges)
--   memory_entity_lookup     memories linked to the entities some terms resolve to
-- Only memories held at the instant asked (as_of; now when null: valid and active) are returned
-- or walked through, and only edges valid then are followed. See docs/graph.md#graph-signals.

-- The scopes as '/'-terminated prefixes (null or empty: no scope filter). Shared by the functions
-- below and by match_memories' callers' rule: 'devai/project/a' matches itself and
-- 'devai/project/a/...', never 'devai/project/ab'.
create or replace function public.memory_scope_prefixes(p_scopes text[])
returns text[]
language sql
immutable
parallel safe
security invoker
set search_path = ''
as $$
  select case when cardinality(p) = 0 then null else p end
    from (select coalesce(array_agg(distinct rtrim(s, '/') || '/'), '{}') as p
            from unnest(coalesce(p_scopes, '{}'::text[])) as s
           where s is not null and rtrim(s, '/') <> '') as x
$$;
revoke all on function public.memory_scope_prefixes(text[]) from public, anon;
grant execute on function public.memory_scope_prefixes(text[]) to authenticated, service_role;

-- Is memory m returned by a graph signal: held at p_at (as_of given: public.memory_at; else valid
-- and active now) and inside the scopes (null: anywhere in the tenant). Called by the functions
-- below for every node they reach.
create or replace function public.memory_graph_visible(m public.devai_memories, p_at timestamptz, p_prefixes text[])
returns boolean
language sql
stable
security invoker
set search_path = ''
as $$
  select (p_prefixes is null or (m.namespace || '/') ^@ any (p_prefixes))
     and case when p_at is null then m.is_valid and m.state = 'active'
              else (select a.held from public.memory_at(m, p_at) a) end
$$;
revoke all on function public.memory_graph_visible(public.devai_memories, timestamptz, text[]) from public, anon;
grant execute on function public.memory_graph_visible(public.devai_memories, timestamptz, text[]) to authenticated, service_role;

-- Bounded breadth-first search over typed edges from seed memories (the causal chain of a "why"
-- question, the facts an episode led to, the neighbourhood of the best hits).
--   seed_ids     at most 100; they are not returned
--   edge_types   which relation types to follow (null: all); at least one known type
--   max_depth    1-200 hops;  max_nodes  1-500 memories returned
--   as_of        follow edges valid then and return memories held then (null: now)
--   match_namespaces  the scopes (null: the whole tenant); nodes outside are neither returned nor walked
--   direction    for directional types (temporal, causal, derived_from, supersedes): 'forward'
--                follows from → to (later episode, effect, source episode, replaced fact),
--                'backward' to → from, 'both'; symmetric types (related_to, contradicts, entity)
--                are always followed both ways
-- Returns each memory once, at its first depth: id, via (the node it was reached from), the edge
-- type, depth, and weight = the product of strength × confidence of the edges on its path ×
-- 0.5^(depth - 1), the best path at that depth; ordered by depth, weight desc.
-- Work: every node is expanded once, reading at most 32 edges per node and direction, and at
-- most max_nodes + 100 nodes (the returned ones and the seeds) are expanded, so one call reads at
-- most ~40,000 edges however deep it goes.
create or replace function public.memory_graph_neighbours(
  seed_ids uuid[],
  edge_types text[] default null,
  max_depth integer default 2,
  max_nodes integer default 50,
  as_of timestamptz default null,
  match_namespaces text[] default null,
  direction text default 'forward'
)
returns table (id uuid, via uuid, edge_type text, depth integer, weight double precision)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
  v_all      constant text[] := array['related_to', 'supersedes', 'derived_from', 'contradicts', 'temporal', 'causal', 'entity'];
  v_directed constant text[] := array['supersedes', 'derived_from', 'temporal', 'causal'];
  v_fanout   constant integer := 32;
  v_types    text[] := coalesce(edge_types, v_all);
  v_at       timestamptz := coalesce(as_of, now());
  v_prefixes text[] := public.memory_scope_prefixes(match_namespaces);
  v_forward  boolean;
  v_backward boolean;
  v_visited  uuid[];
  v_front    uuid[];
  v_weights  double precision[];
  v_found    integer := 0;
  v_depth    integer := 0;
  v_ids      uuid[];
  v_vias     uuid[];
  v_edges    text[];
  v_next     double precision[];
begin
  if seed_ids is null or cardinality(seed_ids) = 0 then
    return;
  end if;
  if cardinality(seed_ids) > 100 then
    raise exception 'at most 100 seed ids, got %', cardinality(seed_ids) using errcode = '22023';
  end if;
  if max_depth is null or max_depth < 1 or max_depth > 200 then
    raise exception 'max_depth must be between 1 and 200, got %', max_depth using errcode = '22023';
  end if;
  if max_nodes is null or max_nodes < 1 or max_nodes > 500 then
    raise exception 'max_nodes must be between 1 and 500, got %', max_nodes using errcode = '22023';
  end if;
  if cardinality(v_types) = 0 or not (v_types <@ v_all) then
    raise exception 'edge_types must be among %, got %', v_all, edge_types using errcode = '22023';
  end if;
  if direction is null or direction not in ('forward', 'backward', 'both') then
    raise exception 'direction must be forward, backward or both, got %', direction using errcode = '22023';
  end if;
  v_forward := direction in ('forward', 'both');
  v_backward := direction in ('backward', 'both');

  select array_agg(distinct s) into v_visited from unnest(seed_ids) s where s is not null;
  v_front := v_visited;
  select array_agg(1::double precision) into v_weights from unnest(v_front);

  while v_depth < max_depth and v_found < max_nodes and cardinality(v_front) > 0 loop
    v_depth := v_depth + 1;
    -- The next level: neighbours not seen yet, each once with its best edge, visible, best first.
    select coalesce(array_agg(c.id order by c.weight desc, c.id), '{}'),
           coalesce(array_agg(c.via order by c.weight desc, c.id), '{}'),
           coalesce(array_agg(c.edge_type order by c.weight desc, c.id), '{}'),
           coalesce(array_agg(c.weight order by c.weight desc, c.id), '{}')
      into v_ids, v_vias, v_edges, v_next
      from (select n.id, n.via, n.edge_type, n.weight
              from (select distinct on (e.other) e.other as id, f.id as via, e.relation_type as edge_type,
                           f.w * e.strength * e.confidence * case when v_depth = 1 then 1 else 0.5 end as weight
                      from unnest(v_front, v_weights) as f(id, w)
                      cross join lateral (
                        (select r.to_id as other, r.relation_type, r.strength::double precision as strength,
                                r.confidence::double precision as confidence
                           from public.memory_relations r
                          where r.from_id = f.id and r.relation_type = any (v_types)
                            and (v_forward or not (r.relation_type = any (v_directed)))
                            and r.created_at <= v_at and r.valid_from <= v_at and (r.valid_until is null or r.valid_until > v_at)
                          limit v_fanout)
                        union all
                        (select r.from_id, r.relation_type, r.strength::double precision, r.confidence::double precision
                           from public.memory_relations r
                          where r.to_id = f.id and r.relation_type = any (v_types)
                            and (v_backward or not (r.relation_type = any (v_directed)))
                            and r.created_at <= v_at and r.valid_from <= v_at and (r.valid_until is null or r.valid_until > v_at)
                          limit v_fanout)
                      ) e
                     where e.other <> all (v_visited)
                     order by e.other, f.w * e.strength * e.confidence desc, f.id) n
              join public.devai_memories m on m.id = n.id
             where public.memory_graph_visible(m, as_of, v_prefixes)
             order by n.weight desc, n.id
             limit max_nodes - v_found) c;

    for i in 1 .. cardinality(v_ids) loop
      id := v_ids[i]; via := v_vias[i]; edge_type := v_edges[i]; depth := v_depth; weight := v_next[i];
      return next;
    end loop;
    v_found := v_found + cardinality(v_ids);
    v_visited := v_visited || v_ids;
    v_front := v_ids;
    v_weights := v_next;
  end loop;
end;
$$;
revoke all on function public.memory_graph_neighbours(uuid[], text[], integer, integer, timestamptz, text[], text) from public, anon;
grant execute on function public.memory_graph_neighbours(uuid[], text[], integer, integer, timestamptz, text[], text)
  to authenticated, service_role;

-- The temporal chain of a seed episode: the episodes after it ('forward'), before it
-- ('backward') or both, following temporal edges (episode → next episode of its session), at most
-- max_nodes (1-200) per direction. Rows: id, via, depth (hops from the seed), chain_direction
-- ('forward' | 'backward'), event_at (the episode's valid_from: when the message was sent) and
-- weight (0.5^(depth - 1), the BFS rule). Ordered as a timeline: backward rows from the farthest,
-- then forward rows from the nearest. The walk is public.memory_graph_neighbours over temporal
-- edges, so the same visibility, scope and as_of rules apply.
create or replace function public.memory_temporal_chain(
  seed_id uuid,
  direction text default 'both',
  max_nodes integer default 20,
  as_of timestamptz default null,
  match_namespaces text[] default null
)
returns table (id uuid, via uuid, depth integer, chain_direction text, event_at timestamptz, weight double precision)
language plpgsql
stable
security invoker
set search_path = ''
as $$
begin
  if direction is null or direction not in ('forward', 'backward', 'both') then
    raise exception 'direction must be forward, backward or both, got %', direction using errcode = '22023';
  end if;
  if max_nodes is null or max_nodes < 1 or max_nodes > 200 then
    raise exception 'max_nodes must be between 1 and 200, got %', max_nodes using errcode = '22023';
  end if;
  return query
  select n.id, n.via, n.depth, d.dir, m.valid_from, n.weight
    from unnest(case memory_temporal_chain.direction when 'both' then array['backward', 'forward']
                                                     else array[memory_temporal_chain.direction] end) as d(dir)
   cross join lateral public.memory_graph_neighbours(array[seed_id], array['temporal'], max_nodes, max_nodes,
                                                     as_of, match_namespaces, d.dir) n
    join public.devai_memories m on m.id = n.id
   order by d.dir, case when d.dir = 'backward' then -n.depth else n.depth end;
end;
$$;
revoke all on function public.memory_temporal_chain(uuid, text, integer, timestamptz, text[]) from public, anon;
grant execute on function public.memory_temporal_chain(uuid, text, integer, timestamptz, text[]) to authenticated, service_role;

-- Memories linked to the entities some terms name ("who/what" questions): each term (at most 20,
-- each at most 200 characters; plain text, never a pattern) is resolved inside the caller's tenant
-- by its key (public.memory_entity_key: case and punctuation ignored) against canonical names and
-- aliases, at most 20 entities in all; then their linked memories held at as_of (null: now) and
-- inside the scopes, newest first (by valid_from, when the fact started to hold or the message was
-- sent), at most max_nodes (1-500). A memory linked to several of the entities comes once, with
-- its best link. weight = the link's confidence × 1 for a canonical-name match, 0.8 for an alias.
-- Work: at most 20 entities × 2·max_nodes of their newest links are read.
create or replace function public.memory_entity_lookup(
  terms text[],
  max_nodes integer default 50,
  as_of timestamptz default null,
  match_namespaces text[] default null
)
returns table (id uuid, entity_id uuid, entity_name text, entity_type text, weight double precision, event_at timestamptz)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
  v_owner    uuid := auth.uid();
  v_prefixes text[] := public.memory_scope_prefixes(match_namespaces);
  v_keys     text[];
begin
  if max_nodes is null or max_nodes < 1 or max_nodes > 500 then
    raise exception 'max_nodes must be between 1 and 500, got %', max_nodes using errcode = '22023';
  end if;
  if cardinality(terms) > 20 then
    raise exception 'at most 20 terms, got %', cardinality(terms) using errcode = '22023';
  end if;
  select array_agg(distinct public.memory_entity_key(left(t, 200))) into v_keys
    from unnest(coalesce(terms, '{}'::text[])) as t
   where public.memory_entity_key(left(t, 200)) <> '';
  if v_owner is null or v_keys is null then
    return;
  end if;

  return query
  with matched as (
    select e.id, 1.0::double precision as quality
      from public.memory_entities e
     where e.owner_id = v_owner and e.normalized_name = any (v_keys)
    union all
    select e.id, 0.8
      from public.memory_entities e
     where cardinality(e.alias_keys) > 0
       and e.alias_keys && (select array_agg(v_owner::text || '|' || k) from unnest(v_keys) as k)
  ),
  entities as (
    select e.id, e.canonical_name, e.entity_type, q.quality
      from (select m.id, max(m.quality) as quality from matched m group by m.id) q
      join public.memory_entities e on e.id = q.id
     order by q.quality desc, e.mention_count desc, e.id
     limit 20
  ),
  hits as (
    select distinct on (m.id) m.id, e.id as entity_id, e.canonical_name, e.entity_type,
           l.confidence * e.quality as weight, m.valid_from
      from entities e
     cross join lateral (
       select x.memory_id, x.confidence from public.memory_entity_links x
        where x.entity_id = e.id
        order by x.created_at desc
        limit max_nodes * 2) l
      join public.devai_memories m on m.id = l.memory_id
     where public.memory_graph_visible(m, as_of, v_prefixes)
     order by m.id, l.confidence * e.quality desc, e.id
  )
  select h.id, h.entity_id, h.canonical_name, h.entity_type, h.weight, h.valid_from
    from hits h
   order by h.valid_from desc, h.id
   limit max_nodes;
end;
$$;
revoke all on function public.memory_entity_lookup(text[], integer, timestamptz, text[]) from public, anon;
grant execute on function public.memory_entity_lookup(text[], integer, timestamptz, text[]) to authenticated, service_role;
