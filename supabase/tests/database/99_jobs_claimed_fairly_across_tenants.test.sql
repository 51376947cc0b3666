-- The queue is fair across tenants (migration 20261128960000, docs/operations.md#job-queue): one
-- tenant's burst does not make another tenant's job wait behind all of it. Before, claim_jobs went
-- first in, first out: B's one job queued after A's 200 was claimed 201st. Now each job gets a
-- fair_key when queued (its owner's jobs a step apart), and the claim takes the smallest: B's job
-- comes within the first two. An owner's jobs still come in the order they were queued; a retry
-- waits for its backoff and then keeps its place; an expired lease is claimed again; a job queued
-- for later does not push its owner's other jobs back. Jobs are queued as the service queues them.
begin;
select plan(11);

delete from public.memory_jobs;  -- this test sees the queue alone (rolled back)

-- A queues 200 (one statement: the trigger sees the rows queued before in it), then B queues one.
insert into public.memory_jobs (owner_id, kind, idempotency_key)
select '98000000-0000-4000-8000-00000000000a', 'dedup', 'a-' || lpad(g::text, 3, '0') from generate_series(1, 200) g;
insert into public.memory_jobs (owner_id, kind, idempotency_key) values ('98000000-0000-4000-8000-00000000000b', 'dedup', 'b-1');

select is((select count(distinct fair_key)::int from public.memory_jobs where owner_id = '98000000-0000-4000-8000-00000000000a'), 200,
  'each of A''s jobs has its own place in the fair order');

create temporary table claimed (n serial, owner_id uuid, key text, attempts integer);
do $$
declare
  r public.memory_jobs;
begin
  for i in 1 .. 3 loop
    select * into r from memory_private.claim_jobs('w-98', 1);
    insert into claimed (owner_id, key, attempts) values (r.owner_id, r.idempotency_key, r.attempts);
  end loop;
end;
$$;
select cmp_ok((select min(n) from claimed where owner_id = '98000000-0000-4000-8000-00000000000b'), '<=', 2,
  'B''s one job queued after A''s 200 is claimed within the first two claims (it was the 201st)');
select results_eq($$select key from claimed where owner_id = '98000000-0000-4000-8000-00000000000a' order by n$$,
  $$values ('a-001'), ('a-002')$$, 'A''s jobs are claimed in the order A queued them');

-- A retry waits for its backoff, then keeps its place ahead of A's later jobs.
select is(memory_private.fail_job((select id from public.memory_jobs where idempotency_key = 'a-001'), 'w-98', 'model down'), 'queued',
  'a failed attempt goes back to the queue with a backoff');
select is((select idempotency_key from memory_private.claim_jobs('w-98', 1)), 'a-003',
  'while it backs off, A''s next job is claimed');
update public.memory_jobs set run_after = now() - interval '1 second' where idempotency_key = 'a-001';  -- the backoff has passed
select results_eq($$select idempotency_key, attempts from memory_private.claim_jobs('w-98', 1)$$, $$values ('a-001'::text, 2)$$,
  'after it, the retry is claimed before A''s later jobs');

-- An expired lease (its worker died) is claimed again, in its place, its attempt counted.
update public.memory_jobs set locked_until = now() - interval '1 second' where idempotency_key = 'a-002';
select results_eq($$select idempotency_key, attempts, locked_by from memory_private.claim_jobs('w-98b', 1)$$,
  $$values ('a-002'::text, 2, 'w-98b'::text)$$, 'an expired lease is claimed by the next worker, its attempt counted');

-- C: a job queued for tomorrow (tonight's staggered consolidation, say) does not push C's next one back.
insert into public.memory_jobs (owner_id, kind, idempotency_key, run_after)
values ('98000000-0000-4000-8000-00000000000c', 'nightly_consolidation', 'c-later', now() + interval '1 day');
insert into public.memory_jobs (owner_id, kind, idempotency_key) values ('98000000-0000-4000-8000-00000000000c', 'dedup', 'c-now');
select results_eq($$select idempotency_key, fair_key = run_after from public.memory_jobs where owner_id = '98000000-0000-4000-8000-00000000000c' order by fair_key$$,
  $$values ('c-now'::text, true), ('c-later', true)$$, 'a job queued for later waits in its own time; the owner''s job queued now is not behind it');
select is((select idempotency_key from memory_private.claim_jobs('w-98', 1)), 'c-now',
  'C''s job queued now is claimed next, ahead of the rest of A''s burst');

-- The key is the trigger's, whatever the insert says.
insert into public.memory_jobs (owner_id, kind, idempotency_key, fair_key)
values ('98000000-0000-4000-8000-00000000000d', 'dedup', 'd-early', now() - interval '1 year');
select is((select fair_key from public.memory_jobs where idempotency_key = 'd-early'), now(),
  'a fair_key given at insert is replaced: no job jumps the queue');

-- Overload: the worker has fallen a day behind the keys (A's backlog overdue). A tenant with nothing
-- queued starts at the queue's head, not at now() behind every overdue job (it was claimed last).
update public.memory_jobs set fair_key = fair_key - interval '1 day' where owner_id = '98000000-0000-4000-8000-00000000000a' and status = 'queued';
insert into public.memory_jobs (owner_id, kind, idempotency_key) values ('98000000-0000-4000-8000-00000000000e', 'dedup', 'e-1');
create temporary table claimed_late (n serial, key text);
insert into claimed_late (key) select (memory_private.claim_jobs('w-98', 1)).idempotency_key from generate_series(1, 2);
select ok(exists (select from claimed_late where key = 'e-1'),
  'with the worker a day behind, a newcomer''s job is claimed within the next two (it waited behind all of A''s overdue jobs)');

select * from finish();
rollback;
