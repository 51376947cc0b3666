-- The stale job-lease sweeper: running jobs whose lease expired go back to queued (claimable
-- now), or to dead with 'lease expired' once attempts reach max_attempts; live leases and other
-- statuses are untouched.
begin;
set local timezone to 'UTC';
select plan(8);

insert into public.memory_jobs (id, owner_id, kind, status, idempotency_key, attempts, max_attempts, run_after, locked_until, locked_by) values
  ('26000000-0000-4000-8000-000000000001', '26000000-0000-4000-8000-0000000000aa', 'extract', 'running', 'sweep-1', 1, 5, '2026-05-01 00:00+00', '2026-05-01 00:04:59+00', 'worker-a'),
  ('26000000-0000-4000-8000-000000000002', '26000000-0000-4000-8000-0000000000aa', 'dedup', 'running', 'sweep-2', 5, 5, '2026-05-01 00:00+00', '2026-05-01 00:01+00', 'worker-b'),
  ('26000000-0000-4000-8000-000000000003', '26000000-0000-4000-8000-0000000000aa', 'extract', 'running', 'sweep-3', 1, 5, '2026-05-01 00:00+00', '2026-05-01 00:05:01+00', 'worker-c'),
  ('26000000-0000-4000-8000-000000000004', '26000000-0000-4000-8000-0000000000aa', 'extract', 'queued', 'sweep-4', 0, 5, '2026-05-01 00:00+00', null, null),
  ('26000000-0000-4000-8000-000000000005', '26000000-0000-4000-8000-0000000000aa', 'extract', 'done', 'sweep-5', 1, 5, '2026-05-01 00:00+00', '2026-05-01 00:01+00', null);

select is(memory_private.sweep_stale_job_leases('2026-05-01 00:05+00'), '{"dead": 1, "requeued": 1}'::jsonb,
          'one expired lease re-queued, one parked as dead');
select is((select (status, attempts, locked_by, locked_until, run_after, last_error) from public.memory_jobs where id = '26000000-0000-4000-8000-000000000001'),
          ('queued'::text, 1, null::text, null::timestamptz, '2026-05-01 00:05+00'::timestamptz, 'lease expired'::text),
          'expired lease with attempts left: queued, claimable now, attempts unchanged, lease cleared');
select is((select (status, locked_by, locked_until, last_error, finished_at) from public.memory_jobs where id = '26000000-0000-4000-8000-000000000002'),
          ('dead'::text, null::text, null::timestamptz, 'lease expired'::text, '2026-05-01 00:05+00'::timestamptz),
          'expired lease with attempts = max_attempts: dead, last_error lease expired');
select is((select (status, locked_by) from public.memory_jobs where id = '26000000-0000-4000-8000-000000000003'),
          ('running'::text, 'worker-c'::text), 'a live lease is untouched');
select is((select status from public.memory_jobs where id = '26000000-0000-4000-8000-000000000004'), 'queued', 'queued job untouched');
select is((select status from public.memory_jobs where id = '26000000-0000-4000-8000-000000000005'), 'done', 'done job untouched');
select is(memory_private.sweep_stale_job_leases('2026-05-01 00:05+00'), '{"dead": 0, "requeued": 0}'::jsonb, 're-running sweeps nothing');
select ok(not has_function_privilege('authenticated', 'memory_private.sweep_stale_job_leases(timestamptz)', 'execute'),
          'authenticated may not run the sweeper');

select * from finish();
rollback;
