-- Pin, unpin and confirm are their own history events (not UPDATE), with the change log still
-- 'updated' and the history event in its meta; a pin that comes with an edit stays UPDATE; a
-- confirm of a memory pinned already is recorded (CONFIRM) though no audited column changes.
begin;
-- Revisions are given at commit (migration 20261129300000); this file's one transaction never
-- commits, so they are given at the end of each statement instead.
set constraints public.memory_change_log_revision_at_commit immediate;
select plan(8);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace) values
  ('41100000-0000-4000-8000-000000000001', '41100000-0000-4000-8000-0000000000aa', 'commits follow conventional commits', 'semantic', 'devai/user'),
  ('41100000-0000-4000-8000-000000000002', '41100000-0000-4000-8000-0000000000aa', 'tabs over spaces', 'semantic', 'devai/user');

update public.devai_memories set pinned = true where id = '41100000-0000-4000-8000-000000000001';
update public.devai_memories set pinned = false where id = '41100000-0000-4000-8000-000000000001';
select set_config('memory.event', 'CONFIRM', true);
update public.devai_memories set pinned = true where id = '41100000-0000-4000-8000-000000000001';
select set_config('memory.event', '', true);

-- One transaction gives the history rows one timestamp; the change log's revisions keep the order.
select results_eq($$select meta ->> 'history_event' from public.memory_change_log
                     where memory_id = '41100000-0000-4000-8000-000000000001' and event = 'updated' order by revision$$,
                  $$select * from (values ('PIN'), ('UNPIN'), ('CONFIRM')) as e(event)$$,
                  'pin, unpin and a confirmed pin: change log ''updated'' with history events PIN, UNPIN, CONFIRM in order');
select set_eq($$select event from public.memory_history where memory_id = '41100000-0000-4000-8000-000000000001'$$,
              array['ADD', 'PIN', 'UNPIN', 'CONFIRM'], 'the history has PIN, UNPIN and CONFIRM, no UPDATE');

update public.devai_memories set pinned = true, content = 'tabs over spaces, width 4' where id = '41100000-0000-4000-8000-000000000002';
select is((select event from public.memory_history where memory_id = '41100000-0000-4000-8000-000000000002' and event <> 'ADD'),
          'UPDATE', 'a pin that comes with an edit is UPDATE');
select set_config('memory.event', 'CONFIRM', true);
update public.devai_memories set importance = 5 where id = '41100000-0000-4000-8000-000000000002';
select set_config('memory.event', '', true);
select is((select count(*)::int from public.memory_history where memory_id = '41100000-0000-4000-8000-000000000002' and event = 'CONFIRM'),
          0, 'the CONFIRM hint never invents an event: an importance change stays UPDATE');

-- Memory 1 is pinned: a confirm's update changes no audited column, and is recorded all the same.
select set_config('memory.event', 'CONFIRM', true);
update public.devai_memories set pinned = true, strength = 1, last_accessed_at = now()
 where id = '41100000-0000-4000-8000-000000000001';
select set_config('memory.event', '', true);
select is((select count(*)::int from public.memory_history where memory_id = '41100000-0000-4000-8000-000000000001' and event = 'CONFIRM'),
          2, 'a confirm of a memory pinned already writes CONFIRM');
update public.devai_memories set pinned = true, strength = 1, last_accessed_at = now()
 where id = '41100000-0000-4000-8000-000000000001';
select is((select count(*)::int from public.memory_history where memory_id = '41100000-0000-4000-8000-000000000001'),
          5, 'without the CONFIRM hint the same update of a pinned memory writes nothing');

select throws_ok($$insert into public.memory_history (owner_id, memory_id, event) values (gen_random_uuid(), gen_random_uuid(), 'TOUCH')$$,
                 '23514', null, 'the event list is closed');
select lives_ok($$insert into public.memory_history (owner_id, memory_id, event) values (gen_random_uuid(), gen_random_uuid(), 'CONFIRM')$$,
                'CONFIRM is an allowed event');

select * from finish();
rollback;
