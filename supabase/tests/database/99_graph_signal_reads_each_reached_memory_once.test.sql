-- The hybrid search's graph signal takes each memory it reaches once, by its best way, and reads
-- it once (migration 20261209200300): a memory reached through an entity was read for each best
-- hit naming that entity, twice each time (its visibility for the entity hop, then its fields).
-- Here 20 memories "release step k" all name ci.yml; the 5 best hits (the keyword list's first)
-- are the graph's seeds, and each reaches the others through the file (one is forgotten): 216
-- rows of devai_memories read by the search before, 90 now. The same 14 come through the graph.
begin;
select plan(4);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace, embedding, embedding_model)
select ('99f30000-0000-4000-8000-' || lpad(g::text, 12, '0'))::uuid, '99f30000-0000-4000-8000-00000000000d',
       'release step ' || g || case when g <= 5 then ' of the release' else '' end, 'semantic', 'devai/project/u',
       tests.embedding(array[1, g]::real[]), 'm'
  from generate_series(1, 20) g;
insert into public.memory_entities (id, owner_id, canonical_name, entity_type)
values ('99f30000-0000-4000-8000-0000000000e1', '99f30000-0000-4000-8000-00000000000d', 'ci.yml', 'file');
insert into public.memory_entity_links (owner_id, memory_id, entity_id, mention)
select '99f30000-0000-4000-8000-00000000000d', ('99f30000-0000-4000-8000-' || lpad(g::text, 12, '0'))::uuid,
       '99f30000-0000-4000-8000-0000000000e1', 'ci.yml'
  from generate_series(1, 20) g;
-- one of them forgotten: no way reaches it
update public.devai_memories set state = 'soft_deleted', purge_at = now() + interval '30 days'
 where id = '99f30000-0000-4000-8000-000000000020';

select tests.authenticate_as('99f30000-0000-4000-8000-00000000000d');
create temp table via_entity (id uuid, graph_rank integer, graph_edge text, graph_via uuid);
grant all on via_entity to authenticated;
select cmp_ok(tests.rows_read_by('public.devai_memories',
                $$insert into via_entity select h.id, h.graph_rank, h.graph_edge, h.graph_via
                    from public.hybrid_search('release release', match_namespaces => array['devai/project/u'],
                                              graph_depth => 1, match_count => 50) h$$),
              '<=', 110::bigint,
              'each memory the graph reaches is read once (90 rows read by the search; 216 before)');
select tests.clear_authentication();
select is((select count(*) from via_entity where graph_rank is not null), 14::bigint,
          'the graph brings the 14 live memories naming the file that are not best hits');
select is((select count(*) from via_entity where graph_rank is not null and graph_edge = 'entity'
             and graph_via between '99f30000-0000-4000-8000-000000000001' and '99f30000-0000-4000-8000-000000000005'),
          14::bigint, 'each through the file, from a best hit');
select ok(not exists (select 1 from via_entity where id = '99f30000-0000-4000-8000-000000000020'),
          'the forgotten one is not reached (its visibility is tested once, with the filters)');

select * from finish();
rollback;
