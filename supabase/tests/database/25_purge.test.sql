-- Purge: soft-deleted memories at or past purge_at are deleted in bounded batches; the delete
-- trigger writes a PURGE history row and the earlier history survives (no foreign key).
begin;
set local timezone to 'UTC';
select plan(16);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace, state, purge_at) values
  ('25000000-0000-4000-8000-000000000001', '25000000-0000-4000-8000-0000000000aa', 'purge: due yesterday', 'semantic', 'devai/global', 'soft_deleted', '2026-04-30 00:00+00'),
  ('25000000-0000-4000-8000-000000000002', '25000000-0000-4000-8000-0000000000aa', 'purge: due now', 'semantic', 'devai/global', 'soft_deleted', '2026-05-01 00:00+00'),
  ('25000000-0000-4000-8000-000000000003', '25000000-0000-4000-8000-0000000000aa', 'purge: due in a second', 'semantic', 'devai/global', 'soft_deleted', '2026-05-01 00:00:01+00'),
  ('25000000-0000-4000-8000-000000000004', '25000000-0000-4000-8000-0000000000aa', 'purge: active', 'semantic', 'devai/global', 'active', null);
insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength) values
  ('25000000-0000-4000-8000-0000000000aa', '25000000-0000-4000-8000-000000000004', '25000000-0000-4000-8000-000000000001', 'related_to', 0.9);

select is(memory_private.run_purge('2026-05-01 00:00+00'), '{"purged": 2, "batches": 1, "remaining": 0}'::jsonb,
          'purges the two memories at or past purge_at');
select results_eq(
  $$select id from public.devai_memories where id::text like '25000000-%' order by id$$,
  $$values ('25000000-0000-4000-8000-000000000003'::uuid), ('25000000-0000-4000-8000-000000000004')$$,
  'not yet due and active memories are kept');
select results_eq(
  $$select event, actor, old_content from public.memory_history where memory_id = '25000000-0000-4000-8000-000000000001' order by event$$,
  $$values ('ADD'::text, 'postgres'::text, null::text), ('PURGE', 'cron:purge', 'purge: due yesterday')$$,
  'history survives the purge: ADD, then PURGE by cron:purge with the content');
select is((select meta ->> 'namespace' from public.memory_history where memory_id = '25000000-0000-4000-8000-000000000001' and event = 'PURGE'),
          'devai/global', 'the PURGE row keeps the memory''s fields for audit and export');
select is((select count(*) from public.memory_relations where owner_id = '25000000-0000-4000-8000-0000000000aa'), 0::bigint,
          'the purged memory''s graph edges are gone');
select is(memory_private.run_purge('2026-05-01 00:00+00') ->> 'purged', '0', 're-running purge deletes nothing more');

-- bounded batches
insert into public.devai_memories (owner_id, content, memory_type, namespace, state, purge_at)
select '25000000-0000-4000-8000-0000000000aa', 'purge: batch ' || g, 'semantic', 'devai/global', 'soft_deleted', '2026-04-01 00:00+00'
  from generate_series(1, 5) g;
update public.memory_settings set value = 2 where name = 'purge_batch_size';
update public.memory_settings set value = 1 where name = 'purge_max_batches';
select is(memory_private.run_purge('2026-05-01 00:00+00'), '{"purged": 2, "batches": 1, "remaining": 3}'::jsonb,
          'batch size 2, one batch per run: 2 purged, 3 left for the next run');
select is(memory_private.run_purge('2026-05-01 00:00+00'), '{"purged": 2, "batches": 1, "remaining": 1}'::jsonb, 'next run: 2 more');
update public.memory_settings set value = 10 where name = 'purge_max_batches';
select is(memory_private.run_purge('2026-05-01 00:00+00'), '{"purged": 1, "batches": 1, "remaining": 0}'::jsonb, 'then the last one');
insert into public.devai_memories (owner_id, content, memory_type, namespace, state, purge_at)
select '25000000-0000-4000-8000-0000000000aa', 'purge: batch b' || g, 'semantic', 'devai/global', 'soft_deleted', '2026-04-01 00:00+00'
  from generate_series(1, 5) g;
select is(memory_private.run_purge('2026-05-01 00:00+00'), '{"purged": 5, "batches": 3, "remaining": 0}'::jsonb,
          'several batches of at most 2 in one run');
select is((select count(*) from public.memory_history where owner_id = '25000000-0000-4000-8000-0000000000aa' and event = 'PURGE'),
          12::bigint, 'one PURGE history row per purged memory');
select ok(not has_function_privilege('authenticated', 'memory_private.run_purge(timestamptz)', 'execute'), 'authenticated may not run purge');

-- the step form pg_cron calls every minute of its window: at most p_batches batches per call
insert into public.devai_memories (owner_id, content, memory_type, namespace, state, purge_at)
select '25000000-0000-4000-8000-0000000000aa', 'purge: step ' || g, 'semantic', 'devai/global', 'soft_deleted', '2026-04-01 00:00+00'
  from generate_series(1, 5) g;
select is(memory_private.run_purge_step(2, '2026-05-01 00:00+00'), '{"purged": 4, "batches": 2, "remaining": 1}'::jsonb,
          'run_purge_step(2): two batches of at most 2, the rest waits for the next call');
select is(memory_private.run_purge_step(2, '2026-05-01 00:00+00'), '{"purged": 1, "batches": 1, "remaining": 0}'::jsonb,
          'the next call purges the rest');
select is((select count(*) from public.memory_history
            where owner_id = '25000000-0000-4000-8000-0000000000aa' and event = 'PURGE' and old_content like 'purge: step %' and actor = 'cron:purge'),
          5::bigint, 'the step form writes one PURGE history row by cron:purge per purged memory');
select throws_ok($$select memory_private.run_purge_step(0)$$, '22023', null, 'p_batches must be at least 1');

select * from finish();
rollback;
