-- Postgres's text search parser is quadratic in a run of words joined by `_` or `@` (`a_a_a_…`:
-- 4,000 characters 0.27 s, 20,000 7.8 s): the text it is given has a space after every 128
-- characters of a run without a blank (public.memory_fts_text, migration 20261208600000), for a
-- memory's words (the content trigger, the as-of readers) and a query's terms alike, and for an
-- entity's summary and the entity lookup's words (migration 20261209200100). Text whose runs are
-- shorter is parsed as it was.
begin;
select plan(13);

select is(public.memory_fts_text('Deploy with `fly deploy --app acme_web` from src/app/main.ts'),
          'Deploy with `fly deploy --app acme_web` from src/app/main.ts', 'prose and code are given as they are');
select is(public.memory_fts_text(repeat('a', 128) || ' ' || repeat('b', 128)), repeat('a', 128) || ' ' || repeat('b', 128),
          'a run of 128 characters is given whole');
select is((select max(length(r)) from regexp_split_to_table(public.memory_fts_text(repeat('a_', 2000) || ' ok ' || repeat('@a1', 1000)), '\s+') r),
          128, 'no run the parser is given is longer than 128 characters');
select is(replace(public.memory_fts_text(repeat('a_', 2000) || ' ok ' || repeat('@a1', 1000)), ' ', ''),
          replace(repeat('a_', 2000) || ' ok ' || repeat('@a1', 1000), ' ', ''), 'only spaces are added');

insert into public.devai_memories (id, owner_id, content, memory_type, namespace, embedding, embedding_model)
values ('72000000-0000-4000-8000-0000000000a1', '72000000-0000-4000-8000-00000000000d',
        'deploy ' || repeat('a_', 1800) || ' ' || repeat('x', 300) || ' nightly', 'semantic', 'devai/project/runs',
        tests.embedding(array[0.5, 0.5]::real[]), 'm');
select is((select fts from public.devai_memories where id = '72000000-0000-4000-8000-0000000000a1'),
          to_tsvector('english', public.memory_fts_text('deploy ' || repeat('a_', 1800) || ' ' || repeat('x', 300) || ' nightly'))
            || array_to_tsvector(public.memory_identifier_lexemes('deploy ' || repeat('a_', 1800) || ' ' || repeat('x', 300) || ' nightly')),
          'a memory''s words are derived from the text with its long runs cut');
select ok((select fts @@ to_tsquery('english', 'nightly & deploy') from public.devai_memories
            where id = '72000000-0000-4000-8000-0000000000a1'), 'the words around the run are kept');

update public.devai_memories set content = 'the release runs nightly', updated_at = now() + interval '1 second'
 where id = '72000000-0000-4000-8000-0000000000a1';
select is(public.memory_content_fts('the release runs nightly'),
          to_tsvector('english', 'the release runs nightly') || array_to_tsvector(public.memory_identifier_lexemes('the release runs nightly')),
          'memory_content_fts is the trigger''s derivation of prose');
select is((select fts from public.devai_memories where id = '72000000-0000-4000-8000-0000000000a1'),
          public.memory_content_fts('the release runs nightly'), 'the trigger derives through memory_content_fts');

select ok((select array_agg(kind || ':' || term) from public.memory_keyword_terms('deploy ' || repeat('a_', 10000) || ' "nightly build" ' || repeat('@a1', 100) || ' -' || repeat('x', 300)))
          @> array['phrase:nightly build', 'word:deploy', 'exclude:' || repeat('x', 300)],
          'a query''s terms in a text of long runs: its phrase, its words and its exclusion');
select is((select query from public.memory_keyword_terms('deploy -' || repeat('x', 300)) where kind = 'exclude'),
          plainto_tsquery('english', repeat('x', 128) || ' ' || repeat('x', 128) || ' ' || repeat('x', 44)),
          'an exclusion is parsed with its long run cut, as a memory''s content is');
select is(public.memory_entity_search_terms('72000000-0000-4000-8000-00000000000d', 'deploy.sh', 'runs ' || repeat('x', 300) || ' nightly'),
          public.memory_entity_search_terms('72000000-0000-4000-8000-00000000000d', 'deploy.sh',
                                            'runs ' || repeat('x', 128) || ' ' || repeat('x', 128) || ' ' || repeat('x', 44) || ' nightly'),
          'an entity''s summary is parsed with its long runs cut, as a memory''s content is');
select is(public.memory_entity_search_terms('72000000-0000-4000-8000-00000000000d', 'deploy.sh', 'Runs the nightly deploy of acme_web.'),
          public.memory_entity_scoped_lexemes(to_tsvector('english', 'Runs the nightly deploy of acme_web.')::text,
                                              '72000000-0000-4000-8000-00000000000d:s:')::tsvector
            || public.memory_entity_search_terms('72000000-0000-4000-8000-00000000000d', 'deploy.sh', null),
          'a summary of short runs gives the words it gave');
insert into public.memory_entities (id, owner_id, canonical_name, entity_type, summary)
values ('72000000-0000-4000-8000-0000000000e1', '72000000-0000-4000-8000-00000000000d', 'deploy.sh', 'file',
        'runs ' || repeat('x', 300) || ' nightly');
select tests.authenticate_as('72000000-0000-4000-8000-00000000000d');
select is((select array_agg(m.matched) from memory_search.entity_matches(auth.uid(), repeat('x', 300), null, 10) m),
          array['summary'], 'a lookup of the long run finds the summary: its words are cut the same way');
select tests.clear_authentication();
select * from finish();
rollback;
