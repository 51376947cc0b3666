-- Pin, unpin and confirm are their own history events. They were all UPDATE, so a memory's
-- history could not tell a user pinning a fact from someone editing it. Now:
--   pinned false → true: PIN, or CONFIRM when the writer says memory.event = 'CONFIRM' (the
--   memory function's /confirm route: the user confirmed the fact is true);
--   pinned true → false: UNPIN.
-- Only when the content stays the same; a pin that comes with an edit is still UPDATE. The change
-- log keeps event 'updated' for them (its meta.history_event says which), so readers of the
-- delta header need nothing new. This replaces memory_history's event CHECK list.

alter table public.memory_history drop constraint memory_history_event_check;
alter table public.memory_history add constraint memory_history_event_check check (
  event in ('ADD', 'UPDATE', 'DELETE', 'MERGE', 'LINK', 'DECAY', 'TTL', 'RESTORE', 'PURGE', 'PIN', 'UNPIN', 'CONFIRM'));

-- Writes memory_history and memory_change_log for every insert, meaningful update and delete of a
-- memory, as in 20261123000700, with PIN / UNPIN / CONFIRM for a change of pinned alone. Event
-- inference (memory.event may refine it, never invent one):
--   insert → ADD; physical delete → PURGE;
--   active → soft_deleted → DELETE (TTL when memory.event = 'TTL');
--   soft_deleted → active, or invalid → valid → RESTORE;
--   valid → invalid → DELETE (DECAY when memory.event = 'DECAY'; MERGE when superseded);
--   superseded_by newly set → MERGE;
--   pinned changed, content not → PIN (CONFIRM when memory.event = 'CONFIRM') or UNPIN;
--   anything else → UPDATE (MERGE when memory.event = 'MERGE').
-- With memory.change_log = 'bulk' the change log is left to the writer (log_changes_in_bulk).
create or replace function memory_private.record_memory_write()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
declare
  v_hint   text := upper(coalesce(nullif(current_setting('memory.event', true), ''), ''));
  v_thread text := coalesce(nullif(current_setting('memory.thread_id', true), ''), 'default');
  v_actor  text := memory_private.current_actor();
  v_event  text;
  v_change text;
  v_row    public.devai_memories;
  v_rev    bigint;
begin
  if tg_op = 'INSERT' then
    v_row := new; v_event := 'ADD'; v_change := 'created';
  elsif tg_op = 'DELETE' then
    v_row := old; v_event := 'PURGE'; v_change := null;
  else
    v_row := new;
    if old.state = 'active' and new.state = 'soft_deleted' then
      v_event := case when v_hint = 'TTL' then 'TTL' else 'DELETE' end; v_change := 'soft_deleted';
    elsif old.state = 'soft_deleted' and new.state = 'active' then
      v_event := 'RESTORE'; v_change := 'restored';
    elsif old.is_valid and not new.is_valid then
      v_event := case when v_hint = 'DECAY' then 'DECAY'
                      when new.superseded_by is not null or v_hint = 'MERGE' then 'MERGE'
                      else 'DELETE' end;
      v_change := case when v_event = 'MERGE' then 'merged' else 'deleted' end;
    elsif not old.is_valid and new.is_valid then
      v_event := 'RESTORE'; v_change := 'restored';
    elsif new.superseded_by is not null and old.superseded_by is distinct from new.superseded_by then
      v_event := 'MERGE'; v_change := 'merged';
    elsif old.pinned is distinct from new.pinned and old.content = new.content and v_hint <> 'MERGE' then
      v_event := case when not new.pinned then 'UNPIN' when v_hint = 'CONFIRM' then 'CONFIRM' else 'PIN' end;
      v_change := 'updated';
    else
      v_event := case when v_hint = 'MERGE' then 'MERGE' else 'UPDATE' end;
      v_change := case when v_event = 'MERGE' then 'merged' else 'updated' end;
    end if;
  end if;

  insert into public.memory_history (owner_id, memory_id, event, old_ref, new_ref, actor, old_content, new_content, meta)
  values (
    v_row.owner_id, v_row.id, v_event,
    case when tg_op = 'INSERT' then null else old.id end,
    case when tg_op = 'DELETE' then null when tg_op = 'UPDATE' and new.superseded_by is not null then new.superseded_by else new.id end,
    v_actor,
    case when tg_op = 'INSERT' then null else old.content end,
    case when tg_op = 'DELETE' then null else new.content end,
    memory_private.history_snapshot(v_row) || jsonb_build_object('thread_id', v_thread)
  );

  if v_change is not null and current_setting('memory.change_log', true) is distinct from 'bulk' then
    v_rev := memory_private.bump_thread_revision(v_row.owner_id, v_thread);
    insert into public.memory_change_log (owner_id, thread_id, revision, memory_id, event, summary, meta)
    values (v_row.owner_id, v_thread, v_rev, v_row.id, v_change, left(v_row.content, 200),
            memory_private.change_log_meta(v_row.memory_type, v_row.namespace, v_row.importance, v_row.metadata, v_event));
  end if;
  return null;
end;
$$;
revoke all on function memory_private.record_memory_write() from public;
