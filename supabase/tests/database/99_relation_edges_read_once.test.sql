-- A retrieval reads its answer's relation edges once (migration 20261209700000): the relation
-- boost (max_relation_strength) and the related bullets each read the hits' edges and the memories
-- at their other ends, twice the rows of memory_relations. Here 5 hits "kiwi release k", each with
-- 2 edges out to a memory the question does not match (one of them forgotten): 10 edges, read 20
-- times before, 10 now. The boost and the bullets are those of before.
begin;
select plan(6);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace, embedding, embedding_model)
select ('99e70000-0000-4000-8000-' || lpad(g::text, 12, '0'))::uuid, '99e70000-0000-4000-8000-00000000000d',
       case when g <= 5 then 'kiwi release ' || g else 'other note ' || g end, 'semantic', 'devai/project/e',
       tests.embedding(array[1, g]::real[]), 'm'
  from generate_series(1, 15) g;
-- hit k (1-5) -> memories 2k+4 and 2k+5 (6-15), stronger for a later hit
insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength)
select '99e70000-0000-4000-8000-00000000000d', ('99e70000-0000-4000-8000-' || lpad(k::text, 12, '0'))::uuid,
       ('99e70000-0000-4000-8000-' || lpad((2 * k + 4 + j)::text, 12, '0'))::uuid, 'related_to', 0.4 + 0.1 * k + 0.05 * j
  from generate_series(1, 5) k cross join generate_series(0, 1) j;
-- the strongest edge's other end forgotten: no boost, no bullet from it
update public.devai_memories set state = 'soft_deleted', purge_at = now() + interval '30 days'
 where id = '99e70000-0000-4000-8000-000000000015';

-- Read by index whatever the statistics say (a full pgTAP run once planned a scan of the table
-- here, counting rows of other tests' transactions): what is counted is how often an edge is read.
analyze public.memory_relations;
set local enable_seqscan = off;
select tests.authenticate_as('99e70000-0000-4000-8000-00000000000d');
create temp table turn (r jsonb);
grant all on turn to authenticated;
select cmp_ok(tests.rows_read_by('public.memory_relations',
                $$insert into turn select public.retrieve_for_turn('kiwi', match_namespaces => array['devai/project/e'],
                                                                   search_mode => 'keyword', graph_depth => 0,
                                                                   match_count => 5)$$),
              '<=', 10::bigint,
              'each edge of the answer is read once (10 rows of memory_relations; 20 before)');
select tests.clear_authentication();
select is((select count(*) from turn, jsonb_array_elements(r -> 'memories')), 5::bigint, 'the 5 hits');
select is((select jsonb_object_agg(right(m ->> 'id', 2), (m ->> 'max_relation_strength')::numeric(3, 2))
             from turn, jsonb_array_elements(r -> 'memories') m),
          '{"01": 0.55, "02": 0.65, "03": 0.75, "04": 0.85, "05": 0.9}'::jsonb,
          'each hit boosted by its strongest edge to a live memory (hit 5''s strongest goes to the forgotten one)');
select is((select jsonb_agg(jsonb_build_array(right(b ->> 'id', 2), right(b ->> 'anchor_id', 2), b ->> 'content',
                                              (b ->> 'strength')::numeric(3, 2)))
             from turn, jsonb_array_elements(r -> 'related') b),
          '[["14", "05", "other note 14", 0.9], ["13", "04", "other note 13", 0.85], ["12", "04", "other note 12", 0.8],
            ["11", "03", "other note 11", 0.75], ["10", "03", "other note 10", 0.7], ["09", "02", "other note 9", 0.65],
            ["08", "02", "other note 8", 0.6], ["07", "01", "other note 7", 0.55]]'::jsonb,
          'the related bullets: the 8 strongest edges to live memories, best first, with their anchors');

select tests.authenticate_as('99e70000-0000-4000-8000-00000000000d');
select is((select jsonb_agg(right(b ->> 'id', 2))
             from jsonb_array_elements(public.retrieve_for_turn('kiwi -"other note 13"', match_namespaces => array['devai/project/e'],
                                                                search_mode => 'keyword', graph_depth => 0, match_count => 5,
                                                                filter_after => now() - interval '1 hour') -> 'related') b),
          '["14", "12", "11", "10", "09", "08", "07", "06"]'::jsonb,
          'what the question excludes is no bullet, and the next strongest comes in');
select is(jsonb_array_length(public.retrieve_for_turn('kiwi', match_namespaces => array['devai/project/e'], search_mode => 'keyword',
                                                      graph_depth => 0, match_count => 5, as_of => now()) -> 'related'),
          0, 'no related bullets as of an instant');
select tests.clear_authentication();

select * from finish();
rollback;
