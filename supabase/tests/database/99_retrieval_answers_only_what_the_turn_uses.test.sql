-- A retrieval's answer (public.retrieve_for_turn) gives each memory with the fields the turn
-- uses (migration 20261210100000): ranking, lineage, packing, the answer's explanation and the
-- search event read them (_shared/services/retrieval.ts). It gave the whole search row, about
-- 850 bytes of jsonb a memory on the bench, built, turned into text and parsed again at every
-- retrieval for fields nothing read: importance, session_id, access_count, last_accessed_at,
-- updated_at and category. The fields it keeps have the search's values.
begin;
select plan(3);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace, source, metadata, session_id, importance)
values ('99f30000-0000-4000-8000-0000000000a1', '99f30000-0000-4000-8000-00000000000d', 'the deploy runs nightly from the release branch',
        'semantic', 'devai/project/w', 'pattern', '{"files": ["./src/a.ts"], "category": "decisions"}', 's-1', 4),
       ('99f30000-0000-4000-8000-0000000000b1', '99f30000-0000-4000-8000-00000000000d', 'the deploy script retries twice',
        'procedural', 'devai/project/w', null, '{}', null, 2);

select tests.authenticate_as('99f30000-0000-4000-8000-00000000000d');
create temp table got as
select public.retrieve_for_turn('deploy', match_namespaces => array['devai/project/w'], graph_depth => 1) as r;
create temp table searched as
select * from public.hybrid_search('deploy', match_namespaces => array['devai/project/w'], graph_depth => 1);
select tests.clear_authentication();

select is((select array_agg(distinct k order by k) from got, jsonb_array_elements(got.r -> 'memories') x, jsonb_object_keys(x) k),
          array['content', 'created_at', 'graph_edge', 'graph_rank', 'graph_via', 'id', 'keyword_coverage', 'keyword_rank',
                'keyword_score', 'max_relation_strength', 'memory_type', 'metadata', 'namespace', 'pinned', 'priority',
                'relevance', 'similarity', 'source', 'strength', 'vector_rank'],
          'each memory of the answer has the fields the turn uses, and no others');
select is((select jsonb_agg(x order by x ->> 'id') from got, jsonb_array_elements(got.r -> 'memories') x),
          (select jsonb_agg(to_jsonb(s) - '{importance,session_id,access_count,last_accessed_at,updated_at,category}'::text[]
                            order by s.id)
             from searched s),
          'the fields it keeps are the search''s, value for value');
select is((select array_agg(x ->> 'id' order by x ->> 'id') from got, jsonb_array_elements(got.r -> 'memories') x),
          array['99f30000-0000-4000-8000-0000000000a1', '99f30000-0000-4000-8000-0000000000b1'],
          'the search finds both memories');

select * from finish();
rollback;
