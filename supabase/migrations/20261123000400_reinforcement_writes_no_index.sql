-- Retrieval reinforces every memory it injects (access_count, last_accessed_at, strength,
-- base_strength). With last_accessed_at in an index, each of those updates was non-HOT: a new
-- entry in every index of the table, the HNSW graph included. reinforce_memories took ~9 ms for
-- 15 rows, half of memory-retrieve's server time (10k-memory tenant, scripts/retrieve-latency.ts).
-- No query needs this index: the TTL job walks the table by page ranges, and nothing else
-- filters or sorts on last_accessed_at. Without it, none of the reinforced columns is indexed, so
-- the updates are HOT (fillfactor 50 leaves the room) and write no index entry at all.
drop index if exists public.devai_memories_last_accessed;
