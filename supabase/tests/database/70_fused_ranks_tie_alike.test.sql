-- hybrid_search: memories that each signal scores exactly alike get the same rank in it (a
-- competition rank, not their position in a list ordered by id), so the same fused relevance;
-- exact ties are cut and ordered newer first, then by id: the same memories stored in another
-- database (other uuids) rank the same. memory.query (public.query_memories) keeps and orders
-- them the same way.
begin;
select plan(8);

-- Two memories matching the query's terms alike (same words matched, same length) with the same
-- vector; the older one has the smaller id, so an order by id would put it first.
insert into public.devai_memories
  (id, owner_id, content, memory_type, namespace, embedding, embedding_model, strength, created_at)
values
  ('70000000-0000-4000-8000-000000000001', '70000000-0000-4000-8000-00000000000c',
   'Deploy the billing api with the helm chart alpha.', 'semantic', 'devai/project/tie',
   tests.embedding(array[0.8, 0.6]::real[]), 'm', 1.0, now() - interval '2 days'),
  ('70000000-0000-4000-8000-000000000002', '70000000-0000-4000-8000-00000000000c',
   'Deploy the billing api with the helm chart omega.', 'semantic', 'devai/project/tie',
   tests.embedding(array[0.8, 0.6]::real[]), 'm', 1.0, now() - interval '1 day'),
  ('70000000-0000-4000-8000-000000000003', '70000000-0000-4000-8000-00000000000c',
   'The billing service logs to stdout.', 'semantic', 'devai/project/tie',
   tests.embedding(array[0.1, 0.99]::real[]), 'm', 1.0, now() - interval '3 days');

select tests.authenticate_as('70000000-0000-4000-8000-00000000000c');

create temp table hits on commit drop as
select h.id, h.keyword_rank, h.keyword_score, h.vector_rank, h.relevance, row_number() over () as pos
  from public.hybrid_search('deploy billing api helm chart', tests.embedding(array[0.8, 0.6]::real[]),
                            array['devai/project/tie'], 10, 0.1, 'm', graph_depth => 0) h;

select is((select count(distinct keyword_rank)::int from hits
            where id in ('70000000-0000-4000-8000-000000000001', '70000000-0000-4000-8000-000000000002')
              and keyword_rank is not null), 1,
          'keyword: two memories scored alike share one rank');
select is((select count(distinct vector_rank)::int from hits where id in ('70000000-0000-4000-8000-000000000001', '70000000-0000-4000-8000-000000000002')), 1,
          'vector: two memories as similar share one rank');
select is((select count(distinct relevance)::int from hits where id in ('70000000-0000-4000-8000-000000000001', '70000000-0000-4000-8000-000000000002')), 1,
          'fusion: the same ranks give the same relevance');
select results_eq(
  $$select id::text from hits where id in ('70000000-0000-4000-8000-000000000001', '70000000-0000-4000-8000-000000000002') order by pos$$,
  array['70000000-0000-4000-8000-000000000002', '70000000-0000-4000-8000-000000000001'],
  'an exact tie is ordered newer first, whatever the ids');
select results_eq(
  $$select h.id::text from public.hybrid_search('deploy billing api helm chart', tests.embedding(array[0.8, 0.6]::real[]),
                                                array['devai/project/tie'], 1, 0.1, 'm', graph_depth => 0) h$$,
  array['70000000-0000-4000-8000-000000000002'],
  'a cut through an exact tie keeps the newer memory');

-- The same with the ids the other way round (the newer memory has the smaller id): together with
-- the pair above, no order by id, ascending or descending, passes both.
reset role;
insert into public.devai_memories
  (id, owner_id, content, memory_type, namespace, embedding, embedding_model, strength, created_at)
values
  ('70000000-0000-4000-8000-000000000004', '70000000-0000-4000-8000-00000000000c',
   'Rotate the signing keys with the vault cli alpha.', 'semantic', 'devai/project/tie2',
   tests.embedding(array[0.8, 0.6]::real[]), 'm', 1.0, now() - interval '1 day'),
  ('70000000-0000-4000-8000-000000000005', '70000000-0000-4000-8000-00000000000c',
   'Rotate the signing keys with the vault cli omega.', 'semantic', 'devai/project/tie2',
   tests.embedding(array[0.8, 0.6]::real[]), 'm', 1.0, now() - interval '2 days');
select tests.authenticate_as('70000000-0000-4000-8000-00000000000c');
select results_eq(
  $$select h.id::text from public.hybrid_search('rotate signing keys vault cli', tests.embedding(array[0.8, 0.6]::real[]),
                                                array['devai/project/tie2'], 10, 0.1, 'm', graph_depth => 0) h$$,
  array['70000000-0000-4000-8000-000000000004', '70000000-0000-4000-8000-000000000005'],
  'an exact tie is ordered newer first when the newer has the smaller id too');

-- memory.query over the same pairs (a category its agent may read).
reset role;
update public.devai_memories set metadata = '{"category": "decisions"}'
 where owner_id = '70000000-0000-4000-8000-00000000000c';
select tests.authenticate_as('70000000-0000-4000-8000-00000000000c');
select results_eq(
  $$select q.id::text from public.query_memories('deploy billing api helm chart', tests.embedding(array[0.8, 0.6]::real[]),
                                                 array['devai/project/tie'], 'coder', array['decisions'], 2, 0.1, 'm',
                                                 graph_depth => 0) q$$,
  array['70000000-0000-4000-8000-000000000002', '70000000-0000-4000-8000-000000000001'],
  'memory.query: an exact tie is ordered newer first');
select results_eq(
  $$select q.id::text from public.query_memories('rotate signing keys vault cli', tests.embedding(array[0.8, 0.6]::real[]),
                                                 array['devai/project/tie2'], 'coder', array['decisions'], 1, 0.1, 'm',
                                                 graph_depth => 0) q$$,
  array['70000000-0000-4000-8000-000000000004'],
  'memory.query: a cut through an exact tie keeps the newer memory when it has the smaller id too');

select * from finish();
rollback;
