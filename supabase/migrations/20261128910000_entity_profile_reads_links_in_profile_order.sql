-- An entity's profile (GET memory/entities/{id}) reads only the links it shows.
--
-- The profile shows the latest 50 valid facts that mention an entity (newest first: the memory's
-- valid_from) and the latest 50 episodes that named it. Both orders and both filters are columns of
-- the memory, not of the link, so every link of the entity was read and its memory looked up before
-- the sort kept 50: 5.5 ms at 800 mentions, 10 ms at 3,200, 55 ms at 12,800, growing with the
-- tenant's messages however few the profile shows.
--
-- A link now carries what the profile orders and filters by, copied from its memory:
--   profile_at    the memory's valid_from
--   profile_kind  'fact' (not an episode, valid, active), 'episode' (an active episode) or null
--                 (shown on no profile: forgotten, superseded, soft-deleted)
-- set when the link is written and kept when the memory changes (a memory's source, validity,
-- state or valid_from), and the partial index memory_entity_links_profile holds an entity's shown
-- links in profile order, so the profile reads its 50 links from the index and looks each memory
-- up by id. The timeline's order puts episodes of one instant in seq order (a batch sent without
-- `at` shares one instant), which no index has: it reads the latest 50 links and those of the same
-- instant as the 50th, and sorts those. The reads (_shared/memories/entities.ts) run with sorting
-- off, so on any statistics their plan is this index walk (with a few hundred links a read of them
-- all and a sort looked cheaper at times). tests/entity_profile_cost.test.ts counts the rows read.
-- docs/graph.md#entities.

alter table public.memory_entity_links
  add column profile_at timestamptz,
  add column profile_kind text constraint memory_entity_links_profile_kind check (profile_kind in ('fact', 'episode'));

comment on column public.memory_entity_links.profile_at is
  'The memory''s valid_from, copied (by trigger) so an entity''s profile reads its links in order. See docs/graph.md#entities.';
comment on column public.memory_entity_links.profile_kind is
  'fact, episode or null: where the memory shows on the entity''s profile (null: on none), kept by trigger. See docs/graph.md#entities.';

-- Where a memory shows on its entities' profiles: facts valid and active, episodes active.
create function memory_private.entity_profile_kind(p_source text, p_is_valid boolean, p_state text)
returns text
language sql
immutable
set search_path = ''
as $$
  select case when p_state is distinct from 'active' then null
              when p_source = 'conversation' then 'episode'
              when p_is_valid then 'fact' end
$$;

-- A new link takes its memory's. Security definer: the memory is read by its id and the link's
-- owner whoever inserts (a link to another tenant's memory finds none, and its foreign key refuses it).
create function memory_private.entity_link_profile_on_insert()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  select m.valid_from, memory_private.entity_profile_kind(m.source, m.is_valid, m.state)
    into new.profile_at, new.profile_kind
    from public.devai_memories m
   where m.id = new.memory_id and m.owner_id = new.owner_id;
  return new;
end;
$$;

create trigger memory_entity_links_profile before insert on public.memory_entity_links
  for each row execute function memory_private.entity_link_profile_on_insert();

-- A memory forgotten, superseded, restored or re-dated: its links follow. Security definer: tenants
-- do not update links. Runs for bulk lifecycle updates too (memory.bulk), or their profiles would
-- go stale.
create function memory_private.entity_link_profile_on_update()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  update public.memory_entity_links l
     set profile_at = new.valid_from,
         profile_kind = memory_private.entity_profile_kind(new.source, new.is_valid, new.state)
   where l.memory_id = new.id and l.owner_id = new.owner_id;
  return null;
end;
$$;

create trigger devai_memories_entity_link_profile after update of source, is_valid, state, valid_from
  on public.devai_memories
  for each row
  -- the columns themselves: a WHEN clause runs as the updating tenant, who may not call memory_private
  when (old.valid_from is distinct from new.valid_from or old.source is distinct from new.source
        or old.is_valid is distinct from new.is_valid or old.state is distinct from new.state)
  execute function memory_private.entity_link_profile_on_update();

-- ALWAYS, as devai_memories_derive_content: under session_replication_role = replica (bulk loads,
-- logical replication) too, so a link never disagrees with its memory.
alter table public.memory_entity_links enable always trigger memory_entity_links_profile;
alter table public.devai_memories enable always trigger devai_memories_entity_link_profile;

revoke all on function memory_private.entity_profile_kind(text, boolean, text) from public, anon, authenticated;
revoke all on function memory_private.entity_link_profile_on_insert() from public, anon, authenticated;
revoke all on function memory_private.entity_link_profile_on_update() from public, anon, authenticated;

update public.memory_entity_links l
   set profile_at = m.valid_from,
       profile_kind = memory_private.entity_profile_kind(m.source, m.is_valid, m.state)
  from public.devai_memories m
 where m.id = l.memory_id and m.owner_id = l.owner_id;

-- An entity's shown links, each kind in profile order (the facts' order exactly: valid_from, id).
create index memory_entity_links_profile
  on public.memory_entity_links (entity_id, owner_id, profile_kind, profile_at desc, memory_id desc)
  where profile_kind is not null;
