-- History is in the order the changes were made, even when the writer that began first takes
-- the memory's row lock second: its row is given the instant after the memory's newest row (its
-- own now() is earlier), so history newest-first and memory_at (as_of) end with the state the
-- memory is in. One session cannot race two transactions, so the row the other writer committed
-- (a PIN stamped later than this transaction's now()) is written here directly.
begin;
select plan(5);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace) values
  ('78000000-0000-4000-8000-000000000001', '78000000-0000-4000-8000-00000000000a', 'ci runs on node 22', 'semantic', 'devai/global');
-- The other writer's change, committed with a later start time than ours.
insert into public.memory_history (owner_id, memory_id, event, actor, meta, ts)
select '78000000-0000-4000-8000-00000000000a', m.id, 'PIN', 'user:other',
       memory_private.history_snapshot(m) || '{"pinned": true}', now() + interval '1 second'
  from public.devai_memories m where m.id = '78000000-0000-4000-8000-000000000001';

-- Our change, made after it under the row lock.
update public.devai_memories set state = 'soft_deleted', purge_at = now() + interval '30 days'
 where id = '78000000-0000-4000-8000-000000000001';

select is((select event from public.memory_history where memory_id = '78000000-0000-4000-8000-000000000001'
            order by ts desc, id desc limit 1),
          'DELETE', 'the change made last is the newest history row');
select is((select ts from public.memory_history where memory_id = '78000000-0000-4000-8000-000000000001' and event = 'DELETE'),
          now() + interval '1 second 1 microsecond', 'it is stamped just after the row it follows');
select is((select a.state from public.devai_memories m, public.memory_at(m, now() + interval '2 seconds') a
            where m.id = '78000000-0000-4000-8000-000000000001'),
          'soft_deleted', 'as_of after both changes gives the state the memory is in');
select is((select ts from public.memory_history
            where memory_id = '78000000-0000-4000-8000-000000000001' and event = 'ADD'),
          now(), 'the ADD, its memory''s first row, keeps its transaction''s timestamp');

-- Rows of one transaction keep sharing its timestamp.
insert into public.devai_memories (id, owner_id, content, memory_type, namespace) values
  ('78000000-0000-4000-8000-000000000002', '78000000-0000-4000-8000-00000000000a', 'lint with biome', 'semantic', 'devai/global');
update public.devai_memories set pinned = true where id = '78000000-0000-4000-8000-000000000002';
select is((select count(distinct ts)::int from public.memory_history where memory_id = '78000000-0000-4000-8000-000000000002'),
          1, 'an insert and a change in one transaction share its timestamp');

select * from finish();
rollback;
