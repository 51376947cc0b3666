-- Writing many memories in one statement reads the history's index, not the history written
-- before (migration 20261205200100, docs/graph.md#as-of). The write-order trigger
-- (memory_private.history_ts_in_write_order) looks up each memory's newest history row; planned
-- while the statistics said memory_history was empty (a new project, or before autovacuum's first
-- ANALYZE), the session kept a sequential scan for it, and each history row read every row written
-- before it: 2,000 memories in one INSERT read 1,999,000 history rows, and invalidating 400 of them
-- 879,800 more. Counted here as the rows of public.memory_history read.
begin;
select plan(3);

-- The history as a new project has it: no rows, statistics saying so (rolled back).
set local client_min_messages = warning;  -- the truncate names the tables it cascades to
truncate public.devai_memories, public.memory_history cascade;
analyze public.devai_memories;
analyze public.memory_history;

select cmp_ok(tests.rows_read_by('public.memory_history', $$
                insert into public.devai_memories (id, owner_id, content, memory_type, namespace)
                select ('99500000-0000-4000-8000-' || lpad(g::text, 12, '0'))::uuid,
                       ('99500000-0000-4000-8000-' || lpad((g % 5)::text, 12, 'a'))::uuid,
                       'Memory number ' || g || ' of a bulk load', 'semantic', 'devai/project/bulk'
                  from generate_series(1, 2000) g$$),
              '<=', 2000::bigint,
              '2,000 memories written in one statement read a few history rows each (they read 1,999,000)');
select cmp_ok(tests.rows_read_by('public.memory_history', $$
                update public.devai_memories set is_valid = false
                 where owner_id = '99500000-0000-4000-8000-aaaaaaaaaaa1'$$),
              '<=', 2 * 400::bigint,
              'invalidating 400 of them reads their own history rows (they read 879,800)');
select is((select count(*)::int from public.memory_history
            where owner_id = '99500000-0000-4000-8000-aaaaaaaaaaa1'), 800,
          'each of them has its two history rows');

select * from finish();
rollback;
