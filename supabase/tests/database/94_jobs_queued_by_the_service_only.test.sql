-- Jobs are queued by the service only (migration 20261128960000, docs/operations.md#job-queue):
-- signed in, a tenant reads its own jobs (GET memory-extract?job_id=) but cannot insert, update or
-- delete any, its own included: through PostgREST it queued unlimited jobs past the routes' rate
-- limits, each spending the operator's model budget. The service queues them with
-- memory_private.enqueue_job, in the tenant's transaction as its own role with the tenant's claims
-- (jobs.ts asService): then only for that tenant. Fixtures are written as the table owner.
begin;
select plan(17);

insert into public.memory_jobs (id, owner_id, kind, idempotency_key) values
  ('97100000-0000-4000-8000-0000000000a1', '97000000-0000-4000-8000-00000000000a', 'dedup', 'a-1'),
  ('97100000-0000-4000-8000-0000000000b1', '97000000-0000-4000-8000-00000000000b', 'dedup', 'b-1');

-- No grant lets a tenant or anon write memory_jobs; the policy that let owners insert is gone.
select is_empty($$select r, p from unnest(array['authenticated', 'anon']) r, unnest(array['insert', 'update', 'delete']) p
                   where has_table_privilege(r, 'public.memory_jobs', p)
                      or case when p = 'delete' then false else has_any_column_privilege(r, 'public.memory_jobs', p) end$$,
  'authenticated and anon hold no insert, update or delete on memory_jobs');
select is_empty($$select policyname from pg_policies where schemaname = 'public' and tablename = 'memory_jobs' and cmd <> 'SELECT'$$,
  'memory_jobs has no policy but reading');
select is_empty($$select p.oid::regprocedure from pg_proc p join pg_namespace n on n.oid = p.pronamespace
                   where n.nspname = 'public' and p.prosrc ~* 'insert\s+into\s+public\.memory_jobs'$$,
  'no function tenants can call over PostgREST (schema public) queues jobs');

select tests.authenticate_as('97000000-0000-4000-8000-00000000000a');
select throws_ok($$insert into public.memory_jobs (owner_id, kind, idempotency_key) values ('97000000-0000-4000-8000-00000000000a', 'extract', 'mine')$$,
  '42501', 'permission denied for table memory_jobs', 'a tenant cannot insert a job of its own');
select throws_ok($$update public.memory_jobs set run_after = now() - interval '1 day' where id = '97100000-0000-4000-8000-0000000000a1'$$,
  '42501', 'permission denied for table memory_jobs', 'nor move its job up the queue');
select throws_ok($$delete from public.memory_jobs where id = '97100000-0000-4000-8000-0000000000a1'$$,
  '42501', 'permission denied for table memory_jobs', 'nor delete its job');
select results_eq($$select id from public.memory_jobs$$, $$values ('97100000-0000-4000-8000-0000000000a1'::uuid)$$,
  'it reads its own jobs, and only those');
select throws_ok($$select * from memory_private.enqueue_job('97000000-0000-4000-8000-00000000000a', 'extract', 'mine', '{}')$$,
  '42501', null, 'it cannot call the service''s enqueue_job');

-- The service acting for A: A's claims, the service's role (asService).
select set_config('role', 'none', true);
select results_eq($$select status, deduplicated from memory_private.enqueue_job('97000000-0000-4000-8000-00000000000a', 'extract', 'k-1', '{"x": 1}')$$,
  $$values ('queued'::text, false)$$, 'the service queues a job for the tenant whose transaction it is');
select results_eq($$select id, deduplicated from memory_private.enqueue_job('97000000-0000-4000-8000-00000000000a', 'extract', 'k-1', '{"x": 2}')$$,
  $$select id, true from public.memory_jobs where idempotency_key = 'k-1'$$, 'the same key again: the job queued before, deduplicated');
select results_eq($$select payload from public.memory_jobs where idempotency_key = 'k-1'$$, $$values ('{"x": 1}'::jsonb)$$,
  'and the first payload is kept');
select throws_ok($$select * from memory_private.enqueue_job('97000000-0000-4000-8000-00000000000b', 'extract', 'planted', '{}')$$,
  '42501', 'a tenant queues its own jobs only', 'acting for A, it cannot queue a job for B');
select throws_ok($$select * from memory_private.enqueue_job('97000000-0000-4000-8000-00000000000a', 'vector_index', 'mine', '{"action": "build"}')$$,
  '42501', null, 'nor an index build for A (the hourly job queues those)');

-- No claims (the worker, a cron job): any tenant.
select tests.clear_authentication();
select results_eq($$select status, deduplicated from memory_private.enqueue_job('97000000-0000-4000-8000-00000000000b', 'dedup', 'b-2')$$,
  $$values ('queued'::text, false)$$, 'without a tenant in the claims, the service queues for any tenant');
select is((select count(*)::int from public.memory_jobs where owner_id = '97000000-0000-4000-8000-00000000000b'), 2,
  'B has its fixture and that job, nothing planted by A');

select tests.as_anon();
select throws_ok($$select * from public.memory_jobs$$, '42501', 'permission denied for table memory_jobs', 'anon cannot read jobs');
select throws_ok($$insert into public.memory_jobs (owner_id, kind, idempotency_key) values ('97000000-0000-4000-8000-00000000000a', 'extract', 'anon')$$,
  '42501', 'permission denied for table memory_jobs', 'nor insert one');

select * from finish();
rollback;
