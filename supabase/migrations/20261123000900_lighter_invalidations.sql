-- Cheaper invalidations and soft-deletes (decay below the threshold, TTL, forget, supersede).
-- Such an update changes is_valid or state, which are in partial-index predicates, so it is never
-- HOT: the new row version goes into every index whose predicate it satisfies, and the history
-- trigger writes a row. On the 1M benchmark corpus's first decay night (830k decayed, 229k
-- invalidated: a year of idle time meeting the job at once) a profile of the 108 s run showed
-- index inserts (~21%), and 15% in parsing and planning the body of history_snapshot once per row.
--
-- 1. history_snapshot becomes plpgsql. As a SQL function with a SET clause it is never inlined,
--    and a SQL function's parsed body is cached only for one execution of the calling statement:
--    the trigger's INSERT into memory_history is a new execution for every row, so the body was
--    parsed, analysed and planned again for every history row. plpgsql compiles it once per session.
-- 2. Three indexes cover only the rows their queries can ask for, so an invalidated or
--    soft-deleted version adds no entry to them:
--    * devai_memories_owner_hash (exact-duplicate check): both queries that use it (remember in
--      the memory function, the dedup worker) ask for valid, active rows only;
--    * devai_memories_fts: no query reads it yet; hybrid search, when it comes, searches what
--      retrieval can return, like the HNSW index (20261123000500);
--    * devai_memories_superseded_by: only rows that have a superseded_by are ever looked up by
--      it (the foreign key's ON DELETE SET NULL looks up superseded_by = the purged id).
--    Rebuilding them takes seconds per 100k memories; writes wait meanwhile, reads do not.

-- The memory's own fields a history row keeps (without the embedding), so the audit log and an
-- export still have the content after a purge. Same result as 20261122000300's SQL version.
create or replace function memory_private.history_snapshot(m public.devai_memories)
returns jsonb
language plpgsql
immutable
set search_path = ''
as $$
begin
  return jsonb_build_object(
    'namespace', m.namespace, 'memory_type', m.memory_type, 'priority', m.priority,
    'source', m.source, 'importance', m.importance, 'pinned', m.pinned, 'state', m.state,
    'is_valid', m.is_valid, 'strength', m.strength, 'session_id', m.session_id,
    'superseded_by', m.superseded_by, 'metadata', m.metadata, 'created_at', m.created_at);
end;
$$;

drop index public.devai_memories_owner_hash;
create index devai_memories_owner_hash on public.devai_memories (owner_id, content_hash)
  where is_valid and state = 'active';

drop index public.devai_memories_fts;
create index devai_memories_fts on public.devai_memories using gin (fts)
  where is_valid and state = 'active';

drop index public.devai_memories_superseded_by;
create index devai_memories_superseded_by on public.devai_memories (superseded_by, owner_id)
  where superseded_by is not null;
