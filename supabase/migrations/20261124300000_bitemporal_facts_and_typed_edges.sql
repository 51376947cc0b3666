-- Graph memory, part 1: facts know when they held, and edges are typed, with validity,
-- confidence and evidence. See docs/graph.md.
--
-- 1. devai_memories gets valid_from / valid_until: when the fact held, apart from created_at (when
--    it was recorded). A supersede (correct, dedup UPDATE) or a contradiction (dedup DELETE)
--    closes the old fact's validity (valid_until = the moment of the change) besides setting
--    is_valid = false / superseded_by as before; nothing is rewritten in place. Decay's
--    invalidation does not close it: a faded memory says nothing about whether the fact still
--    holds. A restore reopens it.
-- 2. source 'conversation': raw episodes (every message of a session, POST memory/episodes).
--    This replaces devai_memories_source_check's list of allowed values.
-- 3. memory_relations: types temporal, causal, entity besides related_to, supersedes,
--    derived_from, contradicts (this replaces memory_relations_type_check's list), and
--    valid_from / valid_until, confidence and evidence on every edge.
-- 4. public.memory_at(m, at): the one "as of" predicate (was the memory held at that instant, and
--    with what content), read from the history the triggers write.

-- 1. Validity of facts -------------------------------------------------------------------------

alter table public.devai_memories
  add column valid_from  timestamptz,
  add column valid_until timestamptz;

-- Existing rows held from when they were recorded; those already replaced or contradicted stopped
-- holding when that happened (the history row of the change).
update public.devai_memories set valid_from = created_at;
update public.devai_memories m
   set valid_until = greatest(m.valid_from, coalesce(
         (select max(h.ts) from public.memory_history h
           where h.memory_id = m.id and h.event in ('MERGE', 'DELETE') and not coalesce((h.meta ->> 'is_valid')::boolean, true)),
         m.updated_at))
 where not m.is_valid and (m.superseded_by is not null
        or exists (select from public.memory_history h
                    where h.memory_id = m.id and h.event in ('MERGE', 'DELETE')
                      and not coalesce((h.meta ->> 'is_valid')::boolean, true)));

alter table public.devai_memories
  alter column valid_from set default now(),
  alter column valid_from set not null,
  add constraint devai_memories_validity_order check (valid_until is null or valid_until >= valid_from);

comment on column public.devai_memories.valid_from is
  'When the fact started to hold (an episode: when the message was sent); created_at is when it was recorded. See docs/graph.md#bitemporal-facts.';
comment on column public.devai_memories.valid_until is
  'When the fact stopped holding: set by trigger devai_memories_close_validity when the memory is superseded or contradicted (not by decay); null while it holds.';

-- Episodes are written by the tenant with the time the message was sent.
grant insert (valid_from) on public.devai_memories to authenticated;

-- Closes (or reopens) a fact's validity when its validity flags change, whoever writes them (the
-- API's correct, the dedup worker, an edit in Studio):
--   superseded_by newly set, or is_valid true → false for any reason but decay
--     (memory.event = 'DECAY')                              → valid_until = now (never before valid_from)
--   is_valid false → true without a successor (restore)    → valid_until = null
-- Called by the trigger below.
create or replace function memory_private.close_fact_validity()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if (new.superseded_by is not null and old.superseded_by is null)
     or (old.is_valid and not new.is_valid
         and upper(coalesce(nullif(current_setting('memory.event', true), ''), '')) <> 'DECAY') then
    new.valid_until := coalesce(new.valid_until, greatest(now(), new.valid_from));
  elsif not old.is_valid and new.is_valid and new.superseded_by is null then
    new.valid_until := null;
  end if;
  return new;
end;
$$;
revoke all on function memory_private.close_fact_validity() from public;

create trigger devai_memories_close_validity
  before update of is_valid, superseded_by on public.devai_memories
  for each row execute function memory_private.close_fact_validity();

-- The memory's fields a history row keeps, now with its validity, so a history row says what the
-- memory was at that moment (public.memory_at reads it). Same as 20261123000900's otherwise.
create or replace function memory_private.history_snapshot(m public.devai_memories)
returns jsonb
language plpgsql
immutable
set search_path = ''
as $$
begin
  return jsonb_build_object(
    'namespace', m.namespace, 'memory_type', m.memory_type, 'priority', m.priority,
    'source', m.source, 'importance', m.importance, 'pinned', m.pinned, 'state', m.state,
    'is_valid', m.is_valid, 'strength', m.strength, 'session_id', m.session_id,
    'superseded_by', m.superseded_by, 'metadata', m.metadata, 'created_at', m.created_at,
    'valid_from', m.valid_from, 'valid_until', m.valid_until);
end;
$$;

-- 2. Raw episodes ----------------------------------------------------------------------------

alter table public.devai_memories drop constraint devai_memories_source_check;
alter table public.devai_memories add constraint devai_memories_source_check check (
  source is null or source in ('user_stated', 'error_resolution', 'pattern', 'discovery', 'correction', 'compaction',
                               'import', 'conversation'));

-- 3. Typed edges with validity ----------------------------------------------------------------

alter table public.memory_relations
  add column confidence  real not null default 1,
  add column evidence    jsonb not null default '[]'::jsonb,
  add column valid_from  timestamptz,
  add column valid_until timestamptz;
update public.memory_relations set valid_from = created_at;
alter table public.memory_relations
  alter column valid_from set default now(),
  alter column valid_from set not null,
  add constraint memory_relations_confidence_range check (confidence >= 0 and confidence <= 1),
  add constraint memory_relations_evidence_shape check (jsonb_typeof(evidence) = 'array' and jsonb_array_length(evidence) <= 20),
  add constraint memory_relations_validity_order check (valid_until is null or valid_until >= valid_from),
  drop constraint memory_relations_type_check,
  add constraint memory_relations_type_check check (
    relation_type in ('related_to', 'supersedes', 'derived_from', 'contradicts', 'temporal', 'causal', 'entity'));

comment on column public.memory_relations.relation_type is
  'temporal (episode → next episode of its session), causal (cause → effect), derived_from (fact → source episode), supersedes (new → old), related_to, contradicts, entity (symmetric). See docs/graph.md#edges.';
comment on column public.memory_relations.valid_until is
  'When the edge stopped holding (null: it holds); graph traversal as of an instant follows only edges valid then.';

grant insert (confidence, evidence, valid_from, valid_until) on public.memory_relations to authenticated;
grant update (confidence, evidence, valid_until) on public.memory_relations to authenticated;

-- History for graph edges: a new edge, or a change of its weight, type, confidence or validity, is
-- LINK; a removed edge DELETE. Filed under the edge's from-memory. Same as 20261122000300's,
-- with the edge's confidence and validity in meta.
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
                       'relation_type', v_row.relation_type, 'strength', v_row.strength,
                       'confidence', v_row.confidence, 'valid_until', v_row.valid_until));
  return null;
end;
$$;
revoke all on function memory_private.record_relation_write() from public;

drop trigger memory_relations_record_write on public.memory_relations;
create trigger memory_relations_record_write
  after insert or delete or update of strength, relation_type, confidence, valid_until on public.memory_relations
  for each row execute function memory_private.record_relation_write();

-- 4. As of an instant -------------------------------------------------------------------------

-- What memory m was at instant p_at, from its history (every insert and audited change writes a
-- row whose meta is the memory's state after it, and new_content its content):
--   held          it had been recorded (created_at <= p_at), its validity had not been closed
--                 (valid_until null or after p_at), and its last audited change at or before p_at
--                 left it valid and active (not superseded, contradicted, decayed or forgotten)
--   content, is_valid, state, superseded_by   as they were then
-- A memory with no history row at or before p_at (bulk-loaded with triggers off) is taken as it
-- is now. Rows written in one transaction share its timestamp, so "at p_at" includes a change
-- made at exactly p_at. The one as-of rule: match_memories, query_memories, the graph functions
-- and the memory API's as_of all call it (docs/graph.md#as-of).
create or replace function public.memory_at(m public.devai_memories, p_at timestamptz)
returns table (held boolean, content text, is_valid boolean, state text, superseded_by uuid)
language sql
stable
security invoker
set search_path = ''
as $$
  select m.created_at <= p_at
           and (m.valid_until is null or m.valid_until > p_at)
           and coalesce(h.is_valid, m.is_valid)
           and coalesce(h.state, m.state) = 'active',
         coalesce(h.content, m.content),
         coalesce(h.is_valid, m.is_valid),
         coalesce(h.state, m.state),
         case when h.found then h.superseded_by else m.superseded_by end
    from (select 1) as one
    left join lateral (
      select true as found, x.new_content as content, (x.meta ->> 'is_valid')::boolean as is_valid,
             x.meta ->> 'state' as state, (x.meta ->> 'superseded_by')::uuid as superseded_by
        from public.memory_history x
       where x.memory_id = m.id and x.ts <= p_at and x.meta ? 'state'
       order by x.ts desc, x.id desc
       limit 1) h on true
$$;
revoke all on function public.memory_at(public.devai_memories, timestamptz) from public, anon;
grant execute on function public.memory_at(public.devai_memories, timestamptz) to authenticated, service_role;
