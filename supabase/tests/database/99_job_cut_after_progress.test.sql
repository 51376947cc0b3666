-- A job the drain's deadline cut is handed back with its attempt given back only when its model
-- work advanced since its claim (migration 20261201300000, docs/operations.md#a-drains-deadline):
-- memory_private.job_progress reads that work from a job's result, hand_back_cut_job compares it.
begin;
select plan(12);

select is(memory_private.job_progress(null), memory_private.job_progress('{}'),
          'no result and an empty one: the same (no work yet)');
select is(memory_private.job_progress('{"model": {"status": "failed", "attempt": 3, "error": "cut"}, "provider_unavailable": {"times": 2}}'),
          memory_private.job_progress(null),
          'an attempt''s failure record and an outage''s are no progress');
select is(memory_private.job_progress('{"rules": {"status": "stored"}}'), memory_private.job_progress(null),
          'an extract job''s rules part (stored at its first claim) is no model work');
select isnt(memory_private.job_progress('{"dedup": {"done": 2}}'), memory_private.job_progress('{"dedup": {"done": 1}}'),
            'a candidate more applied is progress');
select isnt(memory_private.job_progress('{"model": {"status": "failed", "chunks": {"proposed": [[], []]}}}'),
            memory_private.job_progress('{"model": {"status": "running", "chunks": {"proposed": [[]]}}}'),
            'a chunk more answered is progress, whatever the model part''s status');
select isnt(memory_private.job_progress('{"consolidation_proposal": {}}'), memory_private.job_progress(null),
            'a consolidation''s proposal saved is progress');

insert into public.memory_jobs (id, owner_id, kind, status, idempotency_key, attempts, locked_by, locked_until, result) values
  ('99c00000-0000-4000-8000-000000000001', '99c00000-0000-4000-8000-0000000000aa', 'dedup', 'running', 'cut-1', 3, 'w', now() + interval '1 minute', '{"dedup": {"done": 2}}'),
  ('99c00000-0000-4000-8000-000000000002', '99c00000-0000-4000-8000-0000000000aa', 'dedup', 'running', 'cut-2', 3, 'w', now() + interval '1 minute', '{"dedup": {"done": 2}, "model": {"status": "failed"}}');

select is(memory_private.hand_back_cut_job('99c00000-0000-4000-8000-000000000001', 'w', '{"dedup": {"done": 1}}', 'DrainCutError: cut'),
          'queued', 'advanced since its claim: handed back');
select results_eq(
  $$select status, attempts, locked_by, run_after <= now(), last_error like 'cut by the drain''s deadline after progress%'
      from public.memory_jobs where id = '99c00000-0000-4000-8000-000000000001'$$,
  $$values ('queued', 2, null::text, true, true)$$,
  'queued again at once, its attempt given back, the lease let go');
select is(memory_private.hand_back_cut_job('99c00000-0000-4000-8000-000000000002', 'w', '{"dedup": {"done": 2}}', 'DrainCutError: cut'),
          'unchanged', 'no progress since its claim (a failure record is none): not handed back');
select is((select (status, attempts)::text from public.memory_jobs where id = '99c00000-0000-4000-8000-000000000002'),
          '(running,3)', 'left to the caller, which fails it as before');
select is(memory_private.hand_back_cut_job('99c00000-0000-4000-8000-000000000002', 'another worker', '{}', 'x'),
          null, 'a worker that does not hold the job changes nothing');
select ok(not has_function_privilege('authenticated', 'memory_private.hand_back_cut_job(uuid, text, jsonb, text)', 'execute'),
          'a tenant cannot call it');

select * from finish();
rollback;
