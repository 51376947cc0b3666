-- A job whose pass waited for its tenant's heavy turn until the drain's cut is queued again at once,
-- its attempt given back and its result kept, behind the queue's head (migration 20261208200000,
-- docs/operations.md#heavy-requests-take-turns); only the worker that holds it can hand it back.
begin;
select plan(6);

delete from public.memory_jobs;  -- this test sees the queue alone (rolled back)

insert into public.memory_jobs (owner_id, kind, idempotency_key)
values ('99e00000-0000-4000-8000-00000000000a', 'extract', 'a-waits'), ('99e00000-0000-4000-8000-00000000000b', 'dedup', 'b-1');
update public.memory_jobs set fair_key = now() - interval '100 seconds' where idempotency_key = 'a-waits';
update public.memory_jobs set fair_key = now() - interval '50 seconds' where idempotency_key = 'b-1';
select is((select idempotency_key from memory_private.claim_jobs('w-99e', 1)), 'a-waits', 'A''s job is claimed first');
update public.memory_jobs set result = '{"rules": {"status": "stored"}}' where idempotency_key = 'a-waits';

select ok(not has_function_privilege('authenticated', 'memory_private.hand_back_unrun_job(uuid, text, text)', 'execute'),
          'tenants cannot hand a job back');
select is(memory_private.hand_back_unrun_job((select id from public.memory_jobs where idempotency_key = 'a-waits'),
                                             'another-worker', 'TurnCutError: waited'),
          null, 'a worker that does not hold the job cannot hand it back');
select is(memory_private.hand_back_unrun_job((select id from public.memory_jobs where idempotency_key = 'a-waits'),
                                             'w-99e', 'TurnCutError: waited 100000 ms'),
          'queued', 'the worker that holds it hands it back');
select results_eq(
  $$select status, attempts, result, locked_by, run_after <= now(), last_error like 'waited for a heavy turn%'
      from public.memory_jobs where idempotency_key = 'a-waits'$$,
  $$values ('queued'::text, 0, '{"rules": {"status": "stored"}}'::jsonb, null::text, true, true)$$,
  'queued at once, its attempt given back, its result kept, its lease released, the wait said');
select is((select idempotency_key from memory_private.claim_jobs('w-99e', 1)), 'b-1',
          'B''s job, behind it before, is claimed next: A''s goes behind the head');

select * from finish();
rollback;
