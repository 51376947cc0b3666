-- The entity pass of memories never linked (migration 20261129500000, docs/graph.md#entities):
-- memory_private.entity_pass_pending holds the memories whose pass is not done, and
-- memory_private.enqueue_entity_backfill, run every 10 minutes by devai-entity-backfill, queues one
-- entity_backfill job per tenant in it, none for a tenant whose job is queued or running, again
-- for one whose job died (an old worker kills a kind it does not know). The migration queues
-- nothing itself. Tenants neither read nor empty the set; the service role does, by its policies.
begin;
select plan(12);

select is((select count(*)::int from memory_private.entity_pass_pending), 0, 'a fresh install has no memory to pass');
select is((select count(*)::int from public.memory_jobs where kind = 'entity_backfill'), 0,
  'and the migration queued no entity_backfill job');
select results_eq($$select schedule, command from public.memory_maintenance_schedules where job_name = 'devai-entity-backfill'$$,
  $$values ('*/10 * * * *'::text, 'select memory_private.enqueue_entity_backfill()'::text)$$,
  'devai-entity-backfill queues the jobs every 10 minutes');
select is(memory_private.enqueue_entity_backfill(), 0, 'an empty set queues nothing');

delete from public.memory_jobs;  -- this test sees the queue alone (rolled back)
insert into memory_private.entity_pass_pending (owner_id, memory_id)
select '99e00000-0000-4000-8000-00000000000a'::uuid, gen_random_uuid() from generate_series(1, 3)
union all
select '99e00000-0000-4000-8000-00000000000b', gen_random_uuid();

select is(memory_private.enqueue_entity_backfill(), 2, 'one job for each tenant with memories to pass');
select results_eq($$select owner_id::text, status from public.memory_jobs where kind = 'entity_backfill' order by owner_id$$,
  $$values ('99e00000-0000-4000-8000-00000000000a', 'queued'), ('99e00000-0000-4000-8000-00000000000b', 'queued')$$,
  'queued for A and B');
select is(memory_private.enqueue_entity_backfill(now() + interval '1 second'), 0,
  'none again while a tenant''s job is queued (a job carries on with the next batch itself)');

update public.memory_jobs set status = 'dead', finished_at = now()
 where kind = 'entity_backfill' and owner_id = '99e00000-0000-4000-8000-00000000000b';
update public.memory_jobs set status = 'done', finished_at = now()
 where kind = 'entity_backfill' and owner_id = '99e00000-0000-4000-8000-00000000000a';
delete from memory_private.entity_pass_pending where owner_id = '99e00000-0000-4000-8000-00000000000a';
select is(memory_private.enqueue_entity_backfill(now() + interval '2 seconds'), 1,
  'a tenant whose job died is queued again; a tenant whose set is empty is not');

select is((select string_agg(p.cmd || ':' || array_to_string(p.roles, ','), ' ' order by p.cmd)
             from pg_catalog.pg_policies p
            where p.schemaname = 'memory_private' and p.tablename = 'entity_pass_pending'),
  'DELETE:service_role SELECT:service_role',
  'the service role reads and empties the set by policies of its own (20261122001000''s convention)');

select tests.authenticate_as('99e00000-0000-4000-8000-00000000000b');
select throws_ok($$select count(*) from memory_private.entity_pass_pending$$, '42501', null,
  'a tenant cannot read the set');
select throws_ok($$delete from memory_private.entity_pass_pending$$, '42501', null, 'nor empty it');
select throws_ok($$select memory_private.enqueue_entity_backfill()$$, '42501', null, 'nor queue the jobs');

select * from finish();
rollback;
