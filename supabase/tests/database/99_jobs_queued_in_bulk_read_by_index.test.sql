-- Queueing many jobs in one statement reads the queue's indexes, a few entries a job, whatever the
-- statistics say (migration 20261204400000, docs/operations.md#job-queue). The fair_key trigger
-- reads the owner's last runnable queued job and the queue's head; planned while the statistics
-- said the queue was empty (autovacuum after the prune emptied it, or a new project), both were
-- sequential scans kept for the whole statement, each row reading every job queued before it: one
-- INSERT of 2,000 jobs read 3,998,000 rows, and 50,000 jobs in one statement took 456 s.
-- pg_cron's end_idle_sessions queues up to 5,000 consolidate jobs in one statement.
-- Counted here as the rows of public.memory_jobs the statements read.
begin;
select plan(5);

-- The queue as autovacuum leaves it once empty: no rows, statistics saying so (rolled back).
set local client_min_messages = warning;  -- the truncate names the tables it cascades to
truncate public.memory_jobs cascade;
analyze public.memory_jobs;

-- One tenant's burst of 2,000 (its last job found at the top of its index entries), then 2,000
-- tenants' one job each (no last job: the lookup must not walk the first tenant's jobs either).
select cmp_ok(tests.rows_read_by('public.memory_jobs', $$insert into public.memory_jobs (owner_id, kind, idempotency_key)
                                select '99100000-0000-4000-8000-0000000000aa', 'dedup', 'burst-' || g
                                  from generate_series(1, 2000) g$$),
              '<=', 3 * 2000::bigint,
              'a tenant''s 2,000 jobs queued in one statement read a few rows each (they read 3,998,000)');
select cmp_ok(tests.rows_read_by('public.memory_jobs', $$insert into public.memory_jobs (owner_id, kind, idempotency_key)
                                select ('99100000-0000-4000-8000-' || lpad(g::text, 12, '0'))::uuid, 'dedup', 'one'
                                  from generate_series(1, 2000) g$$),
              '<=', 3 * 2000::bigint,
              '2,000 tenants'' jobs queued in one statement read a few rows each');

-- The keys are the fair order's, as before: the burst a step apart from the head, each newcomer at the head.
select is((select count(distinct fair_key)::int from public.memory_jobs where owner_id = '99100000-0000-4000-8000-0000000000aa'),
          2000, 'each of the burst''s jobs has its own place');
select is((select max(fair_key) - min(fair_key) from public.memory_jobs where owner_id = '99100000-0000-4000-8000-0000000000aa'),
          1999 * make_interval(secs => public.memory_setting('job_fair_step_seconds')::double precision),
          'the burst''s jobs are a step apart');
select is((select count(*)::int from public.memory_jobs
            where idempotency_key = 'one' and fair_key = (select min(fair_key) from public.memory_jobs)),
          2000, 'each newcomer''s job starts at the head');

select * from finish();
rollback;
