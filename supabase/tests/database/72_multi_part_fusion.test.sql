-- hybrid_search, complex (multi-part) questions: the keyword and vector lists are fused by score
-- (fusion_score_share_complex), so a memory the keyword signal ranks first with most of the
-- question's words stays in the fused top 3 when the vector list holds five memories closer to the
-- question's embedding that each match one of its words. A simple question is fused half by rank,
-- half by score (fusion_score_share 0.5, the default since 20261205100000; ranks alone before):
-- those five still rank above it, each is in both lists and it is in one, so simple questions keep
-- the agreement of both lists.
-- memory.query (public.query_memories) passes the complexity on: the same two orders.
-- docs/retrieval.md#fusion.
begin;
select plan(9);

select is((select value from public.memory_settings where name = 'fusion_score_share'), 0.5::numeric,
          'simple questions are fused half by rank, half by score by default');

-- The answer to one part: the question's rare words, a vector unlike the question's.
insert into public.devai_memories
  (id, owner_id, content, memory_type, namespace, embedding, embedding_model, strength, created_at, metadata)
values
  ('72000000-0000-4000-8000-0000000000a1', '72000000-0000-4000-8000-00000000000c',
   'Invoice rounding drift was fixed by storing cents as integers.', 'semantic', 'devai/project/mp',
   tests.embedding(array[0, 1]::real[]), 'local-hash-512-v1', 1.0, now() - interval '5 days',
   '{"category": "decisions"}');
-- Five memories near the question's vector, each sharing one ordinary word of it.
insert into public.devai_memories
  (id, owner_id, content, memory_type, namespace, embedding, embedding_model, strength, created_at, metadata)
select ('72000000-0000-4000-8000-00000000000' || i)::uuid, '72000000-0000-4000-8000-00000000000c',
       format('The team %s the weekly report on Monday number %s.', w, i), 'semantic', 'devai/project/mp',
       tests.embedding(array[1, 0.05 * i]::real[]), 'local-hash-512-v1', 1.0, now() - interval '1 day',
       '{"category": "decisions"}'
  from unnest(array['fixed', 'watched', 'alerted', 'kept spending on', 'drifted from']) with ordinality as t(w, i);

select tests.authenticate_as('72000000-0000-4000-8000-00000000000c');

create temp table fused on commit drop as
select c.complexity, h.id, h.keyword_rank, h.vector_rank, h.ordinality as pos
  from (values ('simple'), ('complex')) as c(complexity),
       lateral public.hybrid_search(
         'How was invoice rounding drift fixed with cents, and which alert watches spending?',
         tests.embedding(array[1, 0]::real[]), array['devai/project/mp'], 10, 0.1, 'local-hash-512-v1',
         graph_depth => 0, query_complexity => c.complexity) with ordinality as h;

select is((select keyword_rank from fused where complexity = 'complex' and id = '72000000-0000-4000-8000-0000000000a1'),
          1, 'the keyword signal ranks the answer first');
select is((select vector_rank from fused where complexity = 'complex' and id = '72000000-0000-4000-8000-0000000000a1'),
          null, 'the vector list does not hold it');
select is((select count(*)::int from fused where complexity = 'complex' and vector_rank is not null and keyword_rank is not null),
          5, 'five memories are in both lists');
select ok((select pos from fused where complexity = 'complex' and id = '72000000-0000-4000-8000-0000000000a1') <= 3,
          'complex question (fused by score): the keyword list''s strong first stays in the top 3');
select ok((select pos from fused where complexity = 'simple' and id = '72000000-0000-4000-8000-0000000000a1') > 5,
          'simple question (half by rank): the five memories in both lists rank above it');
create temp table queried on commit drop as
select c.complexity, q.id, q.ordinality as pos
  from (values ('simple'), ('complex')) as c(complexity),
       lateral public.query_memories(
         'How was invoice rounding drift fixed with cents, and which alert watches spending?',
         tests.embedding(array[1, 0]::real[]), array['devai/project/mp'], 'coder', array['decisions'], 10, 0.1,
         'local-hash-512-v1', graph_depth => 0, query_complexity => c.complexity) with ordinality as q;
select ok((select pos from queried where complexity = 'complex' and id = '72000000-0000-4000-8000-0000000000a1') <= 3,
          'memory.query, complex question: the keyword list''s strong first stays in the top 3');
select ok((select pos from queried where complexity = 'simple' and id = '72000000-0000-4000-8000-0000000000a1') > 5,
          'memory.query, simple question: half by rank, below the five');
select throws_ok(
  $$select * from public.hybrid_search('invoice', null, array['devai/project/mp'], 5, query_complexity => 'multi')$$,
  '22023', 'query_complexity must be simple or complex, got multi', 'an unknown complexity is refused');

select * from finish();
rollback;
