-- enqueue_entity_backfill (devai-entity-backfill, every 10 minutes while memories wait for their
-- entity pass) finds the tenants of memory_private.entity_pass_pending one primary-key descent each
-- (migration 20261206400100, docs/graph.md#entities). Its `select distinct owner_id` read the whole
-- set at every run: 1,000,000 pending memories of 50 tenants took about 100 ms a run.
begin;
select plan(4);

delete from public.memory_jobs;  -- this test sees the queue alone (rolled back)
insert into memory_private.entity_pass_pending (owner_id, memory_id)
select ('99e10000-0000-4000-8000-00000000000' || (g % 3)::text)::uuid, gen_random_uuid()
  from generate_series(1, 6000) g;

select cmp_ok(tests.rows_read_by('memory_private.entity_pass_pending',
                'select memory_private.enqueue_entity_backfill()'),
              '<=', 10::bigint, 'a run reads a few rows of the set per tenant, not its 6,000 rows');
select results_eq($$select owner_id::text from public.memory_jobs where kind = 'entity_backfill' order by owner_id$$,
  $$values ('99e10000-0000-4000-8000-000000000000'), ('99e10000-0000-4000-8000-000000000001'),
           ('99e10000-0000-4000-8000-000000000002')$$,
  'one job for each tenant of the set');

analyze memory_private.entity_pass_pending;
select cmp_ok(tests.rows_read_by('memory_private.entity_pass_pending',
                'select memory_private.enqueue_entity_backfill(now() + interval ''1 second'')'),
              '<=', 10::bigint, 'so does a run once the statistics know the set''s size, queuing nothing again');
select is((select count(*)::int from public.memory_jobs where kind = 'entity_backfill'), 3,
  'none again while the tenants'' jobs are queued');

select * from finish();
rollback;
