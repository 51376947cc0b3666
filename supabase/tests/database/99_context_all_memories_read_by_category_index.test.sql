-- query_memories' context-'all' part (a category such as 'profile' answers whatever the query)
-- reads those categories' memories through devai_memories_owner_category, not every memory of the
-- tenant (migration 20261205300000, docs/retrieval.md). The category was checked only inside
-- memory_search.passes_filters, which the planner cannot see into: a live search read all of a
-- tenant's memories for it. Counted as the rows of public.devai_memories read.
begin;
select plan(3);

insert into public.memory_agent_allowlists (agent, category)
values ('ctx-all-agent', 'profile'), ('ctx-all-agent', 'goals') on conflict do nothing;
-- 3,000 memories of one tenant, 30 of them 'profile' (context 'all'), the rest 'goals'.
insert into public.devai_memories (owner_id, content, memory_type, namespace, importance, metadata)
select '99300000-0000-4000-8000-000000000001', 'Note ' || g || ' on broker rebalancing', 'semantic',
       'devai/project/ctxall', 1 + g % 5,
       jsonb_build_object('category', case when g % 100 = 0 then 'profile' else 'goals' end)
  from generate_series(1, 3000) g;
analyze public.devai_memories;

-- A question no memory's words match: what it answers is the context-'all' part alone.
select is((select array_agg(q.category order by q.importance desc, q.updated_at desc, q.id)
             from public.query_memories('zzqqxv', null, array['devai/project/ctxall'], 'ctx-all-agent',
                                        array['profile', 'goals'], 10, 0.7, 'text-embedding-3-small',
                                        '99300000-0000-4000-8000-000000000001', search_mode => 'keyword') q),
          array_fill('profile'::text, array[10]),
          'the context-all category''s memories answer a question no memory matches');
select cmp_ok(tests.rows_read_by('public.devai_memories', $$
                select count(*) from public.query_memories('zzqqxv', null, array['devai/project/ctxall'], 'ctx-all-agent',
                                                           array['profile', 'goals'], 10, 0.7, 'text-embedding-3-small',
                                                           '99300000-0000-4000-8000-000000000001', search_mode => 'keyword')$$),
              '<=', 200::bigint,
              'the context-all part reads its category''s memories, not the tenant''s 3,000');
-- The most important first, then the last changed: the order the part always had.
select is((select array_agg(q.id order by q.importance desc, q.updated_at desc, q.id)
             from public.query_memories('zzqqxv', null, array['devai/project/ctxall'], 'ctx-all-agent',
                                        array['profile', 'goals'], 10, 0.7, 'text-embedding-3-small',
                                        '99300000-0000-4000-8000-000000000001', search_mode => 'keyword') q),
          (select array_agg(x.id) from (select m.id from public.devai_memories m
                                         where m.owner_id = '99300000-0000-4000-8000-000000000001'
                                           and m.metadata ->> 'category' = 'profile'
                                         order by m.importance desc, m.updated_at desc, m.id limit 10) x),
          'the context-all memories come most important first, then the last changed');

select * from finish();
rollback;
