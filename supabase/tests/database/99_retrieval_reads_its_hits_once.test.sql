-- A retrieval (public.retrieve_for_turn) gives its hits' usage counters and cited files from the
-- rows its search gave (memory_search.feedback, migration 20261209200200): it called
-- public.memory_feedback, which looked every hit up again by id, and public.memory_cited_files,
-- which looked it up a second time for its metadata's files. The feedback is the same: usage
-- counters, files from entity links and from metadata, none for a raw episode.
begin;
select plan(6);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace, source, metadata)
values ('99f20000-0000-4000-8000-0000000000a1', '99f20000-0000-4000-8000-00000000000d', 'the deploy runs nightly from the release branch',
        'semantic', 'devai/project/r', null, '{"files": ["./src/a.ts"]}'),
       ('99f20000-0000-4000-8000-0000000000b1', '99f20000-0000-4000-8000-00000000000d', 'the deploy script retries twice',
        'semantic', 'devai/project/r', null, '{}'),
       ('99f20000-0000-4000-8000-0000000000c1', '99f20000-0000-4000-8000-00000000000d', 'we talked about the deploy',
        'episodic', 'devai/project/r', 'conversation', '{}');
insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength)
values ('99f20000-0000-4000-8000-00000000000d', '99f20000-0000-4000-8000-0000000000a1', '99f20000-0000-4000-8000-0000000000c1',
        'derived_from', 0.9);
insert into public.memory_entities (id, owner_id, canonical_name, entity_type)
values ('99f20000-0000-4000-8000-0000000000e1', '99f20000-0000-4000-8000-00000000000d', './src/b.ts', 'file');
insert into public.memory_entity_links (owner_id, memory_id, entity_id, mention)
values ('99f20000-0000-4000-8000-00000000000d', '99f20000-0000-4000-8000-0000000000b1', '99f20000-0000-4000-8000-0000000000e1', 'src/b.ts');
insert into public.memory_usage (memory_id, owner_id, retrieval_count, citation_count, ignore_count)
values ('99f20000-0000-4000-8000-0000000000a1', '99f20000-0000-4000-8000-00000000000d', 5, 3, 2);

set local track_functions = 'all';
select tests.authenticate_as('99f20000-0000-4000-8000-00000000000d');
create temp table got as
select public.retrieve_for_turn('deploy', match_namespaces => array['devai/project/r'], graph_depth => 1,
                                graph_episodes => true) as r;
select tests.clear_authentication();

select is((select coalesce(sum(f.calls), 0) from pg_catalog.pg_stat_xact_user_functions f
            where f.schemaname = 'public' and f.funcname in ('memory_feedback', 'memory_cited_files')),
          0::numeric, 'the retrieval reads no hit again for its feedback (memory_feedback, memory_cited_files: 2 calls before)');
select is((select array_agg(x ->> 'id' order by x ->> 'id') from got, jsonb_array_elements(got.r -> 'memories') x),
          array['99f20000-0000-4000-8000-0000000000a1', '99f20000-0000-4000-8000-0000000000b1', '99f20000-0000-4000-8000-0000000000c1'],
          'the search finds the two facts and, asked for episodes, the episode they came from');
select tests.authenticate_as('99f20000-0000-4000-8000-00000000000d');
select is((select jsonb_agg(x order by x ->> 'id') from got, jsonb_array_elements(got.r -> 'feedback') x),
          (select jsonb_agg(x order by x ->> 'id')
             from jsonb_array_elements(public.memory_feedback(array(select (m ->> 'id')::uuid from got, jsonb_array_elements(got.r -> 'memories') m),
                                                              array['devai/project/r'], auth.uid())) x),
          'its feedback is what memory_feedback gives for its hits');
select tests.clear_authentication();
select is((select x from got, jsonb_array_elements(got.r -> 'feedback') x where x ->> 'id' = '99f20000-0000-4000-8000-0000000000a1'),
          '{"id": "99f20000-0000-4000-8000-0000000000a1", "cited_files": ["src/a.ts"], "ignore_count": 2, "citation_count": 3}'::jsonb,
          'a hit''s usage counters and the file its metadata cites');
select is((select x from got, jsonb_array_elements(got.r -> 'feedback') x where x ->> 'id' = '99f20000-0000-4000-8000-0000000000b1'),
          '{"id": "99f20000-0000-4000-8000-0000000000b1", "cited_files": ["src/b.ts"], "ignore_count": 0, "citation_count": 0}'::jsonb,
          'a hit''s file entity, without usage');
select is((select count(*) from got, jsonb_array_elements(got.r -> 'feedback') x where x ->> 'id' = '99f20000-0000-4000-8000-0000000000c1'),
          0::bigint, 'no feedback for the episode');

select * from finish();
rollback;
