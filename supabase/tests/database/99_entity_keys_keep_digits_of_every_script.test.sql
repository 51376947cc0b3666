-- Review of migration 20261130400000 (entity keys under pg_c_utf8): a database created with a UTF-8
-- libc locale (C.UTF-8, en_US.UTF-8: Supabase's) kept every script's digits in a key ([:alnum:]);
-- pg_c_utf8's [:alnum:] is letters and ASCII digits only. An entity named in Arabic-Indic digits
-- ('٤٠٤', an error code) re-keys to '' and the migration's rekey aborts on
-- memory_entities_name_has_key (the upgrade stops); 'Windows ١١' re-keys to 'windows' and is merged
-- into 'Windows'. Fails on main at 7ec9d6e (all but the first).
begin;
select plan(4);

alter table public.memory_entities disable trigger memory_entities_derive_keys;
insert into public.memory_entities (id, owner_id, canonical_name, entity_type, normalized_name, aliases)
values ('95e10000-0000-4000-8000-0000000000e2', '95e10000-0000-4000-8000-00000000000a', 'Windows ١١', 'tool', 'windows١١', '{}'),
       ('95e10000-0000-4000-8000-0000000000e3', '95e10000-0000-4000-8000-00000000000a', 'Windows', 'tool', 'windows', '{}');
alter table public.memory_entities enable trigger memory_entities_derive_keys;

select lives_ok($$select memory_private.rekey_entities()$$, 'the re-key completes');
select is((select count(*)::int from public.memory_entities where owner_id = '95e10000-0000-4000-8000-00000000000a'), 2,
  '"Windows ١١" and "Windows" stay two entities');

select isnt(public.memory_entity_key('٤٠٤'), '', 'a name in Arabic-Indic digits has a key');
alter table public.memory_entities disable trigger memory_entities_derive_keys;
insert into public.memory_entities (id, owner_id, canonical_name, entity_type, normalized_name, aliases)
values ('95e10000-0000-4000-8000-0000000000e1', '95e10000-0000-4000-8000-00000000000a', '٤٠٤', 'error', '٤٠٤', '{}');
alter table public.memory_entities enable trigger memory_entities_derive_keys;
select lives_ok($$select memory_private.rekey_entities()$$, 'the re-key of a UTF-8 database''s entities completes');

select * from finish();
rollback;
