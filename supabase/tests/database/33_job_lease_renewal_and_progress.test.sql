-- Lease renewal (the worker's heartbeat) and a job's recorded progress: only the worker that holds
-- a running job can renew its lease or record what its parts did; the progress merges into the
-- result and survives a failed attempt; the tenant roles can call neither.
begin;
select plan(9);

insert into public.memory_jobs (id, owner_id, kind, status, idempotency_key, attempts, locked_until, locked_by) values
  ('33000000-0000-4000-8000-000000000001', '33000000-0000-4000-8000-0000000000aa', 'extract', 'running', 'renew-1', 1, now() + interval '2 seconds', 'worker-a'),
  ('33000000-0000-4000-8000-000000000002', '33000000-0000-4000-8000-0000000000aa', 'extract', 'queued', 'renew-2', 0, null, null);

select ok(memory_private.renew_job_lease('33000000-0000-4000-8000-000000000001', 'worker-a', interval '20 seconds'),
          'the holder renews its lease');
select ok((select locked_until = now() + interval '20 seconds' from public.memory_jobs where id = '33000000-0000-4000-8000-000000000001'),
          'the lease now ends 20 s from now');
select ok(not memory_private.renew_job_lease('33000000-0000-4000-8000-000000000001', 'worker-b', interval '20 seconds'),
          'another worker cannot renew it');
select ok(not memory_private.renew_job_lease('33000000-0000-4000-8000-000000000002', 'worker-a', interval '20 seconds'),
          'a job that is not running has no lease to renew');

select ok(memory_private.record_job_progress('33000000-0000-4000-8000-000000000001', 'worker-a', '{"rules": {"status": "stored"}, "model": {"status": "pending"}}'),
          'the holder records progress');
select ok(memory_private.record_job_progress('33000000-0000-4000-8000-000000000001', 'worker-a', '{"model": {"status": "failed"}}'),
          'and records it again');
select memory_private.fail_job('33000000-0000-4000-8000-000000000001', 'worker-a', 'model part failed', true);
select is((select result from public.memory_jobs where id = '33000000-0000-4000-8000-000000000001'),
          '{"rules": {"status": "stored"}, "model": {"status": "failed"}}'::jsonb,
          'progress merges by top-level key and outlives the failed attempt');
select ok(not memory_private.record_job_progress('33000000-0000-4000-8000-000000000001', 'worker-a', '{"model": {"status": "done"}}'),
          'a worker that no longer holds the job records nothing');
select ok(not has_function_privilege('authenticated', 'memory_private.renew_job_lease(uuid, text, interval)', 'execute')
          and not has_function_privilege('authenticated', 'memory_private.record_job_progress(uuid, text, jsonb)', 'execute')
          and not has_function_privilege('anon', 'memory_private.record_job_progress(uuid, text, jsonb)', 'execute'),
          'tenants cannot renew leases or write job results');

select * from finish();
rollback;
