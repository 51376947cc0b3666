-- The change log the nightly jobs write (migration 20261123000700): per tenant, after the call's
-- last batch (after each batch until 20261130200000: docs/operations.md#lock-order), not per row, yet the same rows a per-row write gives: one per change, consecutive revisions
-- after the tenant's last one (in memory-id order), the tenant's thread revision moved to the
-- last, the same meta a forget writes, and the next ordinary write continuing from there.
-- Clock: p_now = 2026-06-01 00:00 UTC. Tenant A has 3 memories that TTL retires and 2 that decay
-- invalidates, tenant B one of each; both start with revisions from their inserts.
begin;
-- Revisions are given at commit (migration 20261129300000); this file's one transaction never
-- commits, so they are given at the end of each statement instead.
set constraints public.memory_change_log_revision_at_commit immediate;
set local timezone to 'UTC';
select plan(12);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace, importance, priority, source, metadata, strength, base_strength, last_accessed_at) values
  ('31000000-0000-4000-8000-000000000003', '31000000-0000-4000-8000-0000000000aa', 'A: ttl 3', 'semantic', 'devai/global', 1, 'low', 'discovery', '{"category": "tooling"}', 0.04, 1, timestamptz '2026-06-01 00:00+00' - interval '90 days'),
  ('31000000-0000-4000-8000-000000000001', '31000000-0000-4000-8000-0000000000aa', 'A: ttl 1', 'semantic', 'devai/global', 1, 'low', 'discovery', '{}', 0.04, 1, timestamptz '2026-06-01 00:00+00' - interval '90 days'),
  ('31000000-0000-4000-8000-000000000002', '31000000-0000-4000-8000-0000000000aa', 'A: ttl 2', 'episodic', 'devai/project/x', 2, 'low', 'discovery', '{}', 0.04, 1, timestamptz '2026-06-01 00:00+00' - interval '90 days'),
  ('31000000-0000-4000-8000-000000000004', '31000000-0000-4000-8000-0000000000aa', 'A: decays below 0.05', 'semantic', 'devai/global', 4, 'low', 'discovery', '{}', 0.06, 1, timestamptz '2026-06-01 00:00+00' - interval '59 days'),
  ('31000000-0000-4000-8000-000000000005', '31000000-0000-4000-8000-0000000000aa', 'A: decays below 0.05 too', 'semantic', 'devai/global', 4, 'low', 'discovery', '{}', 0.06, 1, timestamptz '2026-06-01 00:00+00' - interval '59 days'),
  ('31000000-0000-4000-8000-000000000006', '31000000-0000-4000-8000-0000000000bb', 'B: ttl', 'semantic', 'devai/global', 1, 'low', 'discovery', '{}', 0.04, 1, timestamptz '2026-06-01 00:00+00' - interval '90 days'),
  ('31000000-0000-4000-8000-000000000007', '31000000-0000-4000-8000-0000000000bb', 'B: decays below 0.05', 'semantic', 'devai/global', 4, 'low', 'discovery', '{}', 0.06, 1, timestamptz '2026-06-01 00:00+00' - interval '59 days');
-- The 90-day rows were invalidated by earlier nights (as the store would have them).
update public.devai_memories set is_valid = false where id::text like '31000000-%' and content like '%ttl%';

select results_eq($$select owner_id::text, revision from public.memory_thread_revisions where owner_id::text like '31000000-%' order by 1$$,
  $$values ('31000000-0000-4000-8000-0000000000aa', 8::bigint), ('31000000-0000-4000-8000-0000000000bb', 3::bigint)$$,
  'before: a revision per insert and per earlier invalidation');

select is(memory_private.run_decay('2026-06-01 00:00+00') ->> 'invalidated', '3', 'decay invalidates 3 (two of A, one of B)');
select results_eq(
  $$select owner_id::text, revision, memory_id::text, event, meta ->> 'history_event' from public.memory_change_log
     where owner_id::text like '31000000-%' and revision > 3 and (owner_id::text like '%bb' or revision > 8) order by 1, 2$$,
  $$values ('31000000-0000-4000-8000-0000000000aa', 9::bigint, '31000000-0000-4000-8000-000000000004', 'deleted', 'DECAY'),
           ('31000000-0000-4000-8000-0000000000aa', 10::bigint, '31000000-0000-4000-8000-000000000005', 'deleted', 'DECAY'),
           ('31000000-0000-4000-8000-0000000000bb', 4::bigint, '31000000-0000-4000-8000-000000000007', 'deleted', 'DECAY')$$,
  'decay: one change-log row per invalidation, consecutive revisions per tenant in memory-id order');

select is(memory_private.run_ttl('2026-06-01 00:00+00') ->> 'soft_deleted', '4', 'TTL soft-deletes 4 (three of A, one of B)');
select results_eq(
  $$select owner_id::text, revision, memory_id::text, event from public.memory_change_log
     where owner_id::text like '31000000-%' and event = 'soft_deleted' order by 1, 2$$,
  $$values ('31000000-0000-4000-8000-0000000000aa', 11::bigint, '31000000-0000-4000-8000-000000000001', 'soft_deleted'),
           ('31000000-0000-4000-8000-0000000000aa', 12::bigint, '31000000-0000-4000-8000-000000000002', 'soft_deleted'),
           ('31000000-0000-4000-8000-0000000000aa', 13::bigint, '31000000-0000-4000-8000-000000000003', 'soft_deleted'),
           ('31000000-0000-4000-8000-0000000000bb', 5::bigint, '31000000-0000-4000-8000-000000000006', 'soft_deleted')$$,
  'TTL: one change-log row per soft-delete, continuing each tenant''s revisions');
select results_eq($$select owner_id::text, revision from public.memory_thread_revisions where owner_id::text like '31000000-%' order by 1$$,
  $$values ('31000000-0000-4000-8000-0000000000aa', 13::bigint), ('31000000-0000-4000-8000-0000000000bb', 5::bigint)$$,
  'each tenant''s thread revision is its last change');
select is((select count(*)::int from public.memory_change_log where owner_id::text like '31000000-%'), 18,
          'no change logged twice or missed (13 rows of A, 5 of B)');

-- The meta and summary a per-row change writes (memory_private.change_log_meta).
select is((select meta from public.memory_change_log where memory_id = '31000000-0000-4000-8000-000000000003' and event = 'soft_deleted'),
          '{"memory_type": "semantic", "namespace": "devai/global", "importance": 1, "category": "tooling", "history_event": "TTL"}'::jsonb,
          'TTL meta: memory_type, namespace, importance, category, history event');
select is((select summary from public.memory_change_log where memory_id = '31000000-0000-4000-8000-000000000002' and event = 'soft_deleted'),
          'A: ttl 2', 'the summary is the content');
select results_eq(
  $$select event, actor from public.memory_history where memory_id = '31000000-0000-4000-8000-000000000004' and event <> 'ADD'$$,
  $$values ('DECAY'::text, 'cron:decay'::text)$$, 'the history row is still written by the trigger');

-- The next ordinary write goes on from the job's last revision, with the per-row path.
update public.devai_memories set content = 'B: decays below 0.05, edited' where id = '31000000-0000-4000-8000-000000000007';
select is((select max(revision) from public.memory_change_log where owner_id = '31000000-0000-4000-8000-0000000000bb'), 6::bigint,
          'an ordinary write after the job continues at the next revision');
select is(coalesce(current_setting('memory.change_log', true), ''), '', 'the jobs leave memory.change_log as they found it');

select * from finish();
rollback;
