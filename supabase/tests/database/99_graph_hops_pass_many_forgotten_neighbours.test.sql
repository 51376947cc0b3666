-- memory_graph_neighbours reads a node's edges until it has found its live neighbours, however many
-- strong edges to forgotten memories stand before them (migration 20261205500000,
-- docs/graph.md#graph-signals). It read the first 2 × 32 edges strongest first and kept the live
-- ones among them: 64 or more strong edges to forgotten memories hid every live neighbour.
begin;
select plan(3);

-- s: 100 related_to edges (0.8) to memories forgotten since, one (0.5) to live l1 and one (0.4)
-- to live l2. t: 40 edges (0.9) to live memories x* and one (0.1) to live l3.
create function pg_temp.mid(k text) returns uuid language sql as $$
  select ('99d20000-0000-4000-8000-'
          || lpad(to_hex(case k when 's' then 1000 when 't' then 1001
                         else case left(k, 1) when 'l' then 2000 when 'f' then 100 when 'x' then 400 end
                              + substr(k, 2)::integer end), 12, '0'))::uuid
$$;
insert into public.devai_memories (id, owner_id, content, memory_type, namespace)
select pg_temp.mid(k), '99d00000-0000-4000-8000-00000000000b'::uuid, 'memory ' || k, 'semantic', 'devai/project/g'
  from (select 's' as k union all select 't' union all select 'l1' union all select 'l2' union all select 'l3'
        union all select 'f' || g from generate_series(1, 100) g
        union all select 'x' || g from generate_series(1, 40) g) x;
insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength)
select '99d00000-0000-4000-8000-00000000000b', pg_temp.mid(a), pg_temp.mid(b), 'related_to', w
  from (select 's', 'f' || g, 0.8 from generate_series(1, 100) g
        union all select 's', 'l1', 0.5
        union all select 's', 'l2', 0.4
        union all select 't', 'x' || g, 0.9 from generate_series(1, 40) g
        union all select 't', 'l3', 0.1) x(a, b, w);
update public.devai_memories set state = 'soft_deleted', purge_at = now() + interval '30 days'
 where id in (select pg_temp.mid('f' || g) from generate_series(1, 100) g);

select tests.authenticate_as('99d00000-0000-4000-8000-00000000000b');
create temp table hop as
  select n.id, n.via from public.memory_graph_neighbours(
    array[pg_temp.mid('s'), pg_temp.mid('t')], array['related_to'], 1, 500, null, null, 'forward') n;
select is((select array_agg(id order by id) from hop where via = pg_temp.mid('s')),
          array[pg_temp.mid('l1'), pg_temp.mid('l2')],
          'the live neighbours are reached behind 100 stronger edges to forgotten memories');
select is((select count(*) from hop where via = pg_temp.mid('t')), 32::bigint,
          'still at most 32 neighbours per node and direction (t has 41 live ones)');
select ok(not exists (select 1 from hop where id = pg_temp.mid('l3')),
          'the 32 kept are the strongest (the weakest live edge of t is left)');
select tests.clear_authentication();

select * from finish();
rollback;
