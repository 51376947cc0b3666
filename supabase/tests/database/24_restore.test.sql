-- Restore (public.restore_memory, the memory API's restore route, as the signed-in user):
-- soft-deleted → active with purge_at cleared, decay-invalidated → valid; RESTORE history and
-- one 'restored' change-log entry; counts as an access, so the next TTL/decay run keeps it.
begin;
set local timezone to 'UTC';
select plan(12);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace, importance, last_accessed_at) values
  ('24000000-0000-4000-8000-000000000001', '24000000-0000-4000-8000-0000000000aa', 'restore: TTL victim', 'semantic', 'devai/global', 1, '2026-01-01 00:00+00'),
  ('24000000-0000-4000-8000-000000000002', '24000000-0000-4000-8000-0000000000aa', 'restore: decay victim', 'semantic', 'devai/global', 4, '2026-01-01 00:00+00'),
  ('24000000-0000-4000-8000-000000000003', '24000000-0000-4000-8000-0000000000bb', 'restore: other tenant', 'semantic', 'devai/global', 1, '2026-01-01 00:00+00');
select memory_private.run_decay('2026-03-05 00:00+00');   -- 63 days: all invalidated
select memory_private.run_ttl('2026-03-05 00:00+00');     -- importance 1: soft-deleted

-- as the owner, through RLS, as the service calls it (the restore route)
select tests.authenticate_as('24000000-0000-4000-8000-0000000000aa');

select is((select (state, purge_at is null, is_valid) from public.restore_memory('24000000-0000-4000-8000-000000000001', '2026-03-10 00:00+00')),
          ('active'::text, true, true), 'restore: soft-deleted and decayed memory is active and valid again, purge_at cleared');
select is((select (strength, base_strength, last_accessed_at) from public.devai_memories where id = '24000000-0000-4000-8000-000000000001'),
          (0.5::double precision, 0.5::double precision, '2026-03-10 00:00+00'::timestamptz),
          'restore counts as an access: strength = base_strength = restore_strength 0.5, last_accessed_at = now');
select results_eq(
  $$select event from public.memory_history where memory_id = '24000000-0000-4000-8000-000000000001' order by event$$,
  $$values ('ADD'::text), ('DECAY'), ('RESTORE'), ('TTL')$$, 'history: ADD, DECAY, TTL and RESTORE');
select is((select count(*) from public.memory_change_log where memory_id = '24000000-0000-4000-8000-000000000001' and event = 'restored'),
          1::bigint, 'the change log shows the restore once');
select is((select (state, is_valid) from public.restore_memory('24000000-0000-4000-8000-000000000002', '2026-03-10 00:00+00')),
          ('active'::text, true), 'restore: a decay-invalidated memory is valid again');
select is((select count(*) from public.restore_memory('24000000-0000-4000-8000-000000000002', '2026-03-10 00:00+00')), 1::bigint,
          'restoring an active memory returns it unchanged');
select is((select count(*) from public.memory_history where memory_id = '24000000-0000-4000-8000-000000000002' and event = 'RESTORE'),
          1::bigint, '... and records no second RESTORE');
select is_empty($$select * from public.restore_memory('24000000-0000-4000-8000-000000000003')$$,
                'another tenant''s memory cannot be restored (nothing returned)');
select is_empty($$select * from public.restore_memory('24000000-0000-4000-8000-0000000000ff')$$, 'unknown id: nothing returned');

reset role;
select set_config('request.jwt.claims', '', true);
select is((select state from public.devai_memories where id = '24000000-0000-4000-8000-000000000003'), 'soft_deleted',
          'the other tenant''s memory is still soft-deleted');
select is(memory_private.run_ttl('2026-03-11 00:00+00') ->> 'soft_deleted', '0', 'the next TTL run does not take the restored memory again');
select is(memory_private.run_decay('2026-03-11 00:00+00') ->> 'invalidated', '0', 'nor does the next decay run');

select * from finish();
rollback;
