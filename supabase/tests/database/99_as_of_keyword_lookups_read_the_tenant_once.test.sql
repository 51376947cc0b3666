-- The keyword lookups as of an instant (memory_search.keyword_postings with p_as_of) read the
-- tenant's rows once per search: one pass takes the scopes' memories of then matching any term,
-- with their words of then, and every term is matched on those (migration 20261207500100).
-- Before, each term scanned the tenant's rows again (no index holds the rows of then): five
-- terms in a 600-memory tenant, 3,600 rows read. Counted as the rows of public.devai_memories read.
begin;
select plan(5);

-- 600 memories recorded two hours ago: 'zanzibar' in three, 'quokka' in two, 'broker' in all.
insert into public.devai_memories (owner_id, content, memory_type, namespace, created_at, valid_from)
select '99750000-0000-4000-8000-000000000002',
       'Broker note ' || g || case when g in (10, 20, 30) then ' about zanzibar' when g in (40, 50) then ' about quokka' else '' end,
       'semantic', 'devai/project/asofkw', now() - interval '2 hours', now() - interval '2 hours'
  from generate_series(1, 600) g;
update public.memory_history set ts = now() - interval '2 hours'
 where owner_id = '99750000-0000-4000-8000-000000000002';
-- Since the instant: one 'zanzibar' memory rewritten to 'quokka' (as of then it said zanzibar),
-- one forgotten (as of then it was held; today's keyword index no longer holds it).
update public.devai_memories set content = 'Broker note 10 about quokka'
 where owner_id = '99750000-0000-4000-8000-000000000002' and content = 'Broker note 10 about zanzibar';
update public.devai_memories set state = 'soft_deleted', purge_at = now() + interval '30 days'
 where owner_id = '99750000-0000-4000-8000-000000000002' and content = 'Broker note 40 about quokka';
analyze public.devai_memories;

select is((select (p.term_df, (select array_agg(m.content order by m.content) from public.devai_memories m where m.id = any (p.candidates)))
             from memory_search.keyword_postings('99750000-0000-4000-8000-000000000002', array['devai/project/asofkw/'],
                                                 array['zanzibar'::tsquery, 'quokka', 'walrus', 'narwhal', 'broker'], 25, 90,
                                                 now() - interval '1 hour') p),
          -- (memory 10 shown with today's words: it counts for 'zanzibar', its word then)
          (array[3, 2, 0, 0, 26], array['Broker note 10 about quokka', 'Broker note 20 about zanzibar',
                                         'Broker note 30 about zanzibar', 'Broker note 40 about quokka',
                                         'Broker note 50 about quokka']::text[]),
          'as of an instant, each term counts and brings the memories that held its words then');
select cmp_ok(tests.rows_read_by('public.devai_memories', $$
                select * from memory_search.keyword_postings('99750000-0000-4000-8000-000000000002', array['devai/project/asofkw/'],
                                                             array['zanzibar'::tsquery, 'quokka', 'walrus', 'narwhal', 'broker'], 25, 90,
                                                             now() - interval '1 hour')$$),
              '<=', 700::bigint,
              'the tenant''s 600 rows are read once, not once per term');
-- Every term common: the memories matching all of them, from the same pass.
select is((select (p.term_df, cardinality(p.candidates))
             from memory_search.keyword_postings('99750000-0000-4000-8000-000000000002', array['devai/project/asofkw/'],
                                                 array['broker'::tsquery, 'note'], 25, 90, now() - interval '1 hour') p),
          (array[26, 26], 25),
          'every term common: the cap of the memories matching them all');
select is((select (p.term_df, (select array_agg(m.content order by m.content) from public.devai_memories m where m.id = any (p.candidates)))
             from memory_search.keyword_postings('99750000-0000-4000-8000-000000000002', array['devai/project/asofkw/'],
                                                 array['zanzibar'::tsquery, 'quokka'], 25, 90, now()) p),
          (array[2, 2], array['Broker note 10 about quokka', 'Broker note 20 about zanzibar', 'Broker note 30 about zanzibar',
                              'Broker note 50 about quokka']::text[]),
          'as of now, the words of now, and the forgotten memory is not held');

-- A null term (the function is the tenant's to call) matches nothing and leaves the others whole.
select is((select p.term_df
             from memory_search.keyword_postings('99750000-0000-4000-8000-000000000002', array['devai/project/asofkw/'],
                                                 array['quokka'::tsquery, null, 'zanzibar'], 25, 90,
                                                 now() - interval '1 hour') p),
          array[2, 0, 3],
          'a null term counts nothing and takes nothing from the terms around it');

select * from finish();
rollback;
