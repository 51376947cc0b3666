-- TTL soft-delete (seed 001 §7): idle MORE than ttl_idle_days (60) AND importance below
-- ttl_importance_below (3) AND not pinned AND not priority highest / user_stated
-- → state soft_deleted, purge_at = now + purge_grace_days (30), TTL history event.
-- Clock for every run: p_now = 2026-06-01 00:00 UTC.
begin;
set local timezone to 'UTC';
select plan(14);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace, importance, pinned, priority, source, is_valid, last_accessed_at) values
  ('23000000-0000-4000-8000-000000000001', '23000000-0000-4000-8000-0000000000aa', 'ttl: 61 days, importance 1', 'semantic', 'devai/global', 1, false, 'low', 'discovery', true, timestamptz '2026-06-01 00:00+00' - interval '61 days'),
  ('23000000-0000-4000-8000-000000000002', '23000000-0000-4000-8000-0000000000aa', 'ttl: 59 days, importance 1', 'semantic', 'devai/global', 1, false, 'low', 'discovery', true, timestamptz '2026-06-01 00:00+00' - interval '59 days'),
  ('23000000-0000-4000-8000-000000000003', '23000000-0000-4000-8000-0000000000aa', 'ttl: exactly 60 days', 'semantic', 'devai/global', 1, false, 'low', 'discovery', true, timestamptz '2026-06-01 00:00+00' - interval '60 days'),
  ('23000000-0000-4000-8000-000000000004', '23000000-0000-4000-8000-0000000000aa', 'ttl: 61 days, importance 2 (below 3)', 'semantic', 'devai/global', 2, false, 'low', 'discovery', true, timestamptz '2026-06-01 00:00+00' - interval '61 days'),
  ('23000000-0000-4000-8000-000000000005', '23000000-0000-4000-8000-0000000000aa', 'ttl: 61 days, importance 3 (at threshold)', 'semantic', 'devai/global', 3, false, 'low', 'discovery', true, timestamptz '2026-06-01 00:00+00' - interval '61 days'),
  ('23000000-0000-4000-8000-000000000006', '23000000-0000-4000-8000-0000000000aa', 'ttl: 61 days, pinned', 'semantic', 'devai/global', 1, true, 'low', 'discovery', true, timestamptz '2026-06-01 00:00+00' - interval '61 days'),
  ('23000000-0000-4000-8000-000000000007', '23000000-0000-4000-8000-0000000000aa', 'ttl: 61 days, priority highest', 'semantic', 'devai/global', 1, false, 'highest', 'discovery', true, timestamptz '2026-06-01 00:00+00' - interval '61 days'),
  ('23000000-0000-4000-8000-000000000008', '23000000-0000-4000-8000-0000000000aa', 'ttl: 61 days, user-stated', 'semantic', 'devai/global', 1, false, 'medium', 'user_stated', true, timestamptz '2026-06-01 00:00+00' - interval '61 days'),
  ('23000000-0000-4000-8000-000000000009', '23000000-0000-4000-8000-0000000000aa', 'ttl: 90 days, already decayed', 'semantic', 'devai/global', 1, false, 'low', 'discovery', false, timestamptz '2026-06-01 00:00+00' - interval '90 days');

select is(memory_private.run_ttl('2026-06-01 00:00+00') ->> 'soft_deleted', '3', 'TTL soft-deletes three memories');
select results_eq(
  $$select id from public.devai_memories where id::text like '23000000-%' and state = 'soft_deleted' order by id$$,
  $$values ('23000000-0000-4000-8000-000000000001'::uuid), ('23000000-0000-4000-8000-000000000004'), ('23000000-0000-4000-8000-000000000009')$$,
  'soft-deleted: 61 idle days with importance 1 and 2, and the decayed 90-day one');
select ok((select state = 'active' from public.devai_memories where id = '23000000-0000-4000-8000-000000000002'), '59 idle days: kept');
select ok((select state = 'active' from public.devai_memories where id = '23000000-0000-4000-8000-000000000003'), 'exactly 60 idle days: kept (more than 60 is required)');
select ok((select state = 'active' from public.devai_memories where id = '23000000-0000-4000-8000-000000000005'), 'importance 3 = ttl_importance_below: kept');
select ok((select state = 'active' from public.devai_memories where id = '23000000-0000-4000-8000-000000000006'), 'pinned: kept');
select ok((select state = 'active' from public.devai_memories where id = '23000000-0000-4000-8000-000000000007'), 'priority highest: kept');
select ok((select state = 'active' from public.devai_memories where id = '23000000-0000-4000-8000-000000000008'), 'user-stated: kept');
select is((select purge_at from public.devai_memories where id = '23000000-0000-4000-8000-000000000001'),
          '2026-07-01 00:00+00'::timestamptz, 'purge_at = now + 30 days');
select results_eq(
  $$select event, actor from public.memory_history where memory_id = '23000000-0000-4000-8000-000000000001' and event <> 'ADD'$$,
  $$values ('TTL'::text, 'cron:ttl'::text)$$, 'one TTL history event by cron:ttl');
select results_eq(
  $$select event from public.memory_change_log where memory_id = '23000000-0000-4000-8000-000000000001' and event <> 'created'$$,
  $$values ('soft_deleted'::text)$$, 'the change log shows the transition once');
select is(memory_private.run_ttl('2026-06-01 00:00+00') ->> 'soft_deleted', '0', 're-running TTL changes nothing');

-- thresholds come from memory_settings
update public.memory_settings set value = 30 where name = 'ttl_idle_days';
update public.memory_settings set value = 4 where name = 'ttl_importance_below';
update public.memory_settings set value = 7 where name = 'purge_grace_days';
select is(memory_private.run_ttl('2026-06-01 00:00+00') ->> 'soft_deleted', '3', 'ttl_idle_days 30 and importance below 4: three more');
select is((select purge_at from public.devai_memories where id = '23000000-0000-4000-8000-000000000002'),
          '2026-06-08 00:00+00'::timestamptz, 'purge_grace_days 7: purge_at = now + 7 days');

select * from finish();
rollback;
