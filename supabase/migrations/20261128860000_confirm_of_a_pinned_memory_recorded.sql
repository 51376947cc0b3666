-- A user's confirmation of a memory that is pinned already is recorded: history CONFIRM and the
-- change log's 'updated' (meta.history_event CONFIRM), as a confirm that pins it. It wrote nothing
-- before (POST memory/{id}/confirm answered changed: false): the statement that the fact still
-- holds left no trace for explain, the history or other sessions' delta (✓confirmed).
--
-- The confirm's UPDATE of such a row changes no audited column, so the history trigger did not
-- fire. Now it also fires for memory.event = 'CONFIRM' on a pinned row (the setting only
-- the confirm writer sets, _shared/services/memory-lifecycle.ts), and record_memory_write records
-- CONFIRM for it when nothing audited changed. The hint still never invents an event: with any
-- audited change the event is what the change is (an importance change under the hint is UPDATE,
-- supabase/tests/database/41_history_pin_events.test.sql). Otherwise as in
-- 20261124200100_history_pin_unpin_confirm.sql and the trigger as in
-- 20261124800300_decay_invalidations_in_bulk.sql.

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
    elsif v_hint = 'CONFIRM' and new.pinned
          and (old.content, old.memory_type, old.namespace, old.priority, old.source, old.importance, old.metadata)
              is not distinct from
              (new.content, new.memory_type, new.namespace, new.priority, new.source, new.importance, new.metadata) then
      -- A confirm of a memory pinned already: nothing audited changed, the user's word is the event.
      v_event := 'CONFIRM'; v_change := 'updated';
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

drop trigger devai_memories_record_update on public.devai_memories;
create trigger devai_memories_record_update
  after update on public.devai_memories
  for each row
  when ((old.content is distinct from new.content or old.memory_type is distinct from new.memory_type
         or old.namespace is distinct from new.namespace or old.priority is distinct from new.priority
         or old.source is distinct from new.source or old.is_valid is distinct from new.is_valid
         or old.superseded_by is distinct from new.superseded_by or old.importance is distinct from new.importance
         or old.pinned is distinct from new.pinned or old.state is distinct from new.state
         or old.metadata is distinct from new.metadata
         or (new.pinned and current_setting('memory.event', true) = 'CONFIRM'))
        and (current_setting('memory.bulk', true) is distinct from 'on' or current_user not in ('postgres', 'service_role')))
  execute function memory_private.record_memory_write();
