-- An export's copy is made in chunks of one REPEATABLE READ transaction, bounded in rows, and
-- copies no embedding (docs/operations.md#exports).
--
-- Measured on a tenant of 150,000 memories, 179,999 history rows and 29,986 relations (bench/
-- export-load.ts, on the shared two-core machine): public.memory_export_stage's one statement took
-- 58.9 s through the HTTP API and 80 s from psql, against its bound of four statement timeouts
-- (60 s): an export of a tenant this size was a 503 on a busy database, and every retry the
-- Retry-After asked for copied 416 MB again for a minute before failing the same way. Of the
-- memories' part, 13 of 18 s went to to_jsonb of the whole row, its 512-float embedding and its
-- two tsvectors included, only for the export to remove them: the copy now names the columns it
-- keeps (4.9 s for the same bytes).
--
-- The copy is one instant still: every chunk is a statement of ONE transaction begun REPEATABLE
-- READ (services/memory-export.ts), so all of them read the snapshot its first statement took, as
-- the one statement did. (Chunks each in a transaction of its own, even under one snapshot each,
-- would show a memory written between two of them in `history` and not in `memories`.) The
-- snapshot is held while the copy runs, as before, never while the client reads. What chunks
-- change: each statement is bounded by the ordinary statement timeout (the copy's transaction no
-- longer raises it to four), the function checks the copy's whole bound between two, and the row
-- count is known before anything is copied: a tenant over export_rows_max is refused at once
-- (422 export_too_large) instead of filling the disk and failing a minute later.

insert into public.memory_settings (name, value, description) values
  ('export_rows_max', 500000,
   'An export copies the tenant''s memories, relations and history (the Markdown export: memories) into memory_private.export_rows, about 1.2 kB a row, while its client reads it; a tenant with more rows than this is refused (422 export_too_large) before anything is copied. 0: no bound (docs/operations.md#exports).'),
  ('export_copy_chunk_rows', 10000,
   'Rows an export''s copy writes per statement (all its statements one transaction, one snapshot): each is bounded by the statement timeout (docs/operations.md#exports).')
on conflict (name) do nothing;
alter table public.memory_settings add constraint memory_settings_export_rows_max_range
  check (name <> 'export_rows_max' or (value >= 0 and value = trunc(value)));
alter table public.memory_settings add constraint memory_settings_export_copy_chunk_rows_range
  check (name <> 'export_copy_chunk_rows' or (value >= 1 and value <= 1000000 and value = trunc(value)));

drop function public.memory_export_stage(uuid, text[]);

-- Begins the caller's export p_export: deletes the caller's earlier copies (a tenant keeps one copy
-- at most), and counts the rows of each of p_parts the copy will hold (the Markdown export writes
-- memories only; memories are always counted), as of the transaction's snapshot. Returns them with
-- export_rows_max and export_copy_chunk_rows; the export refuses a tenant over the bound and copies
-- nothing, else copies each part with memory_export_copy. Called by the export
-- (services/memory-export.ts) as the tenant, first in the copy's REPEATABLE READ transaction;
-- security definer because the copy is no table of the tenant's (every row counted is the
-- caller's). The memory service's only (a write: docs/auth.md#data-api).
create function public.memory_export_begin(p_export uuid, p_parts text[] default array['memories', 'relations', 'history'])
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

-- Copies the next chunk of the caller's part p_part for export p_export: its p_limit rows after
-- place p_after_n, whose row was (p_after_at, p_after_id) in the part's export order (memories and
-- relations by created_at, history by ts; then id), read by the part's (owner_id, time, id) index.
-- Returns how many rows it copied and the last one's key, for the next chunk. A memory is copied
-- without its embedding and tsvectors: its other columns by name (to_jsonb of the whole row
-- turned 512 floats into JSON for each memory, then dropped them), read back typed by
-- jsonb_populate_record. Called by the export after memory_export_begin, in the same transaction
-- (one snapshot for all chunks). The memory service's only, as memory_export_begin.
create function public.memory_export_copy(
  p_export uuid,
  p_part text,
  p_after_n integer,
  p_after_at timestamptz,
  p_after_id uuid,
  p_limit integer
)
returns table (copied integer, last_at timestamptz, last_id uuid)
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
  perform memory_private.require_the_service('memory_export_copy');
  if p_export is null or p_after_n is null or p_after_at is null or p_after_id is null or p_limit is null then
    raise exception 'p_export, p_after_n, p_after_at, p_after_id and p_limit must be given' using errcode = '22023';
  end if;
  if p_part is null or p_part not in ('memories', 'relations', 'history') then
    raise exception 'p_part must be memories, relations or history' using errcode = '22023';
  end if;
  -- One branch per part; the two others are skipped whole (their p_part test is a one-time filter).
  return query
  with chunk as (
    (select m.created_at as at, m.id, to_jsonb(k) as item
       from public.devai_memories m
      cross join lateral (
        select m.id, m.content, m.memory_type, m.namespace, m.priority, m.source, m.strength, m.access_count,
               m.last_accessed_at, m.session_id, m.is_valid, m.superseded_by, m.created_at, m.updated_at,
               m.owner_id, m.importance, m.pinned, m.state, m.purge_at, m.embedding_model, m.base_strength,
               m.metadata, m.content_hash, m.valid_from, m.valid_until
      ) k
      where p_part = 'memories' and m.owner_id = v_owner and (m.created_at, m.id) > (p_after_at, p_after_id)
      order by m.created_at, m.id
      limit greatest(p_limit, 1))
    union all
    (select r.created_at, r.id, to_jsonb(r)
       from public.memory_relations r
      where p_part = 'relations' and r.owner_id = v_owner and (r.created_at, r.id) > (p_after_at, p_after_id)
      order by r.created_at, r.id
      limit greatest(p_limit, 1))
    union all
    (select h.ts, h.id, to_jsonb(h)
       from public.memory_history h
      where p_part = 'history' and h.owner_id = v_owner and (h.ts, h.id) > (p_after_at, p_after_id)
      order by h.ts, h.id
      limit greatest(p_limit, 1))
  ), copied as (
    insert into memory_private.export_rows (owner_id, export_id, part, n, item)
    select v_owner, p_export, p_part, p_after_n + row_number() over (order by c.at, c.id), c.item
      from chunk c
    returning n
  )
  select (select count(*) from copied)::integer, c.at, c.id
    from (select 1) one left join lateral (select at, id from chunk order by at desc, id desc limit 1) c on true;
end;
$$;
revoke all on function public.memory_export_copy(uuid, text, integer, timestamptz, uuid, integer) from public, anon;
grant execute on function public.memory_export_copy(uuid, text, integer, timestamptz, uuid, integer) to authenticated, service_role;

comment on table memory_private.export_rows is
  'Exports being read: each a copy of one tenant''s memories, relations and history made by one REPEATABLE READ transaction in chunks (public.memory_export_begin, public.memory_export_copy), read a page at a time (public.memory_export_page), deleted when the export ends or, if its reader vanished, by devai-export-rows-prune. See docs/operations.md#exports.';
