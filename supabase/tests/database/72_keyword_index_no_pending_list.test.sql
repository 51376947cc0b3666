-- The GIN indexes searches read (keyword, entity aliases) take a new memory's entries into the
-- index proper at once: no pending list that every search would read in full, term by term, until
-- the next VACUUM.
begin;
select plan(4);

select is((select reloptions from pg_class where oid = 'public.devai_memories_fts_scoped'::regclass),
          array['fastupdate=off'], 'the keyword index has no pending list');
select is((select reloptions from pg_class where oid = 'public.memory_entities_alias_keys'::regclass),
          array['fastupdate=off'], 'the entity alias index has no pending list');

insert into public.devai_memories (owner_id, content, memory_type, namespace, embedding, embedding_model)
values ('72000000-0000-4000-8000-00000000000d'::uuid, 'Deploys go through fly deploy --remote-only.', 'semantic',
        'devai/project/pending', tests.embedding(array[0.5, 0.5]::real[]), 'm');
-- gin_clean_pending_list returns the pending pages it merged: none, the insert went to the index.
select is(pg_catalog.gin_clean_pending_list('public.devai_memories_fts_scoped'::regclass), 0::bigint,
          'a new memory''s keyword entries are not left in a pending list');

select tests.authenticate_as('72000000-0000-4000-8000-00000000000d');
select is((select count(*) from public.hybrid_search('remote-only deploys', null, array['devai/project/pending'], 5, 0.1, 'm',
                                                      '72000000-0000-4000-8000-00000000000d'::uuid, search_mode => 'keyword')),
          1::bigint, 'and the keyword search finds it');

select * from finish();
rollback;
