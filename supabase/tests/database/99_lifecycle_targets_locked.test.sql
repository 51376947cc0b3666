-- The nightly decay and TTL lock the memories a call will change, in id order, before changing any
-- (migration 20261201200000, docs/operations.md#lock-order): lock_lifecycle_targets selects the rows
-- decay_page_range and ttl_page_range then change, with their conditions restated. This checks that
-- the two agree, exemption by exemption: a row the batches change but the lock missed would be
-- locked in heap order again (the deadlock the migration removes); one locked but not changed would
-- hold a request for nothing. Clock: p_now = 2026-06-01 00:00 UTC; decay_base 0.95, prune 0.05 (59
-- idle days fall below), TTL after 60 idle days below importance 3.
begin;
set local timezone to 'UTC';
select plan(7);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace, importance, pinned, priority, source, is_valid, state, base_strength, strength, last_accessed_at) values
  ('99b00000-0000-4000-8000-000000000001', '99b00000-0000-4000-8000-0000000000aa', 'idle 10 days: strength only', 'semantic', 'devai/global', 1, false, 'low', 'discovery', true, 'active', 1, 1, timestamptz '2026-06-01' - interval '10 days'),
  ('99b00000-0000-4000-8000-000000000002', '99b00000-0000-4000-8000-0000000000aa', 'idle 100 days', 'semantic', 'devai/global', 1, false, 'low', 'discovery', true, 'active', 1, 1, timestamptz '2026-06-01' - interval '100 days'),
  ('99b00000-0000-4000-8000-000000000003', '99b00000-0000-4000-8000-0000000000aa', 'idle 100 days, pinned', 'semantic', 'devai/global', 1, true, 'low', 'discovery', true, 'active', 1, 1, timestamptz '2026-06-01' - interval '100 days'),
  ('99b00000-0000-4000-8000-000000000004', '99b00000-0000-4000-8000-0000000000aa', 'idle 100 days, highest', 'semantic', 'devai/global', 1, false, 'highest', 'discovery', true, 'active', 1, 1, timestamptz '2026-06-01' - interval '100 days'),
  ('99b00000-0000-4000-8000-000000000005', '99b00000-0000-4000-8000-0000000000aa', 'idle 100 days, an episode', 'episodic', 'devai/global', 1, false, 'low', 'conversation', true, 'active', 1, 1, timestamptz '2026-06-01' - interval '100 days'),
  ('99b00000-0000-4000-8000-000000000006', '99b00000-0000-4000-8000-0000000000aa', 'idle 100 days, user-stated', 'semantic', 'devai/global', 1, false, 'medium', 'user_stated', true, 'active', 1, 1, timestamptz '2026-06-01' - interval '100 days'),
  ('99b00000-0000-4000-8000-000000000007', '99b00000-0000-4000-8000-0000000000aa', 'idle 10 days, decayed already', 'semantic', 'devai/global', 1, false, 'low', 'discovery', true, 'active', 1, power(0.95::double precision, 10), timestamptz '2026-06-01' - interval '10 days'),
  ('99b00000-0000-4000-8000-000000000008', '99b00000-0000-4000-8000-0000000000aa', 'idle 100 days, invalid', 'semantic', 'devai/global', 1, false, 'low', 'discovery', false, 'active', 1, 0.01, timestamptz '2026-06-01' - interval '100 days'),
  ('99b00000-0000-4000-8000-000000000009', '99b00000-0000-4000-8000-0000000000aa', 'idle 100 days, forgotten', 'semantic', 'devai/global', 1, false, 'low', 'discovery', true, 'active', 1, 1, timestamptz '2026-06-01' - interval '100 days'),
  ('99b00000-0000-4000-8000-00000000000a', '99b00000-0000-4000-8000-0000000000aa', 'idle 100 days, importance 5', 'semantic', 'devai/global', 5, false, 'low', 'discovery', true, 'active', 1, 1, timestamptz '2026-06-01' - interval '100 days');

update public.devai_memories set state = 'soft_deleted', purge_at = '2026-07-01'
 where id = '99b00000-0000-4000-8000-000000000009';

create temporary table before_decay on commit drop as
  select id, strength, is_valid, state from public.devai_memories where id::text like '99b00000-%';
create temporary table locked (job text, n bigint) on commit drop;

insert into locked values ('decay', memory_private.lock_lifecycle_targets('decay', '2026-06-01', 0, memory_private.memory_heap_pages()));
select is((memory_private.run_decay('2026-06-01') ->> 'decayed')::bigint, (select n from locked where job = 'decay'),
          'decay: the batches change as many memories as were locked first');
select results_eq(
  $$select b.id from before_decay b join public.devai_memories m using (id)
     where m.strength is distinct from b.strength or m.is_valid is distinct from b.is_valid order by b.id$$,
  $$values ('99b00000-0000-4000-8000-000000000001'::uuid), ('99b00000-0000-4000-8000-000000000002'),
           ('99b00000-0000-4000-8000-000000000006'), ('99b00000-0000-4000-8000-00000000000a')$$,
  'decay changed the idle ones but pinned, highest, episodes, invalid, forgotten and unchanged ones');

insert into locked values ('ttl', memory_private.lock_lifecycle_targets('ttl', '2026-06-01', 0, memory_private.memory_heap_pages()));
select is((memory_private.run_ttl('2026-06-01') ->> 'soft_deleted')::bigint, (select n from locked where job = 'ttl'),
          'TTL: the batches soft-delete as many memories as were locked first');
select results_eq(
  $$select id from public.devai_memories where id::text like '99b00000-%' and state = 'soft_deleted'
     and id <> '99b00000-0000-4000-8000-000000000009' order by id$$,
  $$values ('99b00000-0000-4000-8000-000000000002'::uuid), ('99b00000-0000-4000-8000-000000000005'),
           ('99b00000-0000-4000-8000-000000000008')$$,
  'TTL soft-deleted the idle unimportant ones, episodes and invalid ones too, not pinned, highest, user-stated or important ones');

select is(memory_private.lock_lifecycle_targets('decay', '2027-06-01', 0, 0), 0::bigint,
          'an empty page range locks nothing');
select throws_ok($$select memory_private.lock_lifecycle_targets('purge', now(), 0, 1)$$, '22023', null,
                 'an unknown job is refused');
select ok(not has_function_privilege('authenticated', 'memory_private.lock_lifecycle_targets(text, timestamptz, bigint, bigint)', 'execute'),
          'a tenant cannot call it');

select * from finish();
rollback;
