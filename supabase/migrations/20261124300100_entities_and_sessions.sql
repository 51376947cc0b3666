-- Graph memory, part 2: entities, memory ↔ entity links, and sessions (the episodes' log and the
-- consolidation record). Layers: helpers → tables → RLS and grants → RPCs. See docs/graph.md.

-- The key an entity name is resolved by: lower-cased (NFKC), every character but letters, digits,
-- '+' and '#' removed, so "Node.js", "nodejs" and "NODE-JS" are one entity while "C", "C++" and
-- "C#" stay three. Used by the generated columns of memory_entities and by the lookups below;
-- callers may use it to build the same key (docs/graph.md#entities).
create or replace function public.memory_entity_key(p_name text)
returns text
language sql
immutable
parallel safe
security invoker
set search_path = ''
as $$
  select regexp_replace(lower(normalize(coalesce(p_name, ''), nfkc)), '[^[:alnum:]+#]+', '', 'g')
$$;
revoke all on function public.memory_entity_key(text) from public, anon;
grant execute on function public.memory_entity_key(text) to authenticated, service_role;

-- The tenant-qualified keys of an entity's aliases, '<owner>|<key>': one GIN lookup per name,
-- inside the tenant (a common alias of many tenants costs nothing to the others). Derived into
-- memory_entities.alias_keys by trigger memory_entities_derive_keys.
create or replace function public.memory_entity_alias_keys(p_owner uuid, p_names text[])
returns text[]
language sql
immutable
parallel safe
security invoker
set search_path = ''
as $$
  select coalesce(array_agg(distinct p_owner::text || '|' || k), '{}')
    from (select public.memory_entity_key(n) as k from unnest(p_names) as n) keys
   where k <> ''
$$;
revoke all on function public.memory_entity_alias_keys(uuid, text[]) from public, anon;
grant execute on function public.memory_entity_alias_keys(uuid, text[]) to authenticated, service_role;

-- Entities: canonical identities (files, packages, services, people, ...) per tenant.
create table public.memory_entities (
  id              uuid primary key default gen_random_uuid(),
  owner_id        uuid not null default auth.uid(),
  canonical_name  text not null,
  entity_type     text not null,
  aliases         text[] not null default '{}',
  summary         text,
  embedding       extensions.vector(512),
  embedding_model text,
  first_seen_at   timestamptz not null default now(),
  last_seen_at    timestamptz not null default now(),
  mention_count   integer not null default 0,
  attributes      jsonb not null default '{}'::jsonb,
  created_at      timestamptz not null default now(),
  updated_at      timestamptz not null default now(),
  -- Derived by trigger memory_entities_derive_keys (not generated columns: Postgres recomputes
  -- every stored generated column on every update of a table with a BEFORE UPDATE trigger, and a
  -- mention bump is the most frequent update here).
  normalized_name text not null,
  alias_keys      text[] not null default '{}',
  constraint memory_entities_name_shape check (
    char_length(btrim(canonical_name)) between 1 and 200 and canonical_name !~ '[[:cntrl:]]'),
  constraint memory_entities_name_has_key check (normalized_name <> ''),
  constraint memory_entities_type_check check (entity_type in (
    'person', 'project', 'organization', 'place', 'concept', 'tool',
    'file', 'package', 'service', 'function', 'command', 'error')),
  constraint memory_entities_aliases_shape check (cardinality(aliases) <= 20),
  constraint memory_entities_summary_length check (summary is null or char_length(summary) between 1 and 2000),
  constraint memory_entities_embedding_has_model check (embedding is null or embedding_model is not null),
  constraint memory_entities_mention_count_nonnegative check (mention_count >= 0),
  constraint memory_entities_attributes_is_object check (jsonb_typeof(attributes) = 'object'),
  constraint memory_entities_unique_name unique (owner_id, normalized_name),
  -- Lets links reference (id, owner_id), so a link can never join two tenants.
  constraint memory_entities_id_owner_key unique (id, owner_id)
);
-- Canonical names resolve through the unique (owner_id, normalized_name) btree, aliases through
-- this GIN index of the few entities that have any; prefix search uses the text_pattern_ops one.
create index memory_entities_alias_keys on public.memory_entities using gin (alias_keys) where cardinality(alias_keys) > 0;
create index memory_entities_owner_name on public.memory_entities (owner_id, normalized_name text_pattern_ops);
-- mention_count is in no index, so a mention bump can be a HOT update.
create index memory_entities_to_enrich on public.memory_entities (owner_id) where summary is null;
alter table public.memory_entities set (fillfactor = 80);

comment on table public.memory_entities is
  'Entities (people, projects, files, packages, services, functions, commands, errors, ...) of one tenant, resolved by canonical name or alias, case- and punctuation-insensitively (public.memory_entity_key). See docs/graph.md#entities.';

-- Derives normalized_name and alias_keys from canonical_name, aliases and owner_id; a value written
-- directly is replaced. Called by the trigger below.
create or replace function memory_private.derive_entity_keys()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  new.normalized_name := public.memory_entity_key(new.canonical_name);
  new.alias_keys := public.memory_entity_alias_keys(new.owner_id, new.aliases);
  return new;
end;
$$;
revoke all on function memory_private.derive_entity_keys() from public;

create trigger memory_entities_derive_keys
  before insert or update of owner_id, canonical_name, aliases, normalized_name, alias_keys on public.memory_entities
  for each row execute function memory_private.derive_entity_keys();

-- updated_at moves when what an entity is changes, not when it is mentioned again.
create trigger memory_entities_touch_updated_at
  before update of canonical_name, entity_type, aliases, summary, embedding, attributes on public.memory_entities
  for each row execute function memory_private.touch_updated_at();

-- Which memories mention which entities.
create table public.memory_entity_links (
  owner_id   uuid not null default auth.uid(),
  memory_id  uuid not null,
  entity_id  uuid not null,
  mention    text not null,
  confidence real not null default 1,
  source     text not null default 'rules',
  created_at timestamptz not null default now(),
  primary key (memory_id, entity_id),
  constraint memory_entity_links_memory_fkey foreign key (memory_id, owner_id)
    references public.devai_memories (id, owner_id) on delete cascade,
  constraint memory_entity_links_entity_fkey foreign key (entity_id, owner_id)
    references public.memory_entities (id, owner_id) on delete cascade,
  constraint memory_entity_links_mention_shape check (char_length(mention) between 1 and 200),
  constraint memory_entity_links_confidence_range check (confidence >= 0 and confidence <= 1),
  constraint memory_entity_links_source_check check (source in ('rules', 'llm', 'api'))
);
create index memory_entity_links_entity on public.memory_entity_links (entity_id, owner_id, created_at desc);
create index memory_entity_links_memory_owner on public.memory_entity_links (memory_id, owner_id);

-- Links are derived from a memory's content (by rules, or by the model during consolidation), like
-- its fts column, so they write no history rows of their own; each says its source and when.
comment on table public.memory_entity_links is
  'Memory ↔ entity mentions: found by rules (every write) or by the LLM (consolidation). See docs/graph.md#entities.';

-- Sessions: the log episodes are appended to (the previous episode each new one is linked to) and
-- the consolidation record (ended once, consolidated by one job).
create table public.memory_sessions (
  id                   uuid primary key default gen_random_uuid(),
  owner_id             uuid not null default auth.uid(),
  session_id           text not null,
  thread_id            text,
  project              text,
  namespace            text not null,
  episode_count        integer not null default 0,
  last_episode_id      uuid,
  first_event_at       timestamptz,
  last_event_at        timestamptz,
  created_at           timestamptz not null default now(),
  updated_at           timestamptz not null default now(),
  ended_at             timestamptz,
  end_reason           text,
  consolidation_job_id uuid,
  consolidated_at      timestamptz,
  consolidation        jsonb,
  -- Causal inference has looked at the pairs of consecutive episodes up to this one (seq).
  causal_checked_seq   integer not null default 0,
  constraint memory_sessions_unique_session unique (owner_id, session_id),
  constraint memory_sessions_session_id_shape check (char_length(session_id) between 1 and 200),
  constraint memory_sessions_thread_id_shape check (thread_id is null or char_length(thread_id) between 1 and 200),
  constraint memory_sessions_episode_count_nonnegative check (episode_count >= 0),
  constraint memory_sessions_end_reason_check check (
    (ended_at is null) = (end_reason is null)
    and (end_reason is null or end_reason in ('explicit', 'new_session', 'idle'))),
  constraint memory_sessions_consolidated_after_end check (consolidated_at is null or ended_at is not null),
  constraint memory_sessions_last_episode_fkey foreign key (last_episode_id, owner_id)
    references public.devai_memories (id, owner_id) on delete set null (last_episode_id)
);
create index memory_sessions_open_by_thread on public.memory_sessions (owner_id, thread_id)
  where ended_at is null;
create index memory_sessions_open_by_activity on public.memory_sessions (updated_at)
  where ended_at is null;
create index memory_sessions_last_episode on public.memory_sessions (last_episode_id, owner_id)
  where last_episode_id is not null;

comment on table public.memory_sessions is
  'One row per conversation session that sent episodes: its episode log (count, last episode) and its consolidation record (ended_at, end_reason, consolidation_job_id, consolidated_at). See docs/graph.md#sessions.';

create trigger memory_sessions_touch_updated_at
  before update on public.memory_sessions
  for each row execute function memory_private.touch_updated_at();

-- Idempotent episodes: one per (tenant, session, message digest).
create unique index devai_memories_episode_digest
  on public.devai_memories (owner_id, session_id, (metadata ->> 'digest'))
  where source = 'conversation';

-- RLS and grants --------------------------------------------------------------------------------

alter table public.memory_entities enable row level security;
alter table public.memory_entity_links enable row level security;
alter table public.memory_sessions enable row level security;

revoke all on table public.memory_entities, public.memory_entity_links, public.memory_sessions from anon, authenticated, public;
grant all on table public.memory_entities, public.memory_entity_links, public.memory_sessions to service_role;

-- Entities: owners read, create and enrich theirs. Generated columns and ids are never written by
-- the client; no delete (an entity outlives the memories that mention it).
grant select on public.memory_entities to authenticated;
grant insert (owner_id, canonical_name, entity_type, aliases, summary, attributes, first_seen_at, last_seen_at, mention_count)
  on public.memory_entities to authenticated;
grant update (aliases, summary, embedding, embedding_model, last_seen_at, mention_count, attributes)
  on public.memory_entities to authenticated;
create policy "Owners can read their entities" on public.memory_entities
  for select to authenticated using (owner_id = (select auth.uid()));
create policy "Owners can add entities" on public.memory_entities
  for insert to authenticated with check (owner_id = (select auth.uid()));
create policy "Owners can update their entities" on public.memory_entities
  for update to authenticated
  using (owner_id = (select auth.uid())) with check (owner_id = (select auth.uid()));

-- Links: owners read and add links between their memories and their entities (the composite
-- foreign keys make a link to another tenant's memory or entity impossible).
grant select on public.memory_entity_links to authenticated;
grant insert (owner_id, memory_id, entity_id, mention, confidence, source) on public.memory_entity_links to authenticated;
create policy "Owners can read their entity links" on public.memory_entity_links
  for select to authenticated using (owner_id = (select auth.uid()));
create policy "Owners can link their memories to their entities" on public.memory_entity_links
  for insert to authenticated with check (owner_id = (select auth.uid()));

-- Sessions: owners open, append to, end and consolidate theirs.
grant select on public.memory_sessions to authenticated;
grant insert (owner_id, session_id, thread_id, project, namespace) on public.memory_sessions to authenticated;
grant update (episode_count, last_episode_id, first_event_at, last_event_at, ended_at, end_reason,
              consolidation_job_id, consolidated_at, consolidation, causal_checked_seq)
  on public.memory_sessions to authenticated;
create policy "Owners can read their sessions" on public.memory_sessions
  for select to authenticated using (owner_id = (select auth.uid()));
create policy "Owners can open sessions" on public.memory_sessions
  for insert to authenticated with check (owner_id = (select auth.uid()));
create policy "Owners can update their sessions" on public.memory_sessions
  for update to authenticated
  using (owner_id = (select auth.uid())) with check (owner_id = (select auth.uid()));

-- RPCs ------------------------------------------------------------------------------------------

-- The entity a key names in tenant p_owner: the one whose canonical name has that key, else the
-- most mentioned one with an alias of that key, else null. Two index lookups (the unique
-- (owner_id, normalized_name) btree, the alias_keys GIN). Security invoker: RLS applies, so a
-- caller only ever resolves among its own entities. Called by link_memory_entities.
create or replace function public.memory_entity_resolve(p_owner uuid, p_key text)
returns uuid
language sql
stable
security invoker
set search_path = ''
as $$
  select coalesce(
    (select e.id from public.memory_entities e where e.owner_id = p_owner and e.normalized_name = p_key),
    (select e.id from public.memory_entities e
      where cardinality(e.alias_keys) > 0 and e.alias_keys && array[p_owner::text || '|' || p_key]
      order by e.mention_count desc, e.id limit 1))
$$;
revoke all on function public.memory_entity_resolve(uuid, text) from public, anon;
grant execute on function public.memory_entity_resolve(uuid, text) to authenticated, service_role;

-- Links memories to entities, as the signed-in tenant (security invoker: RLS and the composite
-- foreign keys apply). p_links: a JSON array (at most 500) of
--   {"memory_id", "name", "type", "mention"?, "confidence"? (1), "source"? ('rules')}.
-- Each name is resolved inside the tenant by its key (public.memory_entity_key) against canonical
-- names first, then aliases (public.memory_entity_resolve); a name that resolves to nothing
-- becomes a new entity of the given type (the first type seen wins: an entity keeps its type).
-- A link that exists already is left as it is; each new link adds one to its entity's
-- mention_count and moves last_seen_at. Returns the number of new links. Names without a key
-- (only punctuation) or with control characters are skipped. Called by the episode, remember, correct, dedup and
-- consolidation paths (supabase/functions/_shared/entities.ts).
create or replace function public.link_memory_entities(p_links jsonb)
returns integer
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
  v_owner uuid := auth.uid();
  v_links jsonb;
  v_new   integer;
begin
  if v_owner is null then
    raise exception 'link_memory_entities runs as a signed-in tenant' using errcode = '42501';
  end if;
  if p_links is null or jsonb_typeof(p_links) <> 'array' or jsonb_array_length(p_links) > 500 then
    raise exception 'p_links must be a JSON array of at most 500 links' using errcode = '22023';
  end if;
  -- Parsed once: keys computed; names without a key or with control characters dropped.
  select coalesce(jsonb_agg(jsonb_build_object(
           'memory_id', l ->> 'memory_id', 'name', left(btrim(l ->> 'name'), 200), 'type', l ->> 'type',
           'mention', left(coalesce(nullif(btrim(l ->> 'mention'), ''), btrim(l ->> 'name')), 200),
           'confidence', coalesce((l ->> 'confidence')::real, 1), 'source', coalesce(l ->> 'source', 'rules'),
           'key', public.memory_entity_key(l ->> 'name'))), '[]'::jsonb)
    into v_links
    from jsonb_array_elements(p_links) as l
   where public.memory_entity_key(l ->> 'name') <> '' and (l ->> 'name') !~ '[[:cntrl:]]';

  -- 1. keys no entity answers to become entities (a concurrent insert of the same name wins quietly)
  with unknown as materialized (
    select k.key
      from (select distinct r.key from jsonb_to_recordset(v_links) as r(key text)) k
     where public.memory_entity_resolve(v_owner, k.key) is null
  )
  insert into public.memory_entities (owner_id, canonical_name, entity_type)
  select distinct on (r.key) v_owner, r.name, r.type
    from jsonb_to_recordset(v_links) as r(name text, type text, confidence real, key text)
    join unknown u on u.key = r.key
   order by r.key, r.confidence desc, r.name
  on conflict (owner_id, normalized_name) do nothing;

  -- 2. resolve each key once, link, and count the new mentions
  with keys as materialized (
    select k.key, public.memory_entity_resolve(v_owner, k.key) as entity_id
      from (select distinct r.key from jsonb_to_recordset(v_links) as r(key text)) k
  ),
  linked as (
    insert into public.memory_entity_links (owner_id, memory_id, entity_id, mention, confidence, source)
    select distinct on (r.memory_id, k.entity_id) v_owner, r.memory_id, k.entity_id, r.mention, r.confidence, r.source
      from jsonb_to_recordset(v_links) as r(memory_id uuid, mention text, confidence real, source text, key text)
      join keys k on k.key = r.key
     where k.entity_id is not null
     order by r.memory_id, k.entity_id, r.confidence desc
    on conflict (memory_id, entity_id) do nothing
    returning entity_id
  ),
  counted as (
    update public.memory_entities e
       set mention_count = e.mention_count + c.n,
           last_seen_at = greatest(e.last_seen_at, now())
      from (select l.entity_id, count(*)::integer as n from linked l group by l.entity_id) c
     where e.id = c.entity_id
    returning 1
  )
  select count(*)::integer into v_new from linked;
  return v_new;
end;
$$;
revoke all on function public.link_memory_entities(jsonb) from public, anon;
grant execute on function public.link_memory_entities(jsonb) to authenticated, service_role;
