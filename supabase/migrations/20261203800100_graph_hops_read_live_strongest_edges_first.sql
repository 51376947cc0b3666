-- memory_graph_neighbours reads each node's strongest edges first and gives its places to edges
-- that lead somewhere new and alive.
--
-- Each node of the walk read its first 32 edges per direction in index order (the order they were
-- written), and only then dropped the edges to memories already visited and those the caller may
-- not be given (forgotten, superseded, faded, outside the scopes). On a node with more than 32
-- edges, the live neighbours could be missed: 32 edges to forgotten memories, written first, left
-- the live one out, and an edge of strength 0.9 written after 40 of strength 0.1 was never read
-- (test 99_graph_hops_read_live_strongest_edges_first).
--
-- Now the edges of a node are read strongest first (strength × confidence, the indexes
-- memory_relations_from_strongest / _to_strongest), those to visited memories are skipped in the
-- index scan, and of the first 2 × 32 left the first 32 whose memory is visible are taken. The
-- answer per node and direction is bounded as before (32); the work is at most 64 edges and their
-- memories, and reads past the first 32 only when edges to dead or visited memories stood in the
-- way. The plan is made for a node of average degree (3 edges), for which a bitmap scan of
-- memory_relations_to and a sort look cheaper; on a node with 400 edges that sort reads them all,
-- so the function plans without bitmap scans and walks the ordered indexes (200 hybrid_search
-- calls of depth 2 on a 20,000-memory tenant: 703,567 buffers before, 1,039,242 with the bitmap
-- scan, 743,804 without). docs/graph.md#graph-signals.

create index if not exists memory_relations_from_strongest
  on public.memory_relations (from_id, ((strength * confidence)) desc);
create index if not exists memory_relations_to_strongest
  on public.memory_relations (to_id, ((strength * confidence)) desc);

CREATE OR REPLACE FUNCTION public.memory_graph_neighbours(seed_ids uuid[], edge_types text[] DEFAULT NULL::text[], max_depth integer DEFAULT 2, max_nodes integer DEFAULT 50, as_of timestamp with time zone DEFAULT NULL::timestamp with time zone, match_namespaces text[] DEFAULT NULL::text[], direction text DEFAULT 'forward'::text) RETURNS TABLE(id uuid, via uuid, edge_type text, depth integer, weight double precision)
    LANGUAGE plpgsql STABLE ROWS 50
    SET search_path TO ''
    SET enable_bitmapscan TO 'off'
    AS $$
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
                        -- strongest first, skipping memories already visited, and of the first
                        -- 2 × v_fanout the first v_fanout alive (a forgotten neighbour does not
                        -- take a live one's place)
                        (select r.other, r.relation_type, r.strength, r.confidence
                           from (select r.to_id as other, r.relation_type, r.strength::double precision as strength,
                                        r.confidence::double precision as confidence
                                   from public.memory_relations r
                                  where r.from_id = f.id and r.relation_type = any (v_types)
                                    and (v_forward or not (r.relation_type = any (v_directed)))
                                    and r.created_at <= v_at and r.valid_from <= v_at and (r.valid_until is null or r.valid_until > v_at)
                                    and r.to_id <> all (v_visited)
                                  order by r.strength * r.confidence desc
                                  limit v_fanout * 2) r
                          cross join lateral (select m from public.devai_memories m where m.id = r.other offset 0) v
                          where public.memory_graph_visible(v.m, as_of, v_prefixes)
                          limit v_fanout)
                        union all
                        (select r.other, r.relation_type, r.strength, r.confidence
                           from (select r.from_id as other, r.relation_type, r.strength::double precision as strength,
                                        r.confidence::double precision as confidence
                                   from public.memory_relations r
                                  where r.to_id = f.id and r.relation_type = any (v_types)
                                    and (v_backward or not (r.relation_type = any (v_directed)))
                                    and r.created_at <= v_at and r.valid_from <= v_at and (r.valid_until is null or r.valid_until > v_at)
                                    and r.from_id <> all (v_visited)
                                  order by r.strength * r.confidence desc
                                  limit v_fanout * 2) r
                          cross join lateral (select m from public.devai_memories m where m.id = r.other offset 0) v
                          where public.memory_graph_visible(v.m, as_of, v_prefixes)
                          limit v_fanout)
                      ) e
                     order by e.other, f.w * e.strength * e.confidence desc, f.id) n
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
