-- The vector signal as of an instant (public.match_memories with as_of) compares every memory of
-- the scope, but reads what each held then (public.memory_at, one history probe) only in distance
-- order, until it has match_count held then that pass the filters (migration 20261207500000).
-- Before, every row of the scope had its history read first: a 400-memory scope, 400 probes for
-- 5 answers. Counted as the rows of public.memory_history read.
begin;
select plan(5);

-- 400 memories, nearer to the query the smaller g; the two nearest forgotten and invalidated
-- since (history rows of this transaction: as of now they are not held), every 40th procedural.
insert into public.devai_memories (owner_id, content, memory_type, namespace, embedding, embedding_model)
select '99750000-0000-4000-8000-000000000001', 'Broker note ' || g, case when g % 40 = 0 then 'procedural' else 'semantic' end,
       'devai/project/asofvec', tests.embedding(array[1, g / 100.0]::real[]), 'm'
  from generate_series(1, 400) g;
update public.devai_memories set state = 'soft_deleted', purge_at = now() + interval '30 days'
 where owner_id = '99750000-0000-4000-8000-000000000001' and content = 'Broker note 1';
update public.devai_memories set is_valid = false
 where owner_id = '99750000-0000-4000-8000-000000000001' and content = 'Broker note 2';
analyze public.devai_memories;

select is((select array_agg(m.content order by m.similarity desc)
             from public.match_memories(tests.embedding('{1}'), 'devai/project/asofvec', 5, -1,
                                        '99750000-0000-4000-8000-000000000001', 'm', as_of => now()) m),
          array['Broker note 3', 'Broker note 4', 'Broker note 5', 'Broker note 6', 'Broker note 7'],
          'as of an instant, the nearest memories held then: those forgotten or invalidated by then are passed over');
select cmp_ok(tests.rows_read_by('public.memory_history', $$
                select count(*) from public.match_memories(tests.embedding('{1}'), 'devai/project/asofvec', 5, -1,
                                                           '99750000-0000-4000-8000-000000000001', 'm', as_of => now())$$),
              '<=', 20::bigint,
              'what the memories held then is read for the nearest few, not for the scope''s 400');
select is((select array_agg(m.content order by m.similarity desc)
             from public.match_memories(tests.embedding('{1}'), 'devai/project/asofvec', 3, -1,
                                        '99750000-0000-4000-8000-000000000001', 'm', as_of => now(),
                                        filter_memory_types => array['procedural']) m),
          array['Broker note 40', 'Broker note 80', 'Broker note 120'],
          'a filter is applied in distance order too: the nearest memories of then that pass it');
-- The answer carries the fields of then: as of before an edit, the old words.
update public.memory_history set ts = now() - interval '1 hour'
 where owner_id = '99750000-0000-4000-8000-000000000001';
update public.devai_memories set created_at = now() - interval '2 hours', valid_from = now() - interval '2 hours'
 where owner_id = '99750000-0000-4000-8000-000000000001';
update public.devai_memories set content = 'Broker note 3, rewritten'
 where owner_id = '99750000-0000-4000-8000-000000000001' and content = 'Broker note 3';
select is((select array_agg(m.content order by m.similarity desc)
             from public.match_memories(tests.embedding('{1}'), 'devai/project/asofvec', 2, -1,
                                        '99750000-0000-4000-8000-000000000001', 'm', as_of => now() - interval '30 minutes') m),
          array['Broker note 3', 'Broker note 4'],
          'and answers with the content it had then');
select is((select array_agg(m.content order by m.similarity desc)
             from public.match_memories(tests.embedding('{1}'), 'devai/project/asofvec', 2, -1,
                                        '99750000-0000-4000-8000-000000000001', 'm', as_of => now()) m),
          array['Broker note 3, rewritten', 'Broker note 4'],
          'as of now, the content it has now');

select * from finish();
rollback;
