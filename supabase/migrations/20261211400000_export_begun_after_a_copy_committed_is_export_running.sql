-- An export begun on one server as another server's copy of the tenant commits is 429
-- export_running, never a 503 (docs/operations.md#exports).
--
-- The copy's REPEATABLE READ snapshot is taken by its transaction's first statement (the
-- tenant's settings, db.ts), one round trip before memory_export_begin takes the tenant's
-- advisory lock (20261210500000). A first copy that committed in that gap, having deleted an
-- earlier copy of the tenant, released the lock, so the second got it, and its delete of that
-- earlier copy (rows its older snapshot still sees, deleted by a transaction committed after it)
-- failed with a serialization failure (40001): a 503 "the database is unavailable". The lock
-- cannot come before the snapshot: in PostgreSQL every statement that can call a function (SELECT,
-- CALL, DO) takes its snapshot as it starts, before the function runs, and the one that takes
-- none, LOCK TABLE, locks whole tables, not a tenant's rows; one statement that both sets the
-- settings and takes the lock would narrow the gap to within it, not close it. So the failure is
-- answered for what it is: another export of the tenant copied while this one began, 55P03, which
-- the export answers 429 export_running with Retry-After (services/memory-export.ts), as when the
-- lock is held; the retry's snapshot sees that copy and replaces it. Nothing is copied.

-- Begins the caller's export p_export: refuses it while another copy of the caller's is being made,
-- or was committed after this transaction's snapshot (55P03: services/memory-export.ts answers 429
-- export_running), deletes the caller's earlier copies (a tenant keeps one copy at most), and
-- counts the rows of each of p_parts the copy will hold (the Markdown export writes memories
-- only; memories are always counted), as of the transaction's snapshot. Returns them with
-- export_rows_max and export_copy_chunk_rows; the export refuses a tenant over the bound and copies
-- nothing, else copies each part with memory_export_copy. Called by the export as the tenant,
-- first in the copy's REPEATABLE READ transaction, whose advisory lock on the tenant lasts until it
-- commits; security definer because the copy is no table of the tenant's (every row counted is the
-- caller's). The memory service's only (a write: docs/auth.md#data-api).
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
  begin
    delete from memory_private.export_rows e where e.owner_id = v_owner;
  exception when serialization_failure then
    -- The earlier copy was deleted by another export whose copy committed after this
    -- transaction's snapshot was taken (and before its lock was): that export is running.
    raise exception 'an export of this tenant was copied while this one began' using errcode = '55P03';
  end;
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
