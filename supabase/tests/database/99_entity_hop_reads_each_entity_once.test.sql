-- The entity hop takes each entity the best hits name once (migration 20261209700200): its newest
-- facts were read once per best hit naming it, and how many live facts name it was counted again
-- for each of those facts. Here 20 memories "release step k" all name ci.yml and the 5 best hits
-- (the keyword list's first) are the graph's seeds: 1,790 rows of memory_entity_links read by the
-- search, 63 now. The same 15 memories come through the file, from the same best hits.
begin;
select plan(3);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace, embedding, embedding_model)
select ('99e72000-0000-4000-8000-' || lpad(g::text, 12, '0'))::uuid, '99e72000-0000-4000-8000-00000000000d',
       'release step ' || g || case when g <= 5 then ' of the release' else '' end, 'semantic', 'devai/project/u',
       tests.embedding(array[1, g]::real[]), 'm'
  from generate_series(1, 20) g;
insert into public.memory_entities (id, owner_id, canonical_name, entity_type)
values ('99e72000-0000-4000-8000-0000000000e1', '99e72000-0000-4000-8000-00000000000d', 'ci.yml', 'file');
insert into public.memory_entity_links (owner_id, memory_id, entity_id, mention)
select '99e72000-0000-4000-8000-00000000000d', ('99e72000-0000-4000-8000-' || lpad(g::text, 12, '0'))::uuid,
       '99e72000-0000-4000-8000-0000000000e1', 'ci.yml'
  from generate_series(1, 20) g;

select tests.authenticate_as('99e72000-0000-4000-8000-00000000000d');
create temp table via_entity (id uuid, graph_rank integer, graph_edge text, graph_via uuid);
grant all on via_entity to authenticated;
select cmp_ok(tests.rows_read_by('public.memory_entity_links',
                $$insert into via_entity select h.id, h.graph_rank, h.graph_edge, h.graph_via
                    from public.hybrid_search('release release', match_namespaces => array['devai/project/u'],
                                              graph_depth => 1, match_count => 50) h$$),
              '<=', 80::bigint,
              'the file''s count and facts are read once for its 5 best hits (63 rows read by the search; 1,790 before)');
select tests.clear_authentication();
select is((select count(*) from via_entity where graph_rank is not null), 15::bigint,
          'the graph brings the 15 memories naming the file that are not best hits');
select is((select count(*) from via_entity where graph_rank is not null and graph_edge = 'entity'
             and graph_via between '99e72000-0000-4000-8000-000000000001' and '99e72000-0000-4000-8000-000000000005'),
          15::bigint, 'each through the file, from a best hit');

select * from finish();
rollback;
