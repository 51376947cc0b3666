-- A job the drain's deadline cut after progress goes back in line behind the queue's head, as its
-- owner's next turn (migration 20261203600100, docs/operations.md#job-queue). Before, it kept its
-- old fair_key, the smallest in the queue: the next claim took it again, before the job another
-- tenant queued while it ran, and a job needing several drain windows kept a one-at-a-time worker
-- until it was done. Times are simulated by setting the keys (now() is the transaction's).
begin;
select plan(6);

delete from public.memory_jobs;  -- this test sees the queue alone (rolled back)

-- A's long job, claimed 100 s ago; A's next job; B's and C's jobs, queued while A's long job ran
-- (C's after the head, B's, and before A's long job's next turn: its old key and a step).
insert into public.memory_jobs (owner_id, kind, idempotency_key)
values ('99d00000-0000-4000-8000-00000000000a', 'dedup', 'a-long'), ('99d00000-0000-4000-8000-00000000000a', 'dedup', 'a-next');
select is((select idempotency_key from memory_private.claim_jobs('w-99d', 1)), 'a-long', 'A''s long job is claimed first');
update public.memory_jobs set fair_key = now() - interval '100 seconds', result = '{"dedup": {"done": 1}}' where idempotency_key = 'a-long';
update public.memory_jobs set fair_key = now() - interval '30 seconds' where idempotency_key = 'a-next';
insert into public.memory_jobs (owner_id, kind, idempotency_key) values ('99d00000-0000-4000-8000-00000000000b', 'dedup', 'b-1');
update public.memory_jobs set fair_key = now() - interval '70 seconds' where idempotency_key = 'b-1';
insert into public.memory_jobs (owner_id, kind, idempotency_key) values ('99d00000-0000-4000-8000-00000000000c', 'dedup', 'c-1');
update public.memory_jobs set fair_key = now() - interval '50 seconds' where idempotency_key = 'c-1';

select is(memory_private.hand_back_cut_job((select id from public.memory_jobs where idempotency_key = 'a-long'), 'w-99d',
                                           '{"dedup": {"done": 0}}', 'DrainCutError: cut'),
          'queued', 'cut after progress: handed back');

create temporary table claimed (n serial, key text);
insert into claimed (key) select idempotency_key from memory_private.claim_jobs('w-99d', 1);
insert into claimed (key) select idempotency_key from memory_private.claim_jobs('w-99d', 1);
insert into claimed (key) select idempotency_key from memory_private.claim_jobs('w-99d', 1);
insert into claimed (key) select idempotency_key from memory_private.claim_jobs('w-99d', 1);
select is((select key from claimed where n = 1), 'b-1',
          'B''s job, queued while A''s long job ran, is claimed before A''s job again (it came after it)');
select results_eq($$select key from claimed order by n$$, $$values ('b-1'::text), ('c-1'), ('a-long'), ('a-next')$$,
                  'the handed back job is its owner''s next turn: its old key and a step (60 s), after the head '
                  || '(just after the head, it would come before C''s job; at the back, after A''s next)');

-- Keyed long ago (it waited through many windows), its old key and a step would still be the
-- smallest: it goes just behind the head, B's next job.
insert into public.memory_jobs (owner_id, kind, idempotency_key) values ('99d00000-0000-4000-8000-00000000000b', 'dedup', 'b-2');
update public.memory_jobs set fair_key = now() - interval '70 seconds' where idempotency_key = 'b-2';
update public.memory_jobs set fair_key = now() - interval '1000 seconds', result = '{"dedup": {"done": 2}}'
 where idempotency_key = 'a-long';
select is((select memory_private.hand_back_cut_job(id, 'w-99d', '{"dedup": {"done": 1}}', 'cut')
             from public.memory_jobs where idempotency_key = 'a-long')
          || ':' || (select idempotency_key from memory_private.claim_jobs('w-99d', 1)),
          'queued:b-2', 'a job keyed long ago is handed back behind the head, not before it');

-- Alone in the queue, a handed back job is claimed next.
select memory_private.fail_job(id, 'w-99d', 'done with it', false) from public.memory_jobs where idempotency_key in ('b-1', 'b-2', 'c-1', 'a-next');
select count(*) from memory_private.claim_jobs('w-99d', 1);  -- A's long job again
update public.memory_jobs set result = '{"dedup": {"done": 3}}' where idempotency_key = 'a-long';
select is((select memory_private.hand_back_cut_job(id, 'w-99d', '{"dedup": {"done": 2}}', 'cut')
             from public.memory_jobs where idempotency_key = 'a-long')
          || ':' || (select idempotency_key from memory_private.claim_jobs('w-99d', 1)),
          'queued:a-long', 'with nothing else waiting it is claimed at once');

select * from finish();
rollback;
