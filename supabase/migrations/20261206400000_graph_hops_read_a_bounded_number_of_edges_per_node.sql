-- memory_graph_neighbours reads at most 256 edges per node and direction, however many of them lead
-- to forgotten memories (docs/graph.md#graph-signals).
--
-- Migration 20261205500000 read a node's edges, strongest first, until its 32nd live neighbour: a
-- hub with thousands of strong edges to memories forgotten, superseded, faded or out of scope was
-- read whole at every visit, an index read, a heap read and a memory lookup per edge (one node with
-- 20,000 edges of 0.8 to forgotten notes and one of 0.5 to a live fact: 60,498 buffers and 65 ms a
-- call; 5,000 such edges: 15,132 buffers, 18 ms).
--
-- Now each direction first takes the node's 256 strongest edges valid then to memories not visited
-- yet (the index memory_relations_from_strongest / _to_strongest, stopped by that limit), then
-- follows the strongest 32 of them that lead to a memory the caller may be given, as before. A node
-- whose live neighbours all stand behind more than 224 stronger edges to dead ones (fewer than 32
-- live among its 256 strongest) is cut there: the live ones further down are not followed from it.
-- The same hub: 256 edges read, 780-830 buffers, 1.5-2.5 ms. A node whose strongest 32 are live
-- reads 32 edges (the outer read keeps the inner order, so its limit stops it at the 32nd live
-- one). Work per call: at most 256 edges per node and direction expanded.
--
-- The function now runs with sorting off (as history_ts_in_write_order does, migration
-- 20261205200100), so that the read of a node's edges is the walk of the ordered index whatever the
-- statistics say. Where they say a node has few edges (any graph but a single hub's), the limit did
-- not stop the read: the node's edges were read whole through memory_relations_from and sorted
-- (the hub of 1,000 edges to forgotten memories: its 1,001 edges read, under this body and the
-- last; a node of 1,000 live neighbours: 1,001 edges read for the 32 kept, now 32). The sorts
-- with no other plan (the level's order, distinct on) still run, and their
-- disabled cost passes jit_above_cost: JIT is off too, as for claim_jobs (compiling took 0.4 s a
-- call).
-- pgTAP 99_graph_hops_read_a_bounded_number_of_edges_per_node.

CREATE OR REPLACE FUNCTION public.memory_graph_neighbours(seed_ids uuid[], edge_types text[] DEFAULT NULL::text[], max_depth integer DEFAULT 2, max_nodes integer DEFAULT 50, as_of timestamp with time zone DEFAULT NULL::timestamp with time zone, match_namespaces text[] DEFAULT NULL::text[], direction text DEFAULT 'forward'::text) RETURNS TABLE(id uuid, via uuid, edge_type text, depth integer, weight double precision)
    LANGUAGE plpgsql STABLE ROWS 50
    SET search_path TO ''
    SET enable_bitmapscan TO 'off'
    SET enable_sort TO 'off'
    SET jit TO 'off'
    AS $$
declare
  v_all      constant text[] := array['related_to', 'supersedes', 'derived_from', 'contradicts', 'temporal', 'causal', 'entity'];
  v_directed constant text[] := array['supersedes', 'derived_from', 'temporal', 'causal'];
  v_fanout   constant integer := 32;
  v_read     constant integer := 256;  -- edges read per node and direction, live or not
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
                        -- strongest first, skipping memories already visited, read until v_fanout
                        -- alive are found (forgotten neighbours do not take a live one's place) or
                        -- v_read edges are read (a hub of thousands of edges to forgotten memories
                        -- costs v_read, not all of them); the outer read keeps the inner order, so
                        -- its limit stops the walk of the ordered index at the v_fanout-th live one
                        (select r.other, r.relation_type, r.strength, r.confidence
                           from (select r.to_id as other, r.relation_type, r.strength::double precision as strength,
                                        r.confidence::double precision as confidence, r.strength * r.confidence as rank
                                   from public.memory_relations r
                                  where r.from_id = f.id and r.relation_type = any (v_types)
                                    and (v_forward or not (r.relation_type = any (v_directed)))
                                    and r.created_at <= v_at and r.valid_from <= v_at
                                    and (r.valid_until is null or r.valid_until > v_at)
                                    and r.to_id <> all (v_visited)
                                  order by r.strength * r.confidence desc
                                  limit v_read) r
                           cross join lateral (select m from public.devai_memories m where m.id = r.other offset 0) v
                           where public.memory_graph_visible(v.m, as_of, v_prefixes)
                           order by r.rank desc
                           limit v_fanout)
                        union all
                        (select r.other, r.relation_type, r.strength, r.confidence
                           from (select r.from_id as other, r.relation_type, r.strength::double precision as strength,
                                        r.confidence::double precision as confidence, r.strength * r.confidence as rank
                                   from public.memory_relations r
                                  where r.to_id = f.id and r.relation_type = any (v_types)
                                    and (v_backward or not (r.relation_type = any (v_directed)))
                                    and r.created_at <= v_at and r.valid_from <= v_at
                                    and (r.valid_until is null or r.valid_until > v_at)
                                    and r.from_id <> all (v_visited)
                                  order by r.strength * r.confidence desc
                                  limit v_read) r
                           cross join lateral (select m from public.devai_memories m where m.id = r.other offset 0) v
                           where public.memory_graph_visible(v.m, as_of, v_prefixes)
                           order by r.rank desc
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
