-- An export is copied in one statement and read from the copy (docs/operations.md#exports). It
-- read every page in ONE REPEATABLE READ transaction held while the client read the response: a
-- client reading slowly held that snapshot up to ten minutes, and vacuum could remove no row
-- version any tenant had made meanwhile (another tenant's retrieval went from 10 to 70 ms at nine
-- minutes, its 20 memories reading 2,084 buffers: rate-limit buckets and reinforced memories updated
-- under the snapshot). Reading each page AS OF the export's instant from memory_history instead does
-- not give the exported rows: history records no reinforcement (strength, access_count,
-- last_accessed_at), no relation re-weighting, nothing a purge deleted, and its ts is when the
-- writing transaction began, not when it committed.
--
-- So the tenant's memories, relations and history are copied here by ONE statement (one snapshot,
-- held for as long as the copy takes, not for as long as the client reads), and each page is read
-- from the copy by a short transaction of its own. Unlogged: a copy is worth nothing after a
-- crash (it is emptied then, and the export reading it fails: its counts no longer match), and its
-- rows cost no WAL and go to no replica (the pages are read on the primary).
create unlogged table memory_private.export_rows (
  owner_id  uuid not null,
  export_id uuid not null,
  part      text not null check (part in ('memories', 'relations', 'history')),
  -- The row's place in its part's export order (memories and relations by created_at, history by
  -- ts; then id): pages are read by it, each a range of the primary key.
  n         integer not null,
  staged_at timestamptz not null default now(),
  -- The row as to_jsonb gives it (a memory without its embedding and tsvectors), read back typed
  -- by jsonb_populate_record: every value comes back exactly (floats in shortest exact form,
  -- timestamps to the microsecond).
  item      jsonb not null,
  primary key (owner_id, export_id, part, n)
);
comment on table memory_private.export_rows is
  'Exports being read: each a copy of one tenant''s memories, relations and history made in one statement (public.memory_export_stage), read a page at a time (public.memory_export_page), deleted when the export ends or, if its reader vanished, by devai-export-rows-prune. See docs/operations.md#exports.';
alter table memory_private.export_rows enable row level security;
create policy "Service role can read export copies" on memory_private.export_rows
  for select to service_role using (true);
grant select on memory_private.export_rows to service_role;

-- Copies the caller's memories (soft-deleted ones too) and, of p_parts, relations and history
-- (the Markdown export writes memories only) for export p_export, in one statement: one snapshot, so a memory and its history rows agree. The caller's
-- earlier copies go first: a tenant keeps one copy at most, however often this is called. Returns
-- how many rows each part has (the export checks it read that many). Called by the export
-- (services/memory-export.ts) as the tenant; security definer because the copy is no table of the
-- tenant's: every row read is the caller's (owner_id = auth.uid(), the predicate of the tables'
-- own policies). The memory service's only (a write: docs/auth.md#data-api): through the
-- Data API a tenant could copy itself at will.
create function public.memory_export_stage(p_export uuid, p_parts text[] default array['memories', 'relations', 'history'])
returns table (memories integer, relations integer, history integer)
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
  perform memory_private.require_the_service('memory_export_stage');
  if p_export is null then
    raise exception 'p_export must be given' using errcode = '22023';
  end if;
  delete from memory_private.export_rows e where e.owner_id = v_owner;
  return query
  with copied as (
    insert into memory_private.export_rows (owner_id, export_id, part, n, item)
    select v_owner, p_export, 'memories', row_number() over (order by m.created_at, m.id),
           to_jsonb(m) - '{embedding,fts,fts_scoped}'::text[]
      from public.devai_memories m
     where m.owner_id = v_owner
    union all
    select v_owner, p_export, 'relations', row_number() over (order by r.created_at, r.id), to_jsonb(r)
      from public.memory_relations r
     where r.owner_id = v_owner and 'relations' = any (p_parts)
    union all
    select v_owner, p_export, 'history', row_number() over (order by h.ts, h.id), to_jsonb(h)
      from public.memory_history h
     where h.owner_id = v_owner and 'history' = any (p_parts)
    returning part
  )
  select (count(*) filter (where c.part = 'memories'))::integer,
         (count(*) filter (where c.part = 'relations'))::integer,
         (count(*) filter (where c.part = 'history'))::integer
    from copied c;
end;
$$;
revoke all on function public.memory_export_stage(uuid, text[]) from public, anon;
grant execute on function public.memory_export_stage(uuid, text[]) to authenticated, service_role;

-- One page of a part of the caller's export p_export: its rows after place p_after, p_limit at
-- most, in export order. Called by the export for each page, each in a transaction of its own.
create function public.memory_export_page(p_export uuid, p_part text, p_after integer, p_limit integer)
returns table (n integer, item jsonb)
language sql
stable
security definer
set search_path = ''
as $$
  select e.n, e.item
    from memory_private.export_rows e
   where e.owner_id = (select auth.uid()) and e.export_id = p_export and e.part = p_part and e.n > p_after
   order by e.n
   limit least(greatest(p_limit, 0), 5000);
$$;
revoke all on function public.memory_export_page(uuid, text, integer, integer) from public, anon;
grant execute on function public.memory_export_page(uuid, text, integer, integer) to authenticated, service_role;

-- Deletes the caller's copy for export p_export: called when the export ends (read whole, or its
-- reader gone or too slow). The memory service's only, as the copy.
create function public.memory_export_drop(p_export uuid)
returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  perform memory_private.require_the_service('memory_export_drop');
  delete from memory_private.export_rows e where e.owner_id = (select auth.uid()) and e.export_id = p_export;
end;
$$;
revoke all on function public.memory_export_drop(uuid) from public, anon;
grant execute on function public.memory_export_drop(uuid) to authenticated, service_role;

-- Deletes the copies staged more than p_age ago: an export lives ten minutes at most (forty
-- statement timeouts of 15 s), so these are copies whose server went away before deleting them.
-- Called by pg_cron (devai-export-rows-prune) as postgres; by hand:
-- select memory_private.prune_export_rows();
create function memory_private.prune_export_rows(p_age interval default interval '1 hour')
returns integer
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
  v_deleted integer;
begin
  delete from memory_private.export_rows e where e.staged_at < now() - p_age;
  get diagnostics v_deleted = row_count;
  return v_deleted;
end;
$$;
revoke all on function memory_private.prune_export_rows(interval) from public;

insert into public.memory_maintenance_schedules (job_name, schedule, command, description) values
  ('devai-export-rows-prune', '*/15 * * * *', 'select memory_private.prune_export_rows()',
   'Deletes export copies staged more than an hour ago (an export lives ten minutes at most): copies whose server went away mid-export.')
on conflict (job_name) do update
  set schedule = excluded.schedule, command = excluded.command, description = excluded.description;

select memory_private.register_maintenance_schedules();
