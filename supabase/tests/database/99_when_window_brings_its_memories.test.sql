-- hybrid_search, a when question with a time window: the window's own memories in the scopes are
-- candidates by their time alone (ranked by the recency list), so a memory of the asked period
-- that shares no word with the question and whose vector is unlike it is still in the answer.
-- Never a memory outside the window, another scope's, another tenant's or a faded one; nothing
-- without recency (not a when question) or in a single-signal mode. The window is read newest
-- first, at most exact_scan_max_rows rows (never fewer than the list depth).
-- docs/retrieval.md#time-filters.
begin;
select plan(11);

insert into public.devai_memories
  (id, owner_id, content, memory_type, namespace, embedding, embedding_model, strength, created_at)
values
  -- Found by keyword: the question's words.
  ('99a00000-0000-4000-8000-0000000000a1', '99a00000-0000-4000-8000-00000000000c',
   'The flaky login test was fixed by waiting for the session cookie.', 'semantic', 'devai/project/ww',
   tests.embedding(array[1, 0.2]::real[]), 'local-hash-512-v1', 1.0, now() - interval '2 days'),
  -- In the window, no word of the question, a vector opposite to it.
  ('99a00000-0000-4000-8000-0000000000a2', '99a00000-0000-4000-8000-00000000000c',
   'Exports wrote swapped coordinates; points are now longitude first.', 'semantic', 'devai/project/ww',
   tests.embedding(array[-1, 0]::real[]), 'local-hash-512-v1', 1.0, now() - interval '3 days'),
  -- Outside the window.
  ('99a00000-0000-4000-8000-0000000000a3', '99a00000-0000-4000-8000-00000000000c',
   'Uploads above 8 MB were refused by the parser limit.', 'semantic', 'devai/project/ww',
   tests.embedding(array[-1, 0.1]::real[]), 'local-hash-512-v1', 1.0, now() - interval '30 days'),
  -- In the window, another scope of the tenant.
  ('99a00000-0000-4000-8000-0000000000a4', '99a00000-0000-4000-8000-00000000000c',
   'The widget timeline stopped updating after a day.', 'semantic', 'devai/project/wwx',
   tests.embedding(array[-1, 0.2]::real[]), 'local-hash-512-v1', 1.0, now() - interval '1 day'),
  -- In the window, faded.
  ('99a00000-0000-4000-8000-0000000000a5', '99a00000-0000-4000-8000-00000000000c',
   'Sharing HEIC photos failed until they were converted to JPEG.', 'semantic', 'devai/project/ww',
   tests.embedding(array[-1, 0.3]::real[]), 'local-hash-512-v1', 0.01, now() - interval '1 day'),
  -- In the window, the same scope name, another tenant.
  ('99a00000-0000-4000-8000-0000000000a6', '99a00000-0000-4000-8000-00000000000d',
   'Two refresh requests created two sessions until refresh deleted the old token.', 'semantic', 'devai/project/ww',
   tests.embedding(array[-1, 0.4]::real[]), 'local-hash-512-v1', 1.0, now() - interval '1 day');

select tests.authenticate_as('99a00000-0000-4000-8000-00000000000c');

create temp table answer on commit drop as
select c.recency, c.mode, h.id, h.keyword_rank, h.vector_rank, h.ordinality as pos
  from (values (0.5, 'hybrid'), (0.0, 'hybrid'), (0.5, 'keyword')) as c(recency, mode),
       lateral public.hybrid_search(
         'which login bugs were fixed', tests.embedding(array[1, 0]::real[]), array['devai/project/ww'], 10, 0.1,
         'local-hash-512-v1', search_mode => c.mode, graph_depth => 0, recency_weight => c.recency,
         filter_after => now() - interval '7 days') with ordinality as h;

select is((select pos from answer where recency = 0.5 and mode = 'hybrid' and id = '99a00000-0000-4000-8000-0000000000a1'),
          1::bigint, 'the keyword hit leads');
select isnt((select pos from answer where recency = 0.5 and mode = 'hybrid' and id = '99a00000-0000-4000-8000-0000000000a2'),
            null, 'a memory of the window that no list found is in the answer');
select is((select row(keyword_rank, vector_rank)::text from answer
            where recency = 0.5 and mode = 'hybrid' and id = '99a00000-0000-4000-8000-0000000000a2'),
          '(,)', 'found by its time alone: neither the keyword nor the vector signal holds it');
select is((select count(*)::int from answer where recency = 0.5 and mode = 'hybrid' and id in
            ('99a00000-0000-4000-8000-0000000000a3', '99a00000-0000-4000-8000-0000000000a4',
             '99a00000-0000-4000-8000-0000000000a5', '99a00000-0000-4000-8000-0000000000a6')),
          0, 'never a memory outside the window, of another scope, faded, or another tenant''s');
select is((select count(*)::int from answer where recency = 0.5 and mode = 'hybrid'), 2, 'the answer holds those two');
select is((select count(*)::int from answer where recency = 0 and id = '99a00000-0000-4000-8000-0000000000a2'),
          0, 'without recency (not a when question) the window brings nothing of its own');
select is((select count(*)::int from answer where mode = 'keyword' and id = '99a00000-0000-4000-8000-0000000000a2'),
          0, 'a single-signal mode neither');
-- A question that finds nothing has no answer: the window does not make one.
select is((select count(*)::int from public.hybrid_search(
            'kubernetes autoscaler quota', tests.embedding(array[0, 1]::real[]), array['devai/project/ww'], 10, 0.9,
            'local-hash-512-v1', graph_depth => 0, recency_weight => 0.5, filter_after => now() - interval '7 days')),
          0, 'no keyword hit and no vector above the floor: still no answer');
select is((select count(*)::int from public.hybrid_search(
            'which login bugs were fixed', tests.embedding(array[1, 0]::real[]), array['devai/project/ww'], 10, 0.1,
            'local-hash-512-v1', graph_depth => 0, recency_weight => 0.5, filter_after => now() - interval '7 days',
            as_of => now())),
          1, 'as of an instant the window brings nothing of its own (the keyword hit alone)');

-- The read is bounded: 40 newer memories of another scope, and a bound of the list depth (30 rows).
reset role;
insert into public.devai_memories
  (id, owner_id, content, memory_type, namespace, embedding, embedding_model, strength, created_at)
select ('99a00000-0000-4000-8000-0000000001' || lpad(i::text, 2, '0'))::uuid, '99a00000-0000-4000-8000-00000000000c',
       format('Release note number %s of the other app.', i), 'semantic', 'devai/project/other',
       tests.embedding(array[-1, 0.5]::real[]), 'local-hash-512-v1', 1.0, now() - interval '1 hour'
  from generate_series(1, 40) i;
select tests.authenticate_as('99a00000-0000-4000-8000-00000000000c');
select is((select count(*)::int from public.hybrid_search(
            'which login bugs were fixed', tests.embedding(array[1, 0]::real[]), array['devai/project/ww'], 10, 0.1,
            'local-hash-512-v1', graph_depth => 0, recency_weight => 0.5, filter_after => now() - interval '7 days')
           where id = '99a00000-0000-4000-8000-0000000000a2'),
          1, 'within exact_scan_max_rows (1,000) rows the window''s memory is reached past the other scope''s');
reset role;
update public.memory_settings set value = 0 where name = 'exact_scan_max_rows';
select tests.authenticate_as('99a00000-0000-4000-8000-00000000000c');
select is((select count(*)::int from public.hybrid_search(
            'which login bugs were fixed', tests.embedding(array[1, 0]::real[]), array['devai/project/ww'], 10, 0.1,
            'local-hash-512-v1', graph_depth => 0, recency_weight => 0.5, filter_after => now() - interval '7 days')
           where id = '99a00000-0000-4000-8000-0000000000a2'),
          0, 'a bound of the list depth (30 rows) reads only the 40 newer memories: it is not reached');

select * from finish();
rollback;
