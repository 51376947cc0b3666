-- A tenant's export copies one at a time across servers, as on one server (docs/operations.md#exports).
--
-- One server runs one export a tenant (429 export_running, db-snapshot.ts); two servers did not
-- know of each other. Two exports of one tenant begun at once on two servers, while an earlier copy
-- of the tenant was still there (an export being read, or one whose server went away), met in
-- memory_export_begin's delete of that copy: the first deleted it and copied for up to its bound
-- (150 s) holding the deleted rows' locks; the second's delete waited for them, then failed, its
-- REPEATABLE READ snapshot older than the first's commit (40001), or past its statement timeout
-- (57014): a 503 "the database is unavailable" after up to 15 s of waiting. Now the copy's
-- transaction holds a transaction-level advisory lock on the tenant, taken before the delete and
-- without waiting: a second copy of the tenant, on any server, is refused at once (55P03, which
-- the export answers 429 export_running, as one server does) and copies nothing.

-- Begins the caller's export p_export: refuses it while another copy of the caller's is being made
-- (55P03: services/memory-export.ts answers 429 export_running), deletes the caller's earlier copies
-- (a tenant keeps one copy at most), and counts the rows of each of p_parts the copy will hold (the
-- Markdown export writes memories only; memories are always counted), as of the transaction's
-- snapshot. Returns them with export_rows_max and export_copy_chunk_rows; the export refuses a
-- tenant over the bound and copies nothing, else copies each part with memory_export_copy. Called
-- by the export as the tenant, first in the copy's REPEATABLE READ transaction, whose advisory lock
-- on the tenant lasts until it commits; security definer because the copy is no table of the
-- tenant's (every row counted is the caller's). The memory service's only (a write:
-- docs/auth.md#data-api).
create or replace function public.memory_export_begin(p_export uuid, p_parts text[] default array['memories', 'relations', 'history'])
returns table (memories integer, relations integer, history integer, rows_max integer, chunk_rows integer)
language plpgsql
volatile
security definer
set search_path = ''
as $$
#variable_conflict use_column
declare
  v_owner uuid := auth.uid();
begin
  if v_owner is null then
    raise exception 'an export needs a signed-in tenant' using errcode = '42501';
  end if;
  perform memory_private.require_the_service('memory_export_begin');
  if p_export is null then
    raise exception 'p_export must be given' using errcode = '22023';
  end if;
  if not pg_catalog.pg_try_advisory_xact_lock(
    pg_catalog.hashtextextended('public.memory_export_begin ' || v_owner::text, 0)) then
    raise exception 'an export of this tenant is being copied' using errcode = '55P03';
  end if;
  delete from memory_private.export_rows e where e.owner_id = v_owner;
  return query
  select (select count(*) from public.devai_memories m where m.owner_id = v_owner)::integer,
         case when 'relations' = any (p_parts)
              then (select count(*) from public.memory_relations r where r.owner_id = v_owner)::integer else 0 end,
         case when 'history' = any (p_parts)
              then (select count(*) from public.memory_history h where h.owner_id = v_owner)::integer else 0 end,
         public.memory_setting('export_rows_max')::integer,
         public.memory_setting('export_copy_chunk_rows')::integer;
end;
$$;
revoke all on function public.memory_export_begin(uuid, text[]) from public, anon;
grant execute on function public.memory_export_begin(uuid, text[]) to authenticated, service_role;
