-- A thread's revision is taken at commit, after every memory row the transaction locks: no
-- deadlock between a memory write and the revision row (docs/operations.md#lock-order).
--
-- Each memory write bumped its thread's revision row (public.memory_thread_revisions) in the
-- history trigger and held that row lock to commit. A transaction that locked a memory and then
-- wrote (a correction, a confirm, a contradiction's resolution) waited for the revision row while
-- another writer of the same thread that already held it (the dedup worker between two candidates,
-- a graph job linking to the memory) waited for that memory: Postgres broke the cycle by rolling
-- one back (40P01; session 37's chaos run, answered 409 since c58d6db). One lock order removes the
-- cycle: memory rows while the transaction runs (several at once in id order: lockMemories,
-- dedup's neighbours), the thread's revision row last, at commit, when the transaction waits for
-- nothing else.
--
-- record_memory_write writes the change-log row with revision 0 (not given yet: no reader's
-- `revision > since` matches it; revisions start at 1) and does not touch the thread's row at all.
-- A deferred constraint trigger on the change log gives each such row its revision at commit, in
-- the order the rows were written (deferred events fire in that order): bump_thread_revision, as
-- before (its upsert creates the thread's row when it is the thread's first change), then the
-- row. The revision row is held from then to the end of the commit, so revisions still become
-- visible in order (a reader that sees revision n sees every change before it), and writers of
-- one thread now wait for each other only for a commit, not for a whole transaction. The same
-- revisions as before.
--
-- The change log's foreign key to the thread's row (memory_change_log_thread_fkey) is dropped: it
-- needed the row before the change-log row, so the first write of a new thread inserted it while
-- the transaction ran, and that uncommitted row made a second writer of the thread wait for the
-- whole first transaction again (the unique check of its own insert ... on conflict, or the key
-- check), holding its memory locks meanwhile: the same cycle, in a new thread (and that
-- insert ... on conflict, on an existing row, also waited for a commit-time bump of another
-- transaction that had not finished committing yet). Nothing read the
-- key; its `on delete cascade` only emptied a thread's change log with the thread's row, which no
-- code path does (tests and scripts that remove a tenant delete its change log themselves).
--
-- public.restore_memory is restated with `for no key update of m` (was `for update of m`): the
-- memory service locks the memory first (lockMemory, `for no key update`), and upgrading that to
-- `for update` waits for every key-share lock a foreign key check holds on the memory (an edge, a
-- usage record inserted meanwhile), whose transaction may in turn wait for this one: a deadlock.
--
-- Not changed: decay's and TTL's bulk change log (memory_private.log_changes_in_bulk, one bump per
-- tenant and batch, immediate: a bump per row would be the quadratic chain of 20261123000700).
-- A transaction that wants its revisions before it commits (a pgTAP file, in one transaction it
-- rolls back) runs `set constraints public.memory_change_log_revision_at_commit immediate`.

-- Gives a change-log row written with revision 0 its revision. Called at commit by the deferred
-- constraint trigger below, once per such row, in the order they were written.
create or replace function memory_private.assign_revision_at_commit()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  update public.memory_change_log c
     set revision = memory_private.bump_thread_revision(new.owner_id, new.thread_id)
   where c.id = new.id;
  return null;
end;
$$;
revoke all on function memory_private.assign_revision_at_commit() from public;

create constraint trigger memory_change_log_revision_at_commit
  after insert on public.memory_change_log
  deferrable initially deferred
  for each row
  when (new.revision = 0)
  execute function memory_private.assign_revision_at_commit();

-- No row of the thread is needed before its commit (see above).
alter table public.memory_change_log drop constraint memory_change_log_thread_fkey;

-- Same as 20261128860000's, but the change-log row's revision is given at commit.
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
    insert into public.memory_change_log (owner_id, thread_id, revision, memory_id, event, summary, meta)
    values (v_row.owner_id, v_thread, 0, v_row.id, v_change, left(v_row.content, 200),
            memory_private.change_log_meta(v_row.memory_type, v_row.namespace, v_row.importance, v_row.metadata, v_event));
  end if;
  return null;
end;
$$;
revoke all on function memory_private.record_memory_write() from public;

-- Same as 20261122001100's, but the memory is locked `for no key update` (see above): what the
-- UPDATE below takes, and what lockMemory holds already when the memory service calls it.
create or replace function public.restore_memory(id uuid, p_now timestamptz default now())
returns setof public.devai_memories
language sql
volatile
security invoker
set search_path = ''
as $$
  with cfg as (
    select public.memory_setting('decay_base')::double precision as decay_base,
           public.memory_setting('restore_strength')::double precision as restore_strength
  ),
  target as (
    select m.id,
           greatest(cfg.restore_strength,
             case when m.priority = 'highest' or m.pinned then m.strength
                  else public.memory_decayed_strength(m.base_strength, m.last_accessed_at, restore_memory.p_now, cfg.decay_base)
             end) as restored_strength
      from public.devai_memories m
     cross join cfg
     where m.id = restore_memory.id
       and (m.state = 'soft_deleted' or (not m.is_valid and m.superseded_by is null))
       for no key update of m
  ),
  restored as (
    update public.devai_memories m
       set state = 'active',
           purge_at = null,
           metadata = m.metadata - 'forget_reason',
           is_valid = m.is_valid or m.superseded_by is null,
           last_accessed_at = greatest(m.last_accessed_at, restore_memory.p_now),
           strength = t.restored_strength,
           base_strength = t.restored_strength
      from target t
     where m.id = t.id
    returning m.*
  )
  select * from restored
  union all
  select m.* from public.devai_memories m
   where m.id = restore_memory.id and not exists (select from restored)
$$;
