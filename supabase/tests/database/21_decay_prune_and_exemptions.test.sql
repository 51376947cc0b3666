-- Prune boundary (0.95^58 = 0.0510 > 0.05 stays valid; 0.95^59 = 0.0485 < 0.05 is invalidated
-- with a DECAY event), and the memories that never decay: priority 'highest' and pinned.
-- Soft-deleted rows are left alone; thresholds come from public.memory_settings.
begin;
set local timezone to 'UTC';
select plan(19);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace, priority, pinned, state, purge_at, base_strength, strength, last_accessed_at) values
  ('21000000-0000-4000-8000-000000000001', '21000000-0000-4000-8000-0000000000aa', 'prune: ordinary memory', 'semantic', 'devai/global', 'medium', false, 'active', null, 1.0, 1.0, '2026-01-01 00:00+00'),
  ('21000000-0000-4000-8000-000000000002', '21000000-0000-4000-8000-0000000000aa', 'prune: user-stated, highest', 'semantic', 'devai/global', 'highest', false, 'active', null, 1.0, 1.0, '2026-01-01 00:00+00'),
  ('21000000-0000-4000-8000-000000000003', '21000000-0000-4000-8000-0000000000aa', 'prune: pinned, already weak', 'semantic', 'devai/global', 'low', true, 'active', null, 0.01, 0.01, '2026-01-01 00:00+00'),
  ('21000000-0000-4000-8000-000000000008', '21000000-0000-4000-8000-0000000000aa', 'prune: pinned, full strength', 'semantic', 'devai/global', 'low', true, 'active', null, 1.0, 1.0, '2026-01-01 00:00+00'),
  ('21000000-0000-4000-8000-000000000004', '21000000-0000-4000-8000-0000000000aa', 'prune: soft-deleted', 'semantic', 'devai/global', 'medium', false, 'soft_deleted', '2026-03-01 00:00+00', 1.0, 1.0, '2026-01-01 00:00+00');

-- day 58: 0.95^58 = 0.05106 > 0.05
select memory_private.run_decay('2026-02-28 00:00+00');
select ok((select is_valid from public.devai_memories where id = '21000000-0000-4000-8000-000000000001'), 'day 58: still valid');
select is(round((select strength from public.devai_memories where id = '21000000-0000-4000-8000-000000000001')::numeric, 6),
          round(power(0.95::numeric, 58), 6), 'day 58: strength 0.95^58 = 0.0511');
select is((select count(*) from public.memory_history where memory_id = '21000000-0000-4000-8000-000000000001' and event = 'DECAY'),
          0::bigint, 'day 58: no DECAY event');

-- day 59: 0.95^59 = 0.04851 < 0.05
select is(memory_private.run_decay('2026-03-01 00:00+00') - 'batches' - 'pages', '{"decayed": 1, "invalidated": 1}'::jsonb,
          'day 59: one memory decays below the threshold and is invalidated');
select ok(not (select is_valid from public.devai_memories where id = '21000000-0000-4000-8000-000000000001'), 'day 59: is_valid = false');
select is(round((select strength from public.devai_memories where id = '21000000-0000-4000-8000-000000000001')::numeric, 6),
          round(power(0.95::numeric, 59), 6), 'day 59: strength 0.95^59 = 0.0485 is stored');
select results_eq(
  $$select event, actor from public.memory_history where memory_id = '21000000-0000-4000-8000-000000000001' and event <> 'ADD'$$,
  $$values ('DECAY'::text, 'cron:decay'::text)$$,
  'day 59: one DECAY history event by cron:decay');
select results_eq(
  $$select event, meta ->> 'history_event' from public.memory_change_log where memory_id = '21000000-0000-4000-8000-000000000001' and event <> 'created'$$,
  $$values ('deleted'::text, 'DECAY'::text)$$,
  'day 59: the change log (delta header) shows the invalidation once');
select is(memory_private.run_decay('2026-03-20 00:00+00') ->> 'invalidated', '0', 'an invalid memory is not decayed or invalidated again');
select is(current_setting('memory.event', true), '', 'run_decay leaves no memory.event hint behind for later writes');

-- exemptions
select is((select (strength, is_valid) from public.devai_memories where id = '21000000-0000-4000-8000-000000000002'),
          (1.0::double precision, true), 'priority highest never decays (79 idle days)');
select is((select (strength, is_valid) from public.devai_memories where id = '21000000-0000-4000-8000-000000000003'),
          (0.01::double precision, true), 'pinned never decays nor is pruned, even below the threshold');
select is((select (strength, is_valid) from public.devai_memories where id = '21000000-0000-4000-8000-000000000004'),
          (1.0::double precision, true), 'soft-deleted memories are left alone');
select is((select (strength, is_valid) from public.devai_memories where id = '21000000-0000-4000-8000-000000000008'),
          (1.0::double precision, true), 'pinned at full strength keeps it (no decay above the threshold either)');
select is((select count(*) from public.memory_history where memory_id in ('21000000-0000-4000-8000-000000000002', '21000000-0000-4000-8000-000000000003') and event = 'DECAY'),
          0::bigint, 'no DECAY event for highest or pinned');

-- settings drive the thresholds
update public.memory_settings set value = 0.5 where name = 'decay_base';
update public.memory_settings set value = 0.2 where name = 'prune_threshold';
insert into public.devai_memories (id, owner_id, content, memory_type, namespace, last_accessed_at) values
  ('21000000-0000-4000-8000-000000000005', '21000000-0000-4000-8000-0000000000aa', 'prune: half-life of a day', 'semantic', 'devai/global', '2026-01-01 00:00+00');
select memory_private.run_decay('2026-01-03 00:00+00');
select is((select (strength, is_valid) from public.devai_memories where id = '21000000-0000-4000-8000-000000000005'),
          (0.25::double precision, true), 'decay_base 0.5: two days give 0.25, above prune_threshold 0.2');
select memory_private.run_decay('2026-01-04 00:00+00');
select is((select (strength, is_valid) from public.devai_memories where id = '21000000-0000-4000-8000-000000000005'),
          (0.125::double precision, false), 'prune_threshold 0.2: 0.125 is invalidated');

-- very long idle periods do not underflow (Postgres raises on float underflow)
insert into public.devai_memories (id, owner_id, content, memory_type, namespace, last_accessed_at) values
  ('21000000-0000-4000-8000-000000000006', '21000000-0000-4000-8000-0000000000aa', 'prune: ancient', 'semantic', 'devai/global', '1990-01-01 00:00+00');
select lives_ok($$select memory_private.run_decay('2026-01-04 00:00+00')$$, '36 years idle with decay_base 0.5: no underflow error');

-- a role that may not skip triggers (no superuser) gets the same result on the slower path
insert into public.devai_memories (id, owner_id, content, memory_type, namespace, last_accessed_at) values
  ('21000000-0000-4000-8000-000000000007', '21000000-0000-4000-8000-0000000000aa', 'prune: decayed by service_role', 'semantic', 'devai/global', '2026-01-01 00:00+00');
set local role service_role;
select is(memory_private.run_decay('2026-01-03 00:00+00') ->> 'decayed', '1', 'service_role runs the decay job too');
reset role;

select * from finish();
rollback;
