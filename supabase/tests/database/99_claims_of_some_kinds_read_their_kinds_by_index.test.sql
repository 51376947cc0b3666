-- A claim of some kinds only (a drain of one kind) reads those kinds' queued jobs through their own
-- index, a few entries a job claimed (migration 20261205200000, docs/operations.md#job-queue).
-- Before, it walked the fair order of every kind and filtered the kinds there: a rare kind queued
-- behind a backlog of others read the whole backlog at each claim (here 4 claims read 8,008 rows).
-- Counted as the rows of public.memory_jobs read.
begin;
select plan(5);

set local client_min_messages = warning;  -- the truncate names the tables it cascades to
truncate public.memory_jobs cascade;
analyze public.memory_jobs;

-- Claims of a kind on the empty queue (more than five: plans made and kept then).
select is((select count(*)::int from generate_series(1, 8) g,
                  lateral memory_private.claim_jobs('w-empty-' || g, 1, p_kinds => array['entity_backfill'])), 0,
          'claims of a kind on the empty queue find nothing');

-- A backlog of 2,000 dedup jobs of 20 tenants, then 3 entity passes and 2 embedding jobs.
insert into public.memory_jobs (owner_id, kind, idempotency_key)
select ('99300000-0000-4000-8000-' || lpad((g % 20)::text, 12, '0'))::uuid, 'dedup', 'k-' || g
  from generate_series(1, 2000) g;
insert into public.memory_jobs (owner_id, kind, idempotency_key)
select ('99300000-0000-4000-8000-' || lpad(g::text, 12, '0'))::uuid, 'entity_backfill', 'b-' || g
  from generate_series(1, 3) g;
insert into public.memory_jobs (owner_id, kind, idempotency_key)
select ('99300000-0000-4000-8000-' || lpad(g::text, 12, '0'))::uuid, 'embed', 'e-' || g
  from generate_series(1, 2) g;

select cmp_ok(tests.rows_read_by('public.memory_jobs', $$select memory_private.claim_jobs('w1', 1, p_kinds => array['entity_backfill'])
                                  from generate_series(1, 4)$$),
              '<=', 40::bigint,
              'four claims of a rare kind read its few jobs, not the backlog of others');
select is((select count(*)::int from public.memory_jobs where locked_by = 'w1' and kind = 'entity_backfill'), 3,
          'the claims got every job of that kind');

-- Two kinds (one named twice): three of them, none queued ahead of them in fair order (jobs
-- queued in one statement may share a key), nothing else.
create temp table taken as
select id, kind, fair_key
  from memory_private.claim_jobs('w2', 3, p_kinds => array['embed', 'dedup', 'embed']);
select results_eq(
  $$select count(*)::int, count(*) filter (where kind in ('embed', 'dedup'))::int from taken$$,
  $$values (3, 3)$$,
  'a claim of two kinds takes three jobs of them');
select is((select count(*)::int from public.memory_jobs q
            where q.kind in ('embed', 'dedup') and q.status = 'queued'
              and q.fair_key < (select max(fair_key) from taken)), 0,
          'no job of them queued ahead of what it took');
select * from finish();
rollback;
