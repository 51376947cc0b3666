-- memory_graph_neighbours reads at most 256 edges per node and direction, however many lead to
-- forgotten memories (migration 20261206400000, docs/graph.md#graph-signals). It read a node's
-- edges until its 32nd live neighbour: a hub with thousands of strong edges to forgotten memories
-- was read whole at every visit (20,000 such edges: 60,498 buffers, 65 ms a call). It runs with
-- sorting off, so that a node's read is the walk of the ordered index whatever the statistics say.
begin;
select plan(5);

-- s: 1,000 related_to edges (0.8) to memories forgotten since, one (0.5) to live l1.
-- t: 200 edges (0.9) to memories forgotten since, one (0.5) to live l2.
-- u: 300 edges (0.5) to live memories v*.
-- b*: 1,000 memories of one edge each, so that the statistics say what a graph's usually do (a
-- node has few edges): a plan made for that read a hub's edges whole through another index and
-- sorted them, whatever the limit.
create function pg_temp.mid(k text) returns uuid language sql as $$
  select ('99d30000-0000-4000-8000-'
          || lpad(to_hex(case k when 's' then 10000 when 't' then 10001 when 'u' then 10002
                         else case left(k, 1) when 'l' then 20000 when 'f' then 0 when 'g' then 5000 when 'b' then 30000 when 'v' then 40000 end
                              + substr(k, 2)::integer end), 12, '0'))::uuid
$$;
insert into public.devai_memories (id, owner_id, content, memory_type, namespace)
select pg_temp.mid(k), '99d00000-0000-4000-8000-00000000000d'::uuid, 'memory ' || k, 'semantic', 'devai/project/g'
  from (select 's' as k union all select 't' union all select 'u' union all select 'l1' union all select 'l2'
        union all select 'f' || g from generate_series(1, 1000) g
        union all select 'g' || g from generate_series(1, 200) g
        union all select 'b' || g from generate_series(1, 1000) g
        union all select 'v' || g from generate_series(1, 300) g) x;
insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength)
select '99d00000-0000-4000-8000-00000000000d', pg_temp.mid(a), pg_temp.mid(b), 'related_to', w
  from (select 's', 'f' || g, 0.8 from generate_series(1, 1000) g
        union all select 's', 'l1', 0.5
        union all select 't', 'g' || g, 0.9 from generate_series(1, 200) g
        union all select 't', 'l2', 0.5
        union all select 'b' || g, 'b' || (g % 1000 + 1), 0.5 from generate_series(1, 1000) g
        union all select 'u', 'v' || g, 0.5 from generate_series(1, 300) g) x(a, b, w);
update public.devai_memories set state = 'soft_deleted', purge_at = now() + interval '30 days'
 where id in (select pg_temp.mid('f' || g) from generate_series(1, 1000) g
              union all select pg_temp.mid('g' || g) from generate_series(1, 200) g);
analyze public.memory_relations;

select tests.authenticate_as('99d00000-0000-4000-8000-00000000000d');
create temp table hop (id uuid, via uuid);
select cmp_ok(tests.rows_read_by('public.memory_relations',
                $$insert into hop select n.id, n.via from public.memory_graph_neighbours(
                    array[pg_temp.mid('s'), pg_temp.mid('t')], array['related_to'], 1, 500, null, null, 'forward') n$$),
              '<=', 2 * 256::bigint,
              'at most 256 edges read per node and direction (s alone has 1,001; 1,202 were read before)');
select ok(exists (select 1 from hop where id = pg_temp.mid('l2') and via = pg_temp.mid('t')),
          'a live neighbour behind 200 stronger edges to forgotten memories is still reached');
select ok(not exists (select 1 from hop where id = pg_temp.mid('l1')),
          'one behind 1,000 is not: the read of a node stops at its 256th edge (docs/graph.md#graph-signals)');
select is((select count(*) from hop), 1::bigint, 'nothing else is answered');
select cmp_ok(tests.rows_read_by('public.memory_relations',
                $$select count(*) from public.memory_graph_neighbours(
                    array[pg_temp.mid('u')], array['related_to'], 1, 500, null, null, 'forward')$$),
              '<=', 32::bigint,
              'a node whose strongest edges are live reads the 32 it follows (all 300 were read before)');
select tests.clear_authentication();

select * from finish();
rollback;
