-- The HNSW index holds only the rows vector search can return: valid, active memories. The HNSW
-- path of match_memories filters on `m.is_valid and m.state = 'active'` literally, so the planner
-- proves this predicate and keeps using the index.
--
-- Why: is_valid and state are in the predicate of devai_memories_owner_namespace, so an update
-- that changes them (decay's invalidation below prune_threshold, TTL's soft-delete, dedup's
-- supersede and DELETE, forget) is never a HOT update, and every such new row version was also
-- inserted into the HNSW graph. On the 100k benchmark corpus a decay night with 23k invalidations
-- took 36 s, nearly all of it HNSW inserts of rows no search can return. Now a version that is not
-- valid and active gets no HNSW entry (Postgres only inserts into partial indexes whose predicate
-- the new version satisfies); a restore or un-forget adds the row back. Retrieval is unchanged.
--
-- Rebuilding the index takes about 30 s per 100k memories on 2 cores; writes to devai_memories
-- wait for it meanwhile (reads do not).
drop index public.devai_memories_embedding_hnsw;
create index devai_memories_embedding_hnsw on public.devai_memories
  using hnsw (embedding extensions.vector_cosine_ops) with (m = 16, ef_construction = 64)
  where is_valid and state = 'active';

comment on index public.devai_memories_embedding_hnsw is
  'HNSW cosine index (m=16, ef_construction=64) over valid, active memories only: the rows match_memories can return. See migration 20261123000500.';
