-- The keyword index (devai_memories_fts_scoped) and the entity alias index were GIN indexes with
-- fastupdate on, Postgres's default: a new entry goes to the index's pending list, and every search
-- reads the whole pending list before the index proper, once per query term. A memory gets a new
-- entry whenever it is written outside a HOT update, and the write-behind's reinforcements are a
-- third of those between two VACUUMs. After the bench's handler suite at 100k
-- (docs/operations.md#write-behind-reinforcement-and-search-events) the pending list held 851
-- entries on 39 pages, read for each of a search's dozen terms: a 121-memory tenant's hybrid search
-- took 9.2 ms p50 in SQL, 5.9 ms with the list merged and fastupdate off, against 4.6 ms for
-- Supabase's recipe on the same rows. Searches run far more often than writes, so a write now
-- merges its entries into the index at once (a fraction of a millisecond per memory written).
alter index public.devai_memories_fts_scoped set (fastupdate = off);
alter index public.memory_entities_alias_keys set (fastupdate = off);
-- What the pending lists hold now goes into the indexes (otherwise it stays until VACUUM).
select pg_catalog.gin_clean_pending_list('public.devai_memories_fts_scoped'::regclass);
select pg_catalog.gin_clean_pending_list('public.memory_entities_alias_keys'::regclass);
