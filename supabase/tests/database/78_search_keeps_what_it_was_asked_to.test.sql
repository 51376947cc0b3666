-- A search keeps out what it was asked to keep out, whichever way a memory would come in
-- (migration 20261128200000): exclusions hold for the vector and graph signals as for the keyword
-- one, and for query_memories' `context: all` memories; the time window holds for
-- retrieve_for_turn's related bullets and query_memories' `context: all` memories; a relation that
-- has ended gives neither a related bullet nor the relation boost; a who/what question's entity
-- lookup runs without graph hops; query_memories takes the intent's steering (preferred types).
-- docs/retrieval.md.
begin;
select plan(19);

insert into public.devai_memories
  (id, owner_id, content, memory_type, namespace, embedding, embedding_model, strength, created_at, metadata)
values
  -- Two answers to the same error, close to the question's vector; one names the proxy.
  ('78000000-0000-4000-8000-0000000000a1', '78000000-0000-4000-8000-00000000000c',
   'ERR_SOCKET_TIMEOUT comes from the upstream proxy closing idle sockets.', 'semantic', 'devai/project/ex',
   tests.embedding(array[1, 0]::real[]), 'local-hash-512-v1', 1.0, now() - interval '1 day', '{"category": "errors_and_fixes"}'),
  ('78000000-0000-4000-8000-0000000000a2', '78000000-0000-4000-8000-00000000000c',
   'ERR_SOCKET_TIMEOUT goes away when the client retries with backoff.', 'semantic', 'devai/project/ex',
   tests.embedding(array[1, 0.1]::real[]), 'local-hash-512-v1', 1.0, now() - interval '1 day', '{"category": "errors_and_fixes"}'),
  -- Linked to the first answer: an old memory (2020), one behind an ended edge, one behind a live edge.
  ('78000000-0000-4000-8000-0000000000b1', '78000000-0000-4000-8000-00000000000c',
   'The legacy cron restarted the proxy nightly.', 'semantic', 'devai/project/ex',
   tests.embedding(array[0, 1]::real[]), 'local-hash-512-v1', 1.0, '2020-01-01', '{"category": "decisions"}'),
  ('78000000-0000-4000-8000-0000000000b2', '78000000-0000-4000-8000-00000000000c',
   'Idle sockets were once kept for ten minutes.', 'semantic', 'devai/project/ex',
   tests.embedding(array[0, 1]::real[]), 'local-hash-512-v1', 1.0, now() - interval '1 day', '{"category": "decisions"}'),
  ('78000000-0000-4000-8000-0000000000b3', '78000000-0000-4000-8000-00000000000c',
   'Idle sockets are now closed after sixty seconds.', 'semantic', 'devai/project/ex',
   tests.embedding(array[0, 1]::real[]), 'local-hash-512-v1', 1.0, now() - interval '1 day', '{"category": "decisions"}'),
  -- A convention (context: all) written in 2020, and a fact and (a little farther) a procedure near a question.
  ('78000000-0000-4000-8000-0000000000c1', '78000000-0000-4000-8000-00000000000c',
   'Every service logs JSON to stdout through the proxy sidecar.', 'semantic', 'devai/project/ex',
   tests.embedding(array[0, 1]::real[]), 'local-hash-512-v1', 1.0, '2020-01-01', '{"category": "conventions"}'),
  ('78000000-0000-4000-8000-0000000000d1', '78000000-0000-4000-8000-00000000000c',
   'To release: tag the commit and push the tag.', 'procedural', 'devai/project/ex',
   tests.embedding(array[0.8, 0.6]::real[]), 'local-hash-512-v1', 1.0, now() - interval '2 days', '{}'),
  ('78000000-0000-4000-8000-0000000000d2', '78000000-0000-4000-8000-00000000000c',
   'Releases happen on Thursdays.', 'semantic', 'devai/project/ex',
   tests.embedding(array[0.6, 0.8]::real[]), 'local-hash-512-v1', 1.0, now() - interval '2 days', '{"category": "workflows"}');
insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength, created_at, valid_from, valid_until)
select '78000000-0000-4000-8000-00000000000c', f::uuid, t::uuid, 'related_to', s, now() - interval '2 days',
       now() - interval '2 days', case when ended then now() - interval '1 hour' end
  from (values ('78000000-0000-4000-8000-0000000000a2', '78000000-0000-4000-8000-0000000000b1', 0.9, false),
               ('78000000-0000-4000-8000-0000000000a2', '78000000-0000-4000-8000-0000000000b2', 0.8, true),
               ('78000000-0000-4000-8000-0000000000a2', '78000000-0000-4000-8000-0000000000b3', 0.5, false),
               ('78000000-0000-4000-8000-0000000000d2', '78000000-0000-4000-8000-0000000000b2', 0.9, true)) as e(f, t, s, ended);
insert into public.memory_entities (id, owner_id, canonical_name, entity_type) values
  ('78200000-0000-4000-8000-0000000000e1', '78000000-0000-4000-8000-00000000000c', 'src/net/proxy.ts', 'file');
insert into public.memory_entity_links (owner_id, memory_id, entity_id, mention) values
  ('78000000-0000-4000-8000-00000000000c', '78000000-0000-4000-8000-0000000000b3', '78200000-0000-4000-8000-0000000000e1', 'src/net/proxy.ts');

select tests.authenticate_as('78000000-0000-4000-8000-00000000000c');

-- Exclusions, every signal (each first found without its exclusion: the ways in are real).
select is((select count(*)::int from public.hybrid_search('ERR_SOCKET_TIMEOUT', tests.embedding(array[1, 0]::real[]),
             array['devai/project/ex'], 10, 0.1, 'local-hash-512-v1', graph_depth => 0)
            where id = '78000000-0000-4000-8000-0000000000a1'),
          1, 'without the exclusion the proxy memory is found');
select is((select count(*)::int from public.hybrid_search('ERR_SOCKET_TIMEOUT -proxy', tests.embedding(array[1, 0]::real[]),
             array['devai/project/ex'], 10, 0.1, 'local-hash-512-v1', graph_depth => 0)
            where id = '78000000-0000-4000-8000-0000000000a1'),
          0, 'hybrid: a memory matching an exclusion is left out though the vector list ranks it first');
select is((select count(*)::int from public.hybrid_search('ERR_SOCKET_TIMEOUT -proxy', tests.embedding(array[1, 0]::real[]),
             array['devai/project/ex'], 10, 0.1, 'local-hash-512-v1', search_mode => 'vector')
            where id = '78000000-0000-4000-8000-0000000000a1'),
          0, 'vector mode: the exclusion holds too');
select is((select count(*)::int from public.hybrid_search('ERR_SOCKET_TIMEOUT -proxy', tests.embedding(array[1, 0]::real[]),
             array['devai/project/ex'], 10, 0.1, 'local-hash-512-v1')
            where id = '78000000-0000-4000-8000-0000000000a2'),
          1, 'the other answer stays');
select is((select graph_rank is not null from public.hybrid_search('ERR_SOCKET_TIMEOUT', tests.embedding(array[1, 0]::real[]),
             array['devai/project/ex'], 10, 0.1, 'local-hash-512-v1', graph_depth => 1)
            where id = '78000000-0000-4000-8000-0000000000b1'),
          true, 'without the exclusion the legacy memory comes by a hop');
select is((select count(*)::int from public.hybrid_search('ERR_SOCKET_TIMEOUT -legacy', tests.embedding(array[1, 0]::real[]),
             array['devai/project/ex'], 10, 0.1, 'local-hash-512-v1', graph_depth => 1)
            where id = '78000000-0000-4000-8000-0000000000b1'),
          0, 'graph: a hop does not bring an excluded memory back');

-- The relation boost reads live edges only.
select is((select coalesce(max_relation_strength, -1) from public.hybrid_search('Releases Thursdays', tests.embedding(array[0.6, 0.8]::real[]),
             array['devai/project/ex'], 10, 0.1, 'local-hash-512-v1', graph_depth => 0)
            where id = '78000000-0000-4000-8000-0000000000d2'),
          -1::real, 'a memory whose only edge has ended is found and gets no relation strength');
select is((select max_relation_strength from public.hybrid_search('ERR_SOCKET_TIMEOUT', tests.embedding(array[1, 0]::real[]),
             array['devai/project/ex'], 10, 0.1, 'local-hash-512-v1', graph_depth => 0)
            where id = '78000000-0000-4000-8000-0000000000a2'),
          0.9::real, 'its live edges still count');

-- Related bullets: the window, and live edges only.
create temp table turn on commit drop as
select public.retrieve_for_turn('ERR_SOCKET_TIMEOUT retries backoff', tests.embedding(array[1, 0]::real[]),
         array['devai/project/ex'], 5, 0.1, 'local-hash-512-v1', graph_depth => 0) as whole,
       public.retrieve_for_turn('ERR_SOCKET_TIMEOUT retries backoff', tests.embedding(array[1, 0]::real[]),
         array['devai/project/ex'], 5, 0.1, 'local-hash-512-v1', graph_depth => 0,
         filter_after => now() - interval '7 days') as windowed;
select is((select array_agg(r ->> 'id' order by r ->> 'id') from turn, jsonb_array_elements(whole -> 'related') r),
          array['78000000-0000-4000-8000-0000000000b1', '78000000-0000-4000-8000-0000000000b3'],
          'related bullets follow live edges only (the ended one gives none)');
select is((select array_agg(r ->> 'id' order by r ->> 'id') from turn, jsonb_array_elements(windowed -> 'related') r),
          array['78000000-0000-4000-8000-0000000000b3'],
          'with a time window, a related memory outside it is left out');

-- Entity lookup without hops (a simple who/what question).
select is((select graph_edge from public.hybrid_search('who owns src/net/proxy.ts', tests.embedding(array[1, 0]::real[]),
             array['devai/project/ex'], 10, 0.1, 'local-hash-512-v1', graph_depth => 0,
             entity_terms => array['src/net/proxy.ts'])
            where id = '78000000-0000-4000-8000-0000000000b3'),
          'entity', 'graph depth 0 with names to look up: the entity lookup finds the memory naming the file');
select is((select count(*)::int from public.hybrid_search('who owns src/net/proxy.ts', tests.embedding(array[1, 0]::real[]),
             array['devai/project/ex'], 10, 0.1, 'local-hash-512-v1', graph_depth => 0)
            where graph_rank is not null),
          0, 'graph depth 0 without names: no graph signal at all');

-- memory.query: `context: all` memories keep the window and the exclusions.
select is((select count(*)::int from public.query_memories('ERR_SOCKET_TIMEOUT', tests.embedding(array[1, 0]::real[]),
             array['devai/project/ex'], 'coder', array['conventions', 'errors_and_fixes'], 10, 0.1, 'local-hash-512-v1')
            where id = '78000000-0000-4000-8000-0000000000c1'),
          1, 'memory.query: a convention (context all) comes whatever the question');
select is((select count(*)::int from public.query_memories('ERR_SOCKET_TIMEOUT', tests.embedding(array[1, 0]::real[]),
             array['devai/project/ex'], 'coder', array['conventions', 'errors_and_fixes'], 10, 0.1, 'local-hash-512-v1',
             filter_after => now() - interval '7 days')
            where id = '78000000-0000-4000-8000-0000000000c1'),
          0, 'memory.query: not when it was written outside the time window');
select is((select count(*)::int from public.query_memories('ERR_SOCKET_TIMEOUT -sidecar', tests.embedding(array[1, 0]::real[]),
             array['devai/project/ex'], 'coder', array['conventions', 'errors_and_fixes'], 10, 0.1, 'local-hash-512-v1')
            where id = '78000000-0000-4000-8000-0000000000c1'),
          0, 'memory.query: nor when it matches an exclusion');

-- memory.query takes the intent's preferred types: a how question ranks the procedure first.
select ok((select q.relevance from public.query_memories('how do we release', tests.embedding(array[0.6, 0.8]::real[]),
             array['devai/project/ex'], 'coder', array['procedural', 'workflows'], 10, 0.1, 'local-hash-512-v1',
             search_mode => 'vector', prefer_memory_types => array['procedural']) q
            where q.id = '78000000-0000-4000-8000-0000000000d1')
          > (select q.relevance from public.query_memories('how do we release', tests.embedding(array[0.6, 0.8]::real[]),
             array['devai/project/ex'], 'coder', array['procedural', 'workflows'], 10, 0.1, 'local-hash-512-v1',
             search_mode => 'vector') q
            where q.id = '78000000-0000-4000-8000-0000000000d1'),
          'memory.query: a preferred memory type is boosted (the procedure second by its vector)');

-- What counts as an exclusion: a word of two or more characters starting with a letter, or a
-- quoted phrase; a CLI flag or a negative number in a pasted command does not.
select is((select array_agg(term order by term) from public.memory_keyword_terms(
             'git log -n 5 --oneline; exit code -1 -proxy -"fly deploy"') where kind = 'exclude'),
          array['fly deploy', 'proxy'], 'exclusions: -word and -"phrase", never --flag, -n or -1');
select ok((select bool_or(term = 'config') from public.memory_keyword_terms('deno task --config deno.json') where kind = 'word'),
          'a flag''s word stays a term of the query');
-- A quote left open excludes to the end of the text, as websearch_to_tsquery reads it (migration
-- 20261128630000); it was read as two words to find.
select is((select array_agg(kind || ':' || term order by kind, term) from public.memory_keyword_terms('billing -"widget gizmo')),
          array['exclude:widget gizmo', 'word:bill'], 'an open quote: the phrase to the end is excluded');

select * from finish();
rollback;
