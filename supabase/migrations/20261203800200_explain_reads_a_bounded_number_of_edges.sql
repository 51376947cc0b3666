-- Explain (GET memory/{id}/explain) reads at most a bounded number of a memory's edges.
--
-- Its relations were every edge of the memory, sorted to keep the newest 100, and its source
-- episodes every derived_from edge, joined to their episodes and sorted to keep 50: a fact
-- re-derived by many sessions (or a hub many memories link to) cost explain all of its edges
-- however few it showed. source.derived_from was taken from those newest 100 relations, so it
-- was empty once 100 newer edges of other types stood before the derived_from ones, while
-- source.episodes listed them.
--
-- These indexes let explain read, per direction, the newest 100 edges in order and stop, and the
-- first 50 derived_from edges a fact got (memory_relations_derived_from, only those edges). The
-- reads are in supabase/functions/_shared/memories/explain.ts and provenance.ts.
-- docs/graph.md#explain.

create index if not exists memory_relations_from_created
  on public.memory_relations (from_id, created_at desc, id desc);
create index if not exists memory_relations_to_created
  on public.memory_relations (to_id, created_at desc, id desc);
create index if not exists memory_relations_derived_from
  on public.memory_relations (from_id, created_at, id) where relation_type = 'derived_from';
