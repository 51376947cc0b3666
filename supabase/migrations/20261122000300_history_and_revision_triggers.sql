-- Layer 3: triggers and internal helpers. History and the change log are written by triggers, so
-- every write is audited: the edge functions', the cron jobs' and edits made by hand in Studio.
--
-- Transaction settings the triggers read (set with set_config(..., true) by the writer):
--   memory.actor      who writes ('user:<uuid>', 'worker:dedup', 'cron:decay', ...); default: the JWT
--                     subject, else the database user (so Studio edits show 'postgres')
--   memory.event      hint that refines an inferred event: DECAY, TTL or MERGE (see below)
--   memory.thread_id  the thread whose revision the change bumps; default 'default'

-- Keeps updated_at for changes a person would call an update; access bookkeeping and decay
-- (strength, access_count, last_accessed_at) do not count. Called by the trigger below.
create or replace function memory_private.touch_updated_at()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  new.updated_at := now();
  return new;
end;
$$;

create trigger devai_memories_touch_updated_at
  before update on public.devai_memories
  for each row
  when (
    old.content is distinct from new.content
    or old.embedding_model is distinct from new.embedding_model
    or old.memory_type is distinct from new.memory_type
    or old.namespace is distinct from new.namespace
    or old.priority is distinct from new.priority
    or old.source is distinct from new.source
    or old.is_valid is distinct from new.is_valid
    or old.superseded_by is distinct from new.superseded_by
    or old.importance is distinct from new.importance
    or old.pinned is distinct from new.pinned
    or old.state is distinct from new.state
    or old.metadata is distinct from new.metadata
  )
  execute function memory_private.touch_updated_at();

create trigger memory_session_summaries_touch_updated_at
  before update on public.memory_session_summaries
  for each row execute function memory_private.touch_updated_at();

-- Who is writing: the explicit memory.actor, else the JWT subject, else the database user.
-- Called by the history triggers.
create or replace function memory_private.current_actor()
returns text
language sql
stable
set search_path = ''
as $$
  select coalesce(
    nullif(current_setting('memory.actor', true), ''),
    case when nullif(current_setting('request.jwt.claims', true), '') is not null
         then 'user:' || (current_setting('request.jwt.claims', true)::jsonb ->> 'sub') end,
    session_user::text
  )
$$;

-- Increments the per-thread revision atomically (the upsert locks the thread's row, so concurrent
-- writers get distinct, consecutive revisions). Called by the change-log trigger.
create or replace function memory_private.bump_thread_revision(p_owner uuid, p_thread text)
returns bigint
language sql
volatile
security definer
set search_path = ''
as $$
  insert into public.memory_thread_revisions as r (owner_id, thread_id, revision)
  values (p_owner, p_thread, 1)
  on conflict (owner_id, thread_id)
  do update set revision = r.revision + 1, updated_at = now()
  returning r.revision
$$;
revoke all on function memory_private.bump_thread_revision(uuid, text) from public;

-- The memory's own fields a history row keeps (without the embedding), so the audit log and an
-- export still have the content after a purge.
create or replace function memory_private.history_snapshot(m public.devai_memories)
returns jsonb
language sql
immutable
set search_path = ''
as $$
  select jsonb_build_object(
    'namespace', m.namespace, 'memory_type', m.memory_type, 'priority', m.priority,
    'source', m.source, 'importance', m.importance, 'pinned', m.pinned, 'state', m.state,
    'is_valid', m.is_valid, 'strength', m.strength, 'session_id', m.session_id,
    'superseded_by', m.superseded_by, 'metadata', m.metadata, 'created_at', m.created_at)
$$;

-- Writes memory_history and memory_change_log for every insert, meaningful update and delete of a
-- memory. Event inference (memory.event may refine it, never invent one):
--   insert → ADD; physical delete → PURGE;
--   active → soft_deleted → DELETE (TTL when memory.event = 'TTL');
--   soft_deleted → active, or invalid → valid → RESTORE;
--   valid → invalid → DELETE (DECAY when memory.event = 'DECAY'; MERGE when superseded);
--   superseded_by newly set → MERGE; anything else → UPDATE (MERGE when memory.event = 'MERGE').
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

  if v_change is not null then
    v_rev := memory_private.bump_thread_revision(v_row.owner_id, v_thread);
    insert into public.memory_change_log (owner_id, thread_id, revision, memory_id, event, summary, meta)
    values (v_row.owner_id, v_thread, v_rev, v_row.id, v_change, left(v_row.content, 200),
            jsonb_build_object('memory_type', v_row.memory_type, 'namespace', v_row.namespace,
                               'importance', v_row.importance, 'category', v_row.metadata ->> 'category',
                               'history_event', v_event));
  end if;
  return null;
end;
$$;
revoke all on function memory_private.record_memory_write() from public;

create trigger devai_memories_record_insert
  after insert on public.devai_memories
  for each row execute function memory_private.record_memory_write();

create trigger devai_memories_record_delete
  after delete on public.devai_memories
  for each row execute function memory_private.record_memory_write();

-- Only changes a person would call a write; decay of strength and access bookkeeping are not
-- audited row by row (decay's invalidations are, as DECAY). source is audited: 'user_stated'
-- shields a memory from the LLM, so granting or removing it must leave a trace.
create trigger devai_memories_record_update
  after update on public.devai_memories
  for each row
  when (
    old.content is distinct from new.content
    or old.memory_type is distinct from new.memory_type
    or old.namespace is distinct from new.namespace
    or old.priority is distinct from new.priority
    or old.source is distinct from new.source
    or old.is_valid is distinct from new.is_valid
    or old.superseded_by is distinct from new.superseded_by
    or old.importance is distinct from new.importance
    or old.pinned is distinct from new.pinned
    or old.state is distinct from new.state
    or old.metadata is distinct from new.metadata
  )
  execute function memory_private.record_memory_write();

-- History for graph edges: a new or re-weighted edge is LINK, a removed edge DELETE. The row is
-- filed under the edge's from-memory. Called by the triggers on memory_relations.
create or replace function memory_private.record_relation_write()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
declare
  v_row public.memory_relations := case when tg_op = 'DELETE' then old else new end;
begin
  insert into public.memory_history (owner_id, memory_id, event, old_ref, new_ref, actor, meta)
  values (
    v_row.owner_id, v_row.from_id,
    case when tg_op = 'DELETE' then 'DELETE' else 'LINK' end,
    v_row.from_id, v_row.to_id, memory_private.current_actor(),
    jsonb_build_object('kind', 'relation', 'op', lower(tg_op), 'relation_id', v_row.id,
                       'relation_type', v_row.relation_type, 'strength', v_row.strength));
  return null;
end;
$$;
revoke all on function memory_private.record_relation_write() from public;

create trigger memory_relations_record_write
  after insert or delete or update of strength, relation_type on public.memory_relations
  for each row execute function memory_private.record_relation_write();
