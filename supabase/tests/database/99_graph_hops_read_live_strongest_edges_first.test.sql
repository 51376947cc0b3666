-- memory_graph_neighbours reads each node's edges strongest first and gives their places to edges
-- that lead to live memories not visited yet (migration 20261203800100, docs/graph.md#graph-signals):
-- a node with more than 32 edges per direction still leads to its live and strongest neighbours.
begin;
select plan(4);

-- s: 40 related_to edges (0.8) to memories forgotten since, then one to live l1 (0.5); 40 weak
-- edges (0.1) to live memories w*, then one strong edge (0.9) to l2. t: 40 edges (0.9) to the
-- other seeds u*, 40 weak ones (0.1) to live memories x*, then one (0.2) to l3. Each l edge comes
-- after the others of its node in every order a read without strength could take: written after
-- them, an hour older (newest first), and to a larger id (f* 101-140, w* 201-240, u* 301-340,
-- x* 401-440, l* 2001-2003).
create function pg_temp.mid(k text) returns uuid language sql as $$
  select ('99d10000-0000-4000-8000-'
          || lpad(to_hex(case k when 's' then 1000 when 't' then 1001
                         else case left(k, 1) when 'l' then 2000 when 'f' then 100 when 'w' then 200 when 'u' then 300 when 'x' then 400 end
                              + substr(k, 2)::integer end), 12, '0'))::uuid
$$;
insert into public.devai_memories (id, owner_id, content, memory_type, namespace)
select pg_temp.mid(k), '99d00000-0000-4000-8000-00000000000a'::uuid, 'memory ' || k, 'semantic', 'devai/project/g'
  from (select 's' as k union all select 't' union all select 'l1' union all select 'l2' union all select 'l3'
        union all select 'f' || g from generate_series(1, 40) g
        union all select 'w' || g from generate_series(1, 40) g
        union all select 'u' || g from generate_series(1, 40) g
        union all select 'x' || g from generate_series(1, 40) g) x;
insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength, created_at)
select '99d00000-0000-4000-8000-00000000000a', pg_temp.mid(a), pg_temp.mid(b), 'related_to', w,
       now() - case when b like 'l%' then interval '1 hour' else interval '0' end
  from (select 's', 'f' || g, 0.8 from generate_series(1, 40) g
        union all select 's', 'l1', 0.5
        union all select 's', 'w' || g, 0.1 from generate_series(1, 40) g
        union all select 's', 'l2', 0.9
        union all select 't', 'u' || g, 0.9 from generate_series(1, 40) g
        union all select 't', 'x' || g, 0.1 from generate_series(1, 40) g
        union all select 't', 'l3', 0.2) x(a, b, w);
update public.devai_memories set state = 'soft_deleted', purge_at = now() + interval '30 days'
 where id in (select pg_temp.mid('f' || g) from generate_series(1, 40) g);

select tests.authenticate_as('99d00000-0000-4000-8000-00000000000a');
create temp table hop as
  select n.id, n.via from public.memory_graph_neighbours(
    array[pg_temp.mid('s'), pg_temp.mid('t')] || array(select pg_temp.mid('u' || g) from generate_series(1, 40) g),
    array['related_to'], 1, 500, null, null, 'forward') n;
select ok(exists (select 1 from hop where id = pg_temp.mid('l1')),
          'the live neighbour is reached though 40 edges to forgotten memories were written before it');
select ok(exists (select 1 from hop where id = pg_temp.mid('l2')),
          'the strongest edge is read though 40 weaker ones were written before it');
select ok(exists (select 1 from hop where id = pg_temp.mid('l3')),
          'edges to memories already visited (the other seeds) do not take the live one''s place');
select ok((select count(*) from hop where via = pg_temp.mid('s')) <= 32
          and (select count(*) from hop where via = pg_temp.mid('t')) <= 32,
          'still at most 32 neighbours per node and direction (t has 41 live ones)');
select tests.clear_authentication();

select * from finish();
rollback;
