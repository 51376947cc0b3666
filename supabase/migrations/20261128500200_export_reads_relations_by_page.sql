-- The export reads a tenant's relations a page at a time in creation order (keyset on created_at,
-- id: supabase/functions/_shared/services/memory-export.ts). Without an index in that order each
-- page sorted all of the tenant's relations, so an export's work grew with the square of their
-- number. Memories have (owner_id, created_at desc, id desc) and history (owner_id, ts desc), read
-- backwards; relations had no index by owner and time but the one of contradictions.
create index if not exists memory_relations_owner_created
  on public.memory_relations (owner_id, created_at, id);
