-- One name, one form: a project, a namespace and an entity's name are kept in NFC.
-- Migration 20261209400000 made a memory's text compare in NFC; names were still compared as
-- sent. A project or namespace segment typed on macOS arrives in NFD, and the two forms were two
-- things: `한글` in NFD (conjoining jamo, all letters) named another project, another scope, than
-- `한글` in NFC, without a word to either client, and `café` in NFD (e + U+0301, a mark, not a
-- letter) was refused as "use letters, digits …" where `café` in NFC was taken.
-- Now the API reads every name a request gives in NFC before it checks or compares it
-- (_shared/name-form.ts), and this migration brings stored names to NFC and makes NFC the rule:
--   * devai_memories.namespace, memory_proposals.namespace, memory_sessions.namespace and
--     .project, context_prefetch.project: rewritten in NFC, then a check refuses another form.
--     A memory moved so gets the history row and change-log entry of any namespace change (its
--     updated_at moves, its scope counts and keyword scope follow by the usual triggers).
--   * memory_entities.canonical_name and .aliases: kept in NFC by the key trigger. Their keys were
--     NFKC already (public.memory_entity_key), so no two entities differ only in form.
--   * public.memory_scope_prefixes and public.context_scope_prefixes read the scopes they are
--     given in NFC.
-- Where a tenant had a name in both forms, the two become one scope (nothing is deleted: each
-- memory keeps its id, text and history). Every rename is listed in
-- memory_private.name_form_changes for the operator (docs/operations.md#names-in-one-form).
-- pgTAP 99_names_kept_in_one_unicode_form; tests/name_forms.test.ts.

-- What this migration renamed: one row per tenant, table, column and name as it was stored.
create table memory_private.name_form_changes (
  id              bigint generated always as identity primary key,
  owner_id        uuid not null,
  table_name      text not null,
  column_name     text not null,
  name_as_stored  text not null,
  name_now        text not null,
  row_count       integer not null,
  joined_existing boolean not null,
  changed_at      timestamptz not null default now()
);
comment on table memory_private.name_form_changes is
  'Names migration 20261210400000 rewrote in NFC: per tenant, table and column, the name as it was stored, as it is now, the rows renamed, and joined_existing when the tenant already had rows under the NFC name (two scopes, or two spellings of a project, became one). Read by the operator: docs/operations.md#names-in-one-form.';
alter table memory_private.name_form_changes enable row level security;
create policy "Service role can read name form changes" on memory_private.name_form_changes
  for select to service_role using (true);
grant select on memory_private.name_form_changes to service_role;

-- Derives normalized_name and alias_keys from canonical_name, aliases and owner_id (a value written
-- directly is replaced), after putting the name and the aliases in NFC: an alias given in both
-- forms is kept once, where it first came. Every entity is written through it (link_memory_entities,
-- for the rules' and the worker's extraction's names). Called by the trigger
-- memory_entities_derive_keys.
create or replace function memory_private.derive_entity_keys()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  new.canonical_name := normalize(new.canonical_name, nfc);
  if exists (select 1 from unnest(new.aliases) as a where a is not nfc normalized) then
    new.aliases := coalesce((select array_agg(x.a order by x.ord)
                               from (select normalize(a, nfc) as a, min(ord) as ord
                                       from unnest(new.aliases) with ordinality as u(a, ord)
                                      group by 1) x), '{}');
  end if;
  new.normalized_name := public.memory_entity_key(new.canonical_name);
  new.alias_keys := public.memory_entity_alias_keys(new.owner_id, new.aliases);
  return new;
end;
$$;
revoke all on function memory_private.derive_entity_keys() from public;

-- Lists in memory_private.name_form_changes, then rewrites in NFC, every stored name in another
-- form: namespaces of memories (listed first: joined_existing when another memory of the tenant
-- already had the NFC name's scope, global, user or the project, so retrieval now reads the two
-- together), proposals and sessions, sessions' and the prefetch cache's projects, entities' names
-- and aliases. Returns the names listed. Run once by this migration (pgTAP
-- 99_names_kept_in_one_unicode_form runs it on rows written in NFD).
create or replace function memory_private.rewrite_names_in_nfc()
returns integer
language plpgsql
set search_path = ''
as $$
declare
  v_table  text;
  v_column text;
  v_listed integer;
begin
  insert into memory_private.name_form_changes (owner_id, table_name, column_name, name_as_stored, name_now, row_count, joined_existing)
  select m.owner_id, 'devai_memories', 'namespace', m.namespace, normalize(m.namespace, nfc), count(*)::integer,
         exists (select 1 from public.devai_memories o
                  where o.owner_id = m.owner_id and o.namespace is nfc normalized
                    and memory_private.keyword_scope(o.namespace) = memory_private.keyword_scope(normalize(m.namespace, nfc)))
    from public.devai_memories m
   where m.namespace is not nfc normalized
   group by m.owner_id, m.namespace;

  update public.devai_memories
     set namespace = normalize(namespace, nfc)
   where namespace is not nfc normalized;

  -- Proposals, sessions and the prefetch cache (a prediction kept for a project, read by that
  -- project's assemble only): joined_existing when a row of the tenant had the NFC name already.
  for v_table, v_column in values ('memory_proposals', 'namespace'), ('memory_sessions', 'project'),
                                  ('memory_sessions', 'namespace'), ('context_prefetch', 'project') loop
    execute format(
      'insert into memory_private.name_form_changes (owner_id, table_name, column_name, name_as_stored, name_now, row_count, joined_existing)
       select x.owner_id, %1$L, %2$L, x.%2$I, normalize(x.%2$I, nfc), count(*)::integer,
              exists (select 1 from public.%1$I o where o.owner_id = x.owner_id and o.%2$I = normalize(x.%2$I, nfc))
         from public.%1$I x
        where x.%2$I is not nfc normalized
        group by x.owner_id, x.%2$I', v_table, v_column);
    if v_table = 'context_prefetch' then
      -- The cache's key holds the project: of a prediction cached under both spellings, the one in
      -- NFC stays (else the first), the other is dropped (context/predict makes it again).
      delete from public.context_prefetch x
       where x.project is not nfc normalized
         and exists (select 1 from public.context_prefetch o
                      where o.owner_id = x.owner_id and o.session_id = x.session_id and o.signal_key = x.signal_key
                        and o.ctid <> x.ctid and normalize(o.project, nfc) = normalize(x.project, nfc)
                        and (o.project is nfc normalized or o.ctid < x.ctid));
    end if;
    execute format('update public.%1$I set %2$I = normalize(%2$I, nfc) where %2$I is not nfc normalized', v_table, v_column);
  end loop;

  insert into memory_private.name_form_changes (owner_id, table_name, column_name, name_as_stored, name_now, row_count, joined_existing)
  select c.owner_id, 'memory_entities', c.col, c.name, normalize(c.name, nfc), count(*)::integer, bool_or(c.joined)
    from (select e.owner_id, 'canonical_name' as col, e.canonical_name as name, false as joined
            from public.memory_entities e
           where e.canonical_name is not nfc normalized
          union all
          -- joined: the entity has the alias in NFC too; it is kept once (the keys, NFKC, were one)
          select e.owner_id, 'aliases', a, normalize(a, nfc) = any (e.aliases)
            from public.memory_entities e
           cross join lateral unnest(e.aliases) as a
           where a is not nfc normalized) c
   group by c.owner_id, c.col, c.name;

  update public.memory_entities
     set canonical_name = canonical_name
   where canonical_name is not nfc normalized
      or exists (select 1 from unnest(aliases) as a where a is not nfc normalized);

  select count(*)::integer into v_listed from memory_private.name_form_changes where changed_at = now();
  return v_listed;
end;
$$;
revoke all on function memory_private.rewrite_names_in_nfc() from public;

select memory_private.rewrite_names_in_nfc();

-- The rule from now on: a writer that skipped the API's reading is refused, not stored as a
-- second scope.
alter table public.devai_memories
  add constraint devai_memories_namespace_nfc check (namespace is nfc normalized);
alter table public.memory_proposals
  add constraint memory_proposals_namespace_nfc check (namespace is nfc normalized);
alter table public.memory_sessions
  add constraint memory_sessions_names_nfc check (namespace is nfc normalized and (project is null or project is nfc normalized));
alter table public.context_prefetch
  add constraint context_prefetch_project_nfc check (project is nfc normalized);

-- The scopes as '/'-terminated prefixes, each once, in NFC (docs/context.md). Called by context
-- assembly's reads (public.context_candidates, public.context_open_contradictions).
create or replace function public.context_scope_prefixes(match_namespaces text[])
returns text[]
language plpgsql
immutable
parallel safe
set search_path = ''
as $$
begin
  return (
    select coalesce(array_agg(distinct rtrim(normalize(s, nfc), '/') || '/'), '{}')
      from unnest(coalesce(match_namespaces, '{}'::text[])) as s
     where s is not null and rtrim(s, '/') <> '');
end;
$$;

-- The scopes as '/'-terminated prefixes in NFC (null or empty: no scope filter), shared by the
-- graph functions: 'devai/project/a' matches itself and 'devai/project/a/...', never
-- 'devai/project/ab'.
create or replace function public.memory_scope_prefixes(p_scopes text[])
returns text[]
language plpgsql
immutable
parallel safe
set search_path = ''
as $$
begin
  return (
    select case when cardinality(p) = 0 then null else p end
      from (select coalesce(array_agg(distinct rtrim(normalize(s, nfc), '/') || '/'), '{}') as p
              from unnest(coalesce(p_scopes, '{}'::text[])) as s
             where s is not null and rtrim(s, '/') <> '') as x);
end;
$$;

comment on column public.devai_memories.namespace is 'Where the memory is filed (<root>/global|user|project/<project>/…), in NFC (devai_memories_namespace_nfc): a name sent in another form is read in NFC by the API (_shared/name-form.ts).';
