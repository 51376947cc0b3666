-- Entity keys fold letters alike whatever the database's locale (migration 20261130400000,
-- docs/graph.md#entities): public.memory_entity_key gives the same key for a name collated "C" (what
-- lower() and [:alnum:] saw in a database created with the plain C locale) as for the database's
-- default, and memory_private.rekey_entities re-derives keys stored by the earlier function, merging
-- the entities of a tenant whose names now share a key. Fixtures are written as the table owner.
begin;
select plan(12);

select results_eq(
  $$select public.memory_entity_key(n collate "C") collate "default" from unnest(array['Zoë', 'ZOË', 'Zoé', 'JÜRGEN', 'Ærø',
    'İstanbul', 'ＮＯＤＥ.ＪＳ', '東京', 'ΟΔΥΣΣΕΥΣ', 'C++', 'C#']) with ordinality as x(n, o) order by o$$,
  $$values ('zoë'), ('zoë'), ('zoé'), ('jürgen'), ('ærø'), ('istanbul'), ('nodejs'), ('東京'), ('οδυσσευσ'),
    ('c++'), ('c#')$$,
  'Unicode letters fold and stay under the C collation: no letter dropped, no ASCII-only folding');
select is(
  (select count(*)::int from unnest(array['Zoë', 'Jürgen', 'Ærø', 'İx', '東京']) n
    where (public.memory_entity_key(n collate "C") collate "default") is distinct from public.memory_entity_key(n)),
  0, 'the key does not depend on the collation it is called with');

-- Entities as the earlier key stored them in a C-locale database (the derive trigger off, the keys
-- written as it wrote them). Tenant A: 'İx' ('x': İ dropped) and 'ix' are one entity now, 'Zoë'
-- ('zo') is re-keyed. Tenant B: 'İx' ('x', stored first) now takes 'ix', the old key of 'İiİx' (now
-- 'iiix'): one statement re-keying 'İx' first fails on the unique key, the rounds re-key both.
alter table public.memory_entities disable trigger memory_entities_derive_keys;
insert into public.devai_memories (id, owner_id, content, memory_type, namespace, priority, source, importance)
select ('95e00000-0000-4000-8000-0000000000a' || n)::uuid, '95e00000-0000-4000-8000-00000000000a', 'memory ' || n,
       'semantic', 'devai/user/notes', 'medium', 'discovery', 3
  from generate_series(1, 2) n;
insert into public.memory_entities
  (id, owner_id, canonical_name, entity_type, normalized_name, aliases, mention_count, first_seen_at, attributes)
values ('95e00000-0000-4000-8000-0000000000e1', '95e00000-0000-4000-8000-00000000000a', 'İx', 'tool', 'x', '{}', 3, now() - interval '2 days', '{"kept": 1}'),
       ('95e00000-0000-4000-8000-0000000000e2', '95e00000-0000-4000-8000-00000000000a', 'ix', 'tool', 'ix', '{IX-tool}', 2, now() - interval '1 day', '{"kept": 2, "added": 2}'),
       ('95e00000-0000-4000-8000-0000000000e3', '95e00000-0000-4000-8000-00000000000a', 'Zoë', 'person', 'zo', '{}', 1, now(), '{}'),
       ('95e00000-0000-4000-8000-0000000000f2', '95e00000-0000-4000-8000-00000000000b', 'İx', 'tool', 'x', '{}', 1, now(), '{}'),
       ('95e00000-0000-4000-8000-0000000000f1', '95e00000-0000-4000-8000-00000000000b', 'İiİx', 'tool', 'ix', '{}', 1, now(), '{}');
insert into public.memory_entity_links (owner_id, memory_id, entity_id, mention)
values ('95e00000-0000-4000-8000-00000000000a', '95e00000-0000-4000-8000-0000000000a1', '95e00000-0000-4000-8000-0000000000e1', 'İx'),
       ('95e00000-0000-4000-8000-00000000000a', '95e00000-0000-4000-8000-0000000000a1', '95e00000-0000-4000-8000-0000000000e2', 'ix'),
       ('95e00000-0000-4000-8000-00000000000a', '95e00000-0000-4000-8000-0000000000a2', '95e00000-0000-4000-8000-0000000000e2', 'ix');
alter table public.memory_entities enable trigger memory_entities_derive_keys;

select results_eq($$select merged, rekeyed from memory_private.rekey_entities()$$, $$values (1, 3)$$,
  'one entity merged away, three re-keyed');
select is((select count(*)::int from public.memory_entities where id = '95e00000-0000-4000-8000-0000000000e2'), 0,
  'the entity seen later is merged into the one seen first');
select results_eq(
  $$select memory_id::text from public.memory_entity_links
     where entity_id = '95e00000-0000-4000-8000-0000000000e1' order by memory_id$$,
  $$values ('95e00000-0000-4000-8000-0000000000a1'), ('95e00000-0000-4000-8000-0000000000a2')$$,
  'it takes the links of the other (a memory linked to both: one link)');
select results_eq(
  $$select normalized_name, aliases, mention_count, attributes from public.memory_entities
     where id = '95e00000-0000-4000-8000-0000000000e1'$$,
  $$values ('ix'::text, '{IX-tool}'::text[], 5, '{"kept": 1, "added": 2}'::jsonb)$$,
  'its key is the new one, the other''s names are aliases (one per key), counts add up, its attributes win');
select is(public.memory_entity_resolve('95e00000-0000-4000-8000-00000000000a', 'ixtool'),
  '95e00000-0000-4000-8000-0000000000e1'::uuid, 'an alias of the merged-away entity resolves to the survivor');
select is((select normalized_name from public.memory_entities where id = '95e00000-0000-4000-8000-0000000000e3'),
  'zoë', 'a letter the C locale dropped is in the key');
select results_eq(
  $$select canonical_name, normalized_name from public.memory_entities
     where owner_id = '95e00000-0000-4000-8000-00000000000b' order by normalized_name$$,
  $$values ('İiİx'::text, 'iiix'::text), ('İx', 'ix')$$,
  'a new key that was another''s old one is re-derived too');
select is((select count(*)::int from public.memory_entities
            where normalized_name is distinct from public.memory_entity_key(canonical_name)
               or alias_keys is distinct from public.memory_entity_alias_keys(owner_id, aliases)), 0,
  'no stale key is left');
select results_eq($$select merged, rekeyed from memory_private.rekey_entities()$$, $$values (0, 0)$$,
  'a second run changes nothing');
select is(has_function_privilege('authenticated', 'memory_private.rekey_entities()', 'execute'), false,
  'tenants cannot run it');

select * from finish();
rollback;
