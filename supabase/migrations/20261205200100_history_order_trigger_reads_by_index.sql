-- The history's write-order trigger reads the memory's last history row through its index whatever
-- the statistics say (docs/operations.md#job-queue, "plans kept from an empty table"), as the job
-- queue's fair-key trigger does since 20261204400000.
--
-- memory_private.history_ts_in_write_order (BEFORE INSERT on memory_history, one row at a time)
-- looks up the memory's latest history row. After its first five rows a session keeps a generic
-- plan for that lookup; made while the statistics said memory_history was empty (a new project, or
-- before autovacuum's first ANALYZE), it was a sequential scan and a sort, kept until the next
-- ANALYZE: each history row read every row written before it. One INSERT of 4,000 memories read
-- 7,998,000 history rows (1.7 s; 1,000 memories 499,500), and invalidating 800 of them 3,519,600
-- (pgTAP 99_history_written_in_bulk_read_by_index). Now the lookup stays on
-- memory_history_memory_ts_id: the function runs with sequential scans and sorts disabled. Its
-- body is unchanged.
alter function memory_private.history_ts_in_write_order() set enable_seqscan = off;
alter function memory_private.history_ts_in_write_order() set enable_sort = off;
