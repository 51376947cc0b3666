-- The export reads a tenant's relations and history a page at a time in creation order (keyset on
-- created_at or ts, then id: supabase/functions/_shared/services/memory-export.ts).
--
-- * Relations had no index by owner and time but the one of contradictions: each page sorted all
--   of the tenant's relations, so an export's work grew with the square of their number.
-- * History had (owner_id, ts desc) without the id: a page could seek to its timestamp but then
--   re-read and re-sort every row sharing it, and a bulk job writes thousands of history rows with
--   one ts (its transaction's now()). A review measured 9.5 s for a tenant with 120k history rows
--   in two timestamps, 1.2 s with (owner_id, ts, id). That index replaces the old one: read
--   backwards it gives the newest-first order the old one was made for.
create index if not exists memory_relations_owner_created
  on public.memory_relations (owner_id, created_at, id);
create index if not exists memory_history_owner_ts_id
  on public.memory_history (owner_id, ts, id);
drop index if exists public.memory_history_owner_ts;
