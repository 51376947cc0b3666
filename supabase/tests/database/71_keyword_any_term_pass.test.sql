-- Keyword search when every query term is common (more than keyword_df_cap memories each): the
-- memories matching all the terms come first, then, while fewer than the cap, those matching any
-- of them. No memory here has both words: the any-term pass must still find some.
begin;
select plan(3);

insert into public.devai_memories (owner_id, content, memory_type, namespace, embedding, embedding_model)
select '71000000-0000-4000-8000-00000000000d', format('Note %s mentions %s only.', i, w), 'semantic',
       'devai/project/common', tests.embedding(array[0.5, 0.5]::real[]), 'm'
  from generate_series(1, 4) i, unnest(array['alpha', 'beta']) w;

select tests.authenticate_as('71000000-0000-4000-8000-00000000000d');

create temp table postings on commit drop as
select p.term_df, p.candidates
  from memory_search.keyword_postings('71000000-0000-4000-8000-00000000000d', array['devai/project/common/'],
                                      array['alpha'::tsquery, 'beta'::tsquery], 2, 50) p;
grant select on postings to authenticated;

select is((select term_df from postings), array[3, 3], 'both terms are common (counted to the cap + 1)');
select is((select cardinality(candidates) from postings), 2, 'the any-term pass brings memories with either word, up to the cap');
select is(
  (select count(*)::int from public.devai_memories m, postings p
    where m.id = any (p.candidates) and (m.content like '%alpha%' or m.content like '%beta%')),
  2, 'each one matches a query term');

select * from finish();
rollback;
