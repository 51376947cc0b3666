-- Decay writes its invalidations' history rows in bulk (migration 20261124800300): the row a
-- decayed memory gets is the row the history trigger writes for the same change; the memory
-- itself ends the same (updated_at set, validity not closed); the row triggers are skipped only
-- inside that statement, so the next ordinary write is audited as before.
begin;
set local timezone to 'UTC';
select plan(8);

-- Twins: same fields, idle since 2026-01-01; A is invalidated by hand through the trigger (as any
-- write is), B by the nightly job.
insert into public.devai_memories (id, owner_id, content, memory_type, namespace, priority, session_id, metadata,
                                   base_strength, strength, last_accessed_at, created_at, valid_from) values
  ('36000000-0000-4000-8000-00000000000a', '36000000-0000-4000-8000-0000000000aa', 'The build used Node 16',
   'semantic', 'devai/project/shop', 'low', 's-1', '{"category": "build"}', 0.5, 0.5,
   '2026-01-01 00:00+00', '2025-12-01 00:00+00', '2025-12-01 00:00+00'),
  ('36000000-0000-4000-8000-00000000000b', '36000000-0000-4000-8000-0000000000aa', 'The build used Node 16',
   'semantic', 'devai/project/shop', 'low', 's-1', '{"category": "build"}', 0.5, 0.5,
   '2026-01-01 00:00+00', '2025-12-01 00:00+00', '2025-12-01 00:00+00');

select set_config('memory.event', 'DECAY', true), set_config('memory.actor', 'cron:decay', true);
update public.devai_memories set is_valid = false, strength = 0.5 * power(0.95, 50)
 where id = '36000000-0000-4000-8000-00000000000a';
select set_config('memory.event', '', true), set_config('memory.actor', '', true);

select memory_private.run_decay('2026-02-20 00:00+00');

select is((select count(*)::int from public.memory_history where memory_id = '36000000-0000-4000-8000-00000000000b' and event = 'DECAY'), 1,
          'the job wrote one DECAY row for the memory it invalidated');
select is(
  (select jsonb_build_object('event', h.event, 'actor', h.actor, 'old_ref', h.old_ref = h.memory_id, 'new_ref', h.new_ref = h.memory_id,
                             'old_content', h.old_content, 'new_content', h.new_content, 'meta', h.meta - 'strength')
     from public.memory_history h where h.memory_id = '36000000-0000-4000-8000-00000000000b' and h.event = 'DECAY'),
  (select jsonb_build_object('event', h.event, 'actor', h.actor, 'old_ref', h.old_ref = h.memory_id, 'new_ref', h.new_ref = h.memory_id,
                             'old_content', h.old_content, 'new_content', h.new_content, 'meta', h.meta - 'strength')
     from public.memory_history h where h.memory_id = '36000000-0000-4000-8000-00000000000a' and h.event = 'DECAY'),
  'the bulk row is the trigger''s row: event, actor, refs, contents and the memory''s snapshot');
select is((select round((meta ->> 'strength')::numeric, 12) from public.memory_history
            where memory_id = '36000000-0000-4000-8000-00000000000b' and event = 'DECAY'),
          round((0.5 * power(0.95, 50))::numeric, 12), 'the snapshot has the decayed strength');
select is((select (is_valid, valid_until is null, updated_at = now()) from public.devai_memories
            where id = '36000000-0000-4000-8000-00000000000b'),
          (false, true, true), 'invalid, validity not closed (decay never closes it), updated_at set');
select is((select count(*)::int from public.memory_change_log
            where memory_id = '36000000-0000-4000-8000-00000000000b' and event = 'deleted'), 1,
          'one change-log row for the delta header');
select is(current_setting('memory.bulk', true), '', 'the job leaves no bulk setting behind');

update public.devai_memories set content = 'The build uses Node 22' where id = '36000000-0000-4000-8000-00000000000b';
select is((select count(*)::int from public.memory_history where memory_id = '36000000-0000-4000-8000-00000000000b' and event = 'UPDATE'), 1,
          'the next ordinary write is audited by the trigger again');

-- The setting is the jobs' alone: a tenant's session that sets it is still audited.
select tests.authenticate_as('36000000-0000-4000-8000-0000000000aa');
select set_config('memory.bulk', 'on', true);
update public.devai_memories set content = 'The build uses Node 24' where id = '36000000-0000-4000-8000-00000000000b';
reset role;
select set_config('memory.bulk', '', true);
select is((select count(*)::int from public.memory_history where memory_id = '36000000-0000-4000-8000-00000000000b' and event = 'UPDATE'), 2,
          'a tenant that sets memory.bulk itself is audited all the same');

select * from finish();
rollback;
