-- Keyword search when every query term is common (more than keyword_df_cap memories each): the
-- candidates are the memories matching all the terms, never an arbitrary handful of those holding
-- any one of them, in a project's scopes (the scoped lookup) as in a tenant-wide one.
begin;
select plan(8);

insert into public.devai_memories (owner_id, content, memory_type, namespace, embedding, embedding_model)
select '71000000-0000-4000-8000-00000000000d'::uuid, format('Note %s mentions %s only.', i, w), 'semantic',
       'devai/project/common', tests.embedding(array[0.5, 0.5]::real[]), 'm'
  from generate_series(1, 4) i, unnest(array['alpha', 'beta']) w
union all
select '71000000-0000-4000-8000-00000000000d'::uuid, 'Note 1 mentions alpha and beta.', 'semantic',
       'devai/project/common', tests.embedding(array[0.5, 0.5]::real[]), 'm';

select tests.authenticate_as('71000000-0000-4000-8000-00000000000d');

create temp table postings on commit drop as
select s.scope, p.term_df, p.candidates
  from unnest(array['devai/project/common/', 'devai/']) as s(scope)
 cross join lateral memory_search.keyword_postings('71000000-0000-4000-8000-00000000000d', array[s.scope],
                                                   array['alpha'::tsquery, 'beta'::tsquery], 2, 50) p;
grant select on postings to authenticated;

select is((select term_df from postings where scope = 'devai/project/common/'), array[3, 3],
          'both terms are common (counted to the cap + 1)');
select set_eq(
  $$select m.content from public.devai_memories m, postings p
     where p.scope = 'devai/project/common/' and m.id = any (p.candidates)$$,
  array['Note 1 mentions alpha and beta.'],
  'project scope: the memory matching both terms, none matching one (though under the cap)');
select set_eq(
  $$select m.content from public.devai_memories m, postings p
     where p.scope = 'devai/' and m.id = any (p.candidates)$$,
  array['Note 1 mentions alpha and beta.'],
  'tenant-wide: the same');
select is(
  (select cardinality(p.candidates) from memory_search.keyword_postings('71000000-0000-4000-8000-00000000000d',
     array['devai/project/common/'], array['alpha'::tsquery, 'gamma'::tsquery], 2, 50) p),
  2, 'a term matching nothing (gamma) does not empty the list: the common term brings its matches, up to the cap');

-- A scope above the keyed ones (here the tenant's whole memory) is looked up by its namespaces'
-- keys: a rare word's one memory is found without reading the tenant's other rows.
reset role;
insert into public.devai_memories (owner_id, content, memory_type, namespace, embedding, embedding_model)
select '71000000-0000-4000-8000-00000000000d'::uuid, format('Filler %s about nothing special.', i), 'semantic',
       format('devai/project/p%s', i % 3), tests.embedding(array[0.5, 0.5]::real[]), 'm'
  from generate_series(1, 300) i
union all
select '71000000-0000-4000-8000-00000000000d'::uuid, 'The zanzibar flag turns the cache off.', 'semantic',
       'devai/project/p1', tests.embedding(array[0.5, 0.5]::real[]), 'm';
analyze public.devai_memories;
create temp table reads_before on commit drop as
select coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) as n
  from pg_stat_xact_user_tables where relid = 'public.devai_memories'::regclass;
select tests.authenticate_as('71000000-0000-4000-8000-00000000000d');
create temp table wide on commit drop as
select p.candidates from memory_search.keyword_postings('71000000-0000-4000-8000-00000000000d', array['devai/'],
                                                         array['zanzibar'::tsquery], 25, 50) p;
reset role;
create temp table reads_after on commit drop as
select coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) as n
  from pg_stat_xact_user_tables where relid = 'public.devai_memories'::regclass;
select set_eq(
  $$select m.content from public.devai_memories m, wide w where m.id = any (w.candidates)$$,
  array['The zanzibar flag turns the cache off.'],
  'tenant-wide: the rare word''s memory');
select cmp_ok((select n from reads_after) - (select n from reads_before), '<', 50::bigint,
  'tenant-wide: found through the keyword index, not by reading the tenant''s 309 rows');

-- Every project's memory (all projects, 'devai/project'): walked by the same namespace keys; a
-- memory outside the projects (the user's scope) holding the word is not one of them.
reset role;
insert into public.devai_memories (owner_id, content, memory_type, namespace, embedding, embedding_model)
values ('71000000-0000-4000-8000-00000000000d'::uuid, 'My zanzibar notes stay private.', 'semantic',
        'devai/user/preferences', tests.embedding(array[0.5, 0.5]::real[]), 'm');
select tests.authenticate_as('71000000-0000-4000-8000-00000000000d');
select set_eq(
  $$select m.content from public.devai_memories m,
          memory_search.keyword_postings('71000000-0000-4000-8000-00000000000d', array['devai/project/'],
                                         array['zanzibar'::tsquery], 25, 50) p
     where m.id = any (p.candidates)$$,
  array['The zanzibar flag turns the cache off.'],
  'all projects: the project''s memory, not the user scope''s');
select set_eq(
  $$select m.content from public.devai_memories m,
          memory_search.keyword_postings('71000000-0000-4000-8000-00000000000d', array['devai/'],
                                         array['zanzibar'::tsquery], 25, 50) p
     where m.id = any (p.candidates)$$,
  array['The zanzibar flag turns the cache off.', 'My zanzibar notes stay private.'],
  'tenant-wide: both');

select * from finish();
rollback;
