-- A worker's claim reads the queue's indexes, a few entries a job claimed, whatever the statistics
-- say (migration 20261204450000, docs/operations.md#job-queue). claim_jobs' statements were planned
-- from the statistics: in a connection that had claimed while the queue was empty (autovacuum after
-- the prune emptied it, or a new project), its plans were sequential scans and a sort, kept by the
-- connection until the statistics changed (about a minute, at autovacuum's next ANALYZE), each
-- update a nested loop over every job: with 2,000 jobs, 10 claims read 80,079,955 rows; with 20,000
-- one claim had not ended after 23 minutes. Counted as the rows of public.memory_jobs read.
begin;
select plan(4);

set local client_min_messages = warning;  -- the truncate names the tables it cascades to
truncate public.memory_jobs cascade;
analyze public.memory_jobs;

-- Claims on the empty queue (more than five: the function's generic plans are made and kept).
select is((select count(*)::int from generate_series(1, 8) g, lateral memory_private.claim_jobs('w-empty-' || g, 1)), 0,
          'claims on the empty queue find nothing (their plans made then)');

-- A backlog of 2,000 jobs of 20 tenants, 10 of them already running on expired leases.
insert into public.memory_jobs (owner_id, kind, idempotency_key)
select ('99200000-0000-4000-8000-' || lpad((g % 20)::text, 12, '0'))::uuid, 'dedup', 'k-' || g
  from generate_series(1, 2000) g;
update public.memory_jobs set status = 'running', locked_by = 'gone', attempts = 1,
                              locked_until = now() - interval '1 minute'
 where id in (select id from public.memory_jobs order by fair_key limit 10);

select cmp_ok(tests.rows_read_by('public.memory_jobs', $$select memory_private.claim_jobs('w1', 10) from generate_series(1, 10)$$),
              '<=', 400::bigint,
              'ten claims of ten jobs read a few rows a job, not the backlog');
select cmp_ok(tests.rows_read_by('public.memory_jobs', $$select memory_private.claim_jobs('w2', 5, p_owner => '99200000-0000-4000-8000-000000000007')
                                  from generate_series(1, 4)$$),
              '<=', 100::bigint,
              'a tenant''s claims read its own queued jobs, not the backlog');
select is((select count(*)::int from public.memory_jobs where locked_by in ('w1', 'w2')), 120,
          'every claim got its jobs (the 10 expired leases included)');

select * from finish();
rollback;
