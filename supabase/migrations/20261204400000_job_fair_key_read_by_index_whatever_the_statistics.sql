-- A job's fair_key is read from the queue's indexes however many jobs one statement queues and
-- whatever the statistics say (docs/operations.md#job-queue).
--
-- assign_job_fair_key (BEFORE INSERT, each row) reads two rows: the owner's last runnable queued
-- job (memory_jobs_owner_queued) and the queue's head (job_queue_head, memory_jobs_fair_claimable).
-- Both statements were planned from the statistics, and once the queue had been empty when autovacuum
-- or ANALYZE looked (reltuples 0, relpages 0: the prune emptied it, or a new project) the planner
-- took a sequential scan and a sort as the cheapest way to read an empty table, and kept it:
-- job_queue_head, a SQL function without parameters, is planned once per statement (its plan made
-- at the first row, when the table is empty), and the trigger's lookup of the owner switched to a
-- generic plan at the sixth row, made when the table held five rows (and kept by the connection
-- until the table's statistics change). Every row then read every job queued before it, twice: one
-- INSERT of 2,000 jobs read 3,998,000 rows (pgTAP 99_jobs_queued_in_bulk_read_by_index); 50,000
-- jobs in one statement took 456 s, 10,000 17 s, 5,000 3.5 s, 2,000 0.4 s. What queues jobs in
-- bulk: pg_cron's end_idle_sessions (up to 5,000 sessions ended a run, one consolidate job each:
-- 2.5 s for 5,000, 0.2 s for 1,250) and the nightly enqueue functions (a job per tenant).
--
-- Now both functions run with sequential scans and sorts disabled (set on the function, so for their
-- own statements only, the functions themselves unchanged): the only plans left are the ordered
-- index scans, one or two index entries deep, whatever the table's statistics. Nothing else
-- changes: the same keys, the same plans on a table the statistics describe.

alter function memory_private.job_queue_head() set enable_seqscan = off;
alter function memory_private.job_queue_head() set enable_sort = off;
alter function memory_private.assign_job_fair_key() set enable_seqscan = off;
alter function memory_private.assign_job_fair_key() set enable_sort = off;
