-- A memory written before migration 20261208600000 with a run of more than 128 characters kept the
-- words of the whole run; migration 20261209000000 derives them again (as the content trigger
-- does now), writing nothing else.
begin;
select plan(7);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace, embedding, embedding_model) values
  ('73000000-0000-4000-8000-0000000000a1', '73000000-0000-4000-8000-000000000001',
   'The signed download link is https://cdn.example.com/' || repeat('k', 150) || ' and expires daily', 'semantic',
   'devai/project/p/notes', tests.embedding(array[0.5, 0.5]::real[]), 'm'),
  ('73000000-0000-4000-8000-0000000000a2', '73000000-0000-4000-8000-000000000001',
   'Short words only, nothing long here', 'semantic', 'devai/project/p/notes', tests.embedding(array[0.5, 0.6]::real[]), 'm');

-- The words as the trigger derived them before 20261208600000: the whole run parsed.
alter table public.devai_memories disable trigger devai_memories_derive_content;
update public.devai_memories
   set fts = to_tsvector('english', content) || array_to_tsvector(public.memory_identifier_lexemes(content))
 where id = '73000000-0000-4000-8000-0000000000a1';
alter table public.devai_memories enable trigger devai_memories_derive_content;
select isnt((select fts from public.devai_memories where id = '73000000-0000-4000-8000-0000000000a1'),
            public.memory_content_fts((select content from public.devai_memories where id = '73000000-0000-4000-8000-0000000000a1')),
            'setup: the long-run memory holds the old words');

create temporary table before_rederive on commit drop as
  select id, updated_at, (select count(*) from public.memory_history h where h.memory_id = m.id) as history
    from public.devai_memories m where owner_id = '73000000-0000-4000-8000-000000000001';

select is(memory_private.derive_long_run_words_again(), 1, 'only the memory whose words are old is written');
select is((select fts from public.devai_memories where id = '73000000-0000-4000-8000-0000000000a1'),
          public.memory_content_fts((select content from public.devai_memories where id = '73000000-0000-4000-8000-0000000000a1')),
          'its words are today''s derivation');
select is((select fts_scoped from public.devai_memories where id = '73000000-0000-4000-8000-0000000000a1'),
          (select array_to_tsvector(array(select memory_private.keyword_scope_key(m.owner_id, memory_private.keyword_scope(m.namespace)) || ':' || l
                                            from unnest(tsvector_to_array(m.fts)) l))
             from public.devai_memories m where m.id = '73000000-0000-4000-8000-0000000000a1'),
          'its scoped words are derived from them');
select is((select count(*)::int from public.devai_memories m join before_rederive b using (id)
            where m.updated_at is distinct from b.updated_at
               or (select count(*) from public.memory_history h where h.memory_id = m.id) <> b.history), 0,
          'no updated_at and no history row written');
select is(memory_private.derive_long_run_words_again(), 0, 'a second run writes nothing');
select ok(not has_function_privilege('authenticated', 'memory_private.derive_long_run_words_again()', 'execute'),
          'tenants cannot run it');

select * from finish();
rollback;
