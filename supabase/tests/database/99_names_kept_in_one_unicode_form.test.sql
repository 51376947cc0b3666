-- A name and its canonically equivalent spelling are one name (migration 20261210400000): rows
-- stored before it with a namespace, project or entity name in NFD are rewritten in NFC by
-- memory_private.rewrite_names_in_nfc, each rename listed for the operator; a namespace or project
-- in another form is refused from then on; entity names and the scope prefixes are read in NFC.
-- 한글 in NFD is conjoining jamo (letters only: the API took it as another project); café in NFD
-- is e + U+0301.
begin;
select plan(19);

-- Rows as a writer stored them before the migration: the checks it added are lifted for the seed.
alter table public.devai_memories drop constraint devai_memories_namespace_nfc;
alter table public.memory_proposals drop constraint memory_proposals_namespace_nfc;
alter table public.memory_sessions drop constraint memory_sessions_names_nfc;
alter table public.context_prefetch drop constraint context_prefetch_project_nfc;

insert into public.devai_memories (id, owner_id, content, memory_type, namespace, embedding, embedding_model)
values ('73000000-0000-4000-8000-0000000000a1', '73000000-0000-4000-8000-00000000000a', 'Deploys go through the staging lane',
        'semantic', normalize('devai/project/한글/deploy', nfd), tests.embedding(array[1, 0]::real[]), 'm'),
       ('73000000-0000-4000-8000-0000000000a2', '73000000-0000-4000-8000-00000000000a', 'The API answers in JSON',
        'semantic', 'devai/project/한글', tests.embedding(array[0, 1]::real[]), 'm'),
       ('73000000-0000-4000-8000-0000000000b1', '73000000-0000-4000-8000-00000000000b', 'Tests run on Postgres',
        'semantic', normalize('devai/user/café', nfd), tests.embedding(array[1, 1]::real[]), 'm');
insert into public.memory_sessions (owner_id, session_id, project, namespace)
values ('73000000-0000-4000-8000-00000000000a', 's-nfd', normalize('한글', nfd), normalize('devai/project/한글', nfd));
insert into public.memory_proposals (owner_id, field, content, namespace, expires_at)
values ('73000000-0000-4000-8000-00000000000a', 'city', 'Lives in Séoul', normalize('devai/user/café', nfd), now() + interval '1 day');
insert into public.context_prefetch (owner_id, session_id, signal_key, memory_ids, refs, confidence, project)
values ('73000000-0000-4000-8000-00000000000a', 's-nfd', 'file:a.ts', '{}', '[]', 0.5, normalize('한글', nfd)),
       ('73000000-0000-4000-8000-00000000000a', 's-nfd', 'file:a.ts', '{}', '[]', 0.9, '한글');
alter table public.memory_entities disable trigger memory_entities_derive_keys;
insert into public.memory_entities (id, owner_id, canonical_name, entity_type, aliases, normalized_name)
values ('73000000-0000-4000-8000-0000000000e1', '73000000-0000-4000-8000-00000000000a', normalize('Café API', nfd), 'service',
        array[normalize('café', nfd), 'café', 'cafe-api'], public.memory_entity_key('Café API'));
alter table public.memory_entities enable trigger memory_entities_derive_keys;

select ok(memory_private.rewrite_names_in_nfc() >= 8, 'the rewrite counts the names it listed');
select is((select count(*)::integer from memory_private.name_form_changes where owner_id::text like '73000000-%'), 8,
          'eight names in NFD are listed (a session''s project and namespace are two)');
select is((select array_agg(namespace order by id::text) from public.devai_memories where id::text like '73000000-%'),
          array['devai/project/한글/deploy', 'devai/project/한글', 'devai/user/café'],
          'memories: their namespaces are in NFC');
select is((select (sum(memories))::integer from memory_private.memory_scope_counts
            where owner_id = '73000000-0000-4000-8000-00000000000a' and scope = 'devai/project/한글'),
          2, 'the project in both forms is one scope: its count holds both memories');
select is((select count(*)::integer from public.memory_history
            where memory_id = '73000000-0000-4000-8000-0000000000a1' and event = 'UPDATE'
              and meta ->> 'namespace' = 'devai/project/한글/deploy'),
          1, 'a memory moved has a history row naming its NFC namespace');
select is((select count(*)::integer from public.memory_history where memory_id = '73000000-0000-4000-8000-0000000000a2' and event = 'UPDATE'),
          0, 'a memory already in NFC is not written');
select results_eq(
  $$select table_name, column_name, name_now, row_count, joined_existing from memory_private.name_form_changes
     where owner_id = '73000000-0000-4000-8000-00000000000a' and table_name = 'devai_memories'$$,
  $$values ('devai_memories', 'namespace', 'devai/project/한글/deploy', 1, true)$$,
  'the rename is listed: joined_existing, the tenant had that project in NFC');
select results_eq(
  $$select joined_existing from memory_private.name_form_changes
     where owner_id = '73000000-0000-4000-8000-00000000000b'$$,
  $$values (false)$$,
  'another tenant''s rename is its own, joined with nothing');
select is((select array[project, namespace] from public.memory_sessions where session_id = 's-nfd'),
          array['한글', 'devai/project/한글'], 'sessions: project and namespace in NFC');
select is((select namespace from public.memory_proposals where owner_id = '73000000-0000-4000-8000-00000000000a'),
          'devai/user/café', 'proposals: namespace in NFC');
select is((select project from public.context_prefetch where session_id = 's-nfd'), '한글', 'the prefetch cache: project in NFC');
select is((select confidence from public.context_prefetch where session_id = 's-nfd'), 0.9::real,
          'a prediction cached under both spellings (the project is in its key): the NFC one is kept');
select is((select array[canonical_name] || aliases from public.memory_entities where id = '73000000-0000-4000-8000-0000000000e1'),
          array['Café API', 'café', 'cafe-api'], 'entities: name in NFC, an alias sent in both forms kept once');
select is((select joined_existing from memory_private.name_form_changes where table_name = 'memory_entities' and column_name = 'aliases'),
          true, 'the alias in both forms is listed as joined');

-- From now on: another form is refused (the checks again), entity names are kept in NFC.
alter table public.devai_memories add constraint devai_memories_namespace_nfc check (namespace is nfc normalized);
select throws_ok(
  $$insert into public.devai_memories (owner_id, content, memory_type, namespace)
    values ('73000000-0000-4000-8000-00000000000b', 'x', 'semantic', normalize('devai/user/café', nfd))$$,
  '23514', null, 'a namespace in NFD is refused');
alter table public.memory_sessions add constraint memory_sessions_names_nfc
  check (namespace is nfc normalized and (project is null or project is nfc normalized));
select throws_ok(
  $$insert into public.memory_sessions (owner_id, session_id, project, namespace)
    values ('73000000-0000-4000-8000-00000000000b', 's2', normalize('한글', nfd), 'devai/project/한글')$$,
  '23514', null, 'a session''s project in NFD is refused');
insert into public.memory_entities (owner_id, canonical_name, entity_type, aliases)
values ('73000000-0000-4000-8000-00000000000b', normalize('Zoë', nfd), 'person', array[normalize('zoë', nfd)]);
select is((select array[canonical_name] || aliases from public.memory_entities where owner_id = '73000000-0000-4000-8000-00000000000b'),
          array['Zoë', 'zoë'], 'an entity written in NFD is stored in NFC');
select is(public.memory_scope_prefixes(array[normalize('devai/project/한글', nfd)]), array['devai/project/한글/'],
          'memory_scope_prefixes reads a scope in NFC');
select is(public.context_scope_prefixes(array[normalize('devai/user/café/', nfd)]), array['devai/user/café/'],
          'context_scope_prefixes reads a scope in NFC');

select * from finish();
rollback;
