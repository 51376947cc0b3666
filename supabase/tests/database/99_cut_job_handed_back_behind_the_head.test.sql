-- A job the drain's deadline cut after progress goes back in line behind the queue's head, as its
-- owner's next turn (migration 20261203600100, docs/operations.md#job-queue). Before, it kept its
-- old fair_key, the smallest in the queue: the next claim took it again, before the job another
-- tenant queued while it ran, and a job needing several drain windows kept a one-at-a-time worker
-- until it was done. Times are simulated by setting the keys (now() is the transaction's).
begin;
select plan(5);

delete from public.memory_jobs;  -- this test sees the queue alone (rolled back)

-- A's long job, claimed 100 s ago; A's next job; B's job, queued while A's long job ran.
insert into public.memory_jobs (owner_id, kind, idempotency_key)
values ('99d00000-0000-4000-8000-00000000000a', 'dedup', 'a-long'), ('99d00000-0000-4000-8000-00000000000a', 'dedup', 'a-next');
select is((select idempotency_key from memory_private.claim_jobs('w-99d', 1)), 'a-long', 'A''s long job is claimed first');
update public.memory_jobs set fair_key = now() - interval '100 seconds', result = '{"dedup": {"done": 1}}' where idempotency_key = 'a-long';
update public.memory_jobs set fair_key = now() - interval '30 seconds' where idempotency_key = 'a-next';
insert into public.memory_jobs (owner_id, kind, idempotency_key) values ('99d00000-0000-4000-8000-00000000000b', 'dedup', 'b-1');
update public.memory_jobs set fair_key = now() - interval '70 seconds' where idempotency_key = 'b-1';

select is(memory_private.hand_back_cut_job((select id from public.memory_jobs where idempotency_key = 'a-long'), 'w-99d',
                                           '{"dedup": {"done": 0}}', 'DrainCutError: cut'),
          'queued', 'cut after progress: handed back');

create temporary table claimed (n serial, key text);
insert into claimed (key) select idempotency_key from memory_private.claim_jobs('w-99d', 1);
insert into claimed (key) select idempotency_key from memory_private.claim_jobs('w-99d', 1);
insert into claimed (key) select idempotency_key from memory_private.claim_jobs('w-99d', 1);
select is((select key from claimed where n = 1), 'b-1',
          'B''s job, queued while A''s long job ran, is claimed before A''s job again (it came after it)');
select results_eq($$select key from claimed order by n$$, $$values ('b-1'::text), ('a-long'), ('a-next')$$,
                  'the handed back job is its owner''s next turn: its old key and a step (60 s), after the head');

-- Alone in the queue, a handed back job is claimed next.
update public.memory_jobs set result = '{"dedup": {"done": 2}}' where idempotency_key = 'a-long';
select memory_private.fail_job(id, 'w-99d', 'done with it', false) from public.memory_jobs where idempotency_key in ('b-1', 'a-next');
select is((select memory_private.hand_back_cut_job(id, 'w-99d', '{"dedup": {"done": 1}}', 'cut')
             from public.memory_jobs where idempotency_key = 'a-long')
          || ':' || (select idempotency_key from memory_private.claim_jobs('w-99d', 1)),
          'queued:a-long', 'with nothing else waiting it is claimed at once');

select * from finish();
rollback;
