-- A text and its canonically equivalent spelling (NFC "café", one letter é; NFD, e + U+0301) are one
-- text (migration 20261209400000): the same duplicate key (content_hash) and the same words, for a
-- memory's content (the content trigger) and a query's terms alike. Stored content is kept as sent.
begin;
select plan(5);

select is(memory_private.content_hash(normalize('Le café ouvre à huit heures', nfd)),
          memory_private.content_hash('Le café ouvre à huit heures'),
          'content_hash: a text in NFD has the key of its NFC form');
select is(public.memory_fts_text(normalize('Le café ouvre', nfd)), 'Le café ouvre',
          'the parser is given the text in NFC');

insert into public.devai_memories (id, owner_id, content, memory_type, namespace, embedding, embedding_model)
values ('72000000-0000-4000-8000-0000000000b1', '72000000-0000-4000-8000-00000000000e',
        normalize('Le café ouvre après le déploiement', nfd), 'semantic', 'devai/project/cafe',
        tests.embedding(array[0.5, 0.5]::real[]), 'm');
select is((select fts from public.devai_memories where id = '72000000-0000-4000-8000-0000000000b1'),
          public.memory_content_fts('Le café ouvre après le déploiement'),
          'a memory written in NFD has the words of its NFC form');
select is((select content from public.devai_memories where id = '72000000-0000-4000-8000-0000000000b1'),
          normalize('Le café ouvre après le déploiement', nfd), 'its content is stored as sent');
select is((select array_agg(query::text order by term) from public.memory_keyword_terms(normalize('café déploiement', nfd))),
          (select array_agg(query::text order by term) from public.memory_keyword_terms('café déploiement')),
          'a query in NFD has the terms of its NFC form');

select * from finish();
rollback;
