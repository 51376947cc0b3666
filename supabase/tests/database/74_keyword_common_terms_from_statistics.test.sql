-- A keyword term the statistics estimate in keyword_common_estimate_factor x keyword_df_cap of a
-- scope's memories or more is common without being counted (migration 20261127100000): the
-- lookup is skipped (the keyword index is scanned once less), the answer is the counted one, and
-- only for the tenant and whole scope the statistics describe.
begin;
select plan(16);

-- Tenant A: 160 memories saying 'deploy' in one project, one with a rare word, two in a sub-scope;
-- tenant B: three saying 'deploy' in a project of the same name.
insert into public.devai_memories (owner_id, content, memory_type, namespace, embedding, embedding_model)
select '74000000-0000-4000-8000-00000000000a'::uuid, format('Deploy number %s goes through the pipeline.', i), 'semantic',
       'devai/project/stats', tests.embedding(array[0.5, 0.5]::real[]), 'm'
  from generate_series(1, 160) i
union all
select '74000000-0000-4000-8000-00000000000a'::uuid, 'The zanzibar flag makes a deploy skip the cache.', 'semantic',
       'devai/project/stats', tests.embedding(array[0.5, 0.5]::real[]), 'm'
union all
select '74000000-0000-4000-8000-00000000000a'::uuid, format('Sub deploy %s waits for review.', i), 'semantic',
       'devai/project/stats/sub', tests.embedding(array[0.5, 0.5]::real[]), 'm'
  from generate_series(1, 2) i
union all
select '74000000-0000-4000-8000-00000000000b'::uuid, format('Other deploy %s is manual.', i), 'semantic',
       'devai/project/stats', tests.embedding(array[0.5, 0.5]::real[]), 'm'
  from generate_series(1, 3) i;
analyze public.devai_memories;
-- What a VACUUM leaves in the keyword index's row count: the whole table's live rows (a GIN index
-- reports the heap's, partial or not). The estimates must not follow it.
update pg_catalog.pg_class set reltuples = 1000000 where oid = 'public.devai_memories_fts_scoped'::regclass;

select is((memory_private.refresh_keyword_common_terms() ->> 'terms')::int > 0, true,
          'the refresh copies the terms the statistics estimate as common');
select ok((select c.estimated_rows between 100 and 300 from memory_private.keyword_common_terms c
            where c.term = memory_private.keyword_scope_key('74000000-0000-4000-8000-00000000000a', 'devai/project/stats') || ':deploy'),
          'tenant A''s deploy in its project: estimated in 100 memories or more (4 x the cap of 25), from the memories counted, not the index''s row count');
select ok(not exists (select from memory_private.keyword_common_terms c
                       where c.term = memory_private.keyword_scope_key('74000000-0000-4000-8000-00000000000b', 'devai/project/stats') || ':deploy'),
          'tenant B''s three are not common: its key is its own');

-- One lookup: (scope, terms, cap) -> document frequencies, candidates and the keyword index scans it made.
create temp table lookups (label text, term_df integer[], candidates uuid[], scans bigint) on commit drop;
grant all on lookups to authenticated;
create function pg_temp.lookup(p_label text, p_owner uuid, p_scopes text[], p_terms tsquery[], p_cap integer)
returns void language plpgsql as $$
declare v_before bigint := pg_stat_get_xact_numscans('public.devai_memories_fts_scoped'::regclass);
begin
  insert into lookups
  select p_label, p.term_df, p.candidates,
         pg_stat_get_xact_numscans('public.devai_memories_fts_scoped'::regclass) - v_before
    from memory_search.keyword_postings(p_owner, p_scopes, p_terms, p_cap, 50) p;
end $$;
grant execute on function pg_temp.lookup(text, uuid, text[], tsquery[], integer) to authenticated;

select tests.authenticate_as('74000000-0000-4000-8000-00000000000a');
select pg_temp.lookup('cached', '74000000-0000-4000-8000-00000000000a', array['devai/project/stats/'],
                      array['deploy'::tsquery, 'zanzibar'::tsquery], 25);
select pg_temp.lookup('sub-scope', '74000000-0000-4000-8000-00000000000a', array['devai/project/stats/sub/'],
                      array['deploy'::tsquery], 25);
select pg_temp.lookup('big cap', '74000000-0000-4000-8000-00000000000a', array['devai/project/stats/'],
                      array['deploy'::tsquery], 200);
select pg_temp.lookup('every project', '74000000-0000-4000-8000-00000000000a', array['devai/project/'],
                      array['deploy'::tsquery], 25);
select pg_temp.lookup('mixed', '74000000-0000-4000-8000-00000000000a', array['devai/project/', 'devai/global/x/'],
                      array['deploy'::tsquery], 25);
reset role;
update public.memory_settings set value = 0 where name = 'keyword_common_estimate_factor';
select tests.authenticate_as('74000000-0000-4000-8000-00000000000a');
select pg_temp.lookup('counted', '74000000-0000-4000-8000-00000000000a', array['devai/project/stats/'],
                      array['deploy'::tsquery, 'zanzibar'::tsquery], 25);
select tests.authenticate_as('74000000-0000-4000-8000-00000000000b');
select pg_temp.lookup('tenant B', '74000000-0000-4000-8000-00000000000b', array['devai/project/stats/'],
                      array['deploy'::tsquery], 25);
reset role;
update public.memory_settings set value = 4 where name = 'keyword_common_estimate_factor';

select is((select term_df from lookups where label = 'cached'), array[26, 1],
          'a common term from the statistics: counted past the cap (26) without its lookup; the rare one counted (1)');
select is((select scans from lookups where label = 'cached'), 1::bigint,
          'one keyword index scan: the rare term''s only');
select is((select term_df from lookups where label = 'counted'), array[26, 1],
          'keyword_common_estimate_factor 0: both counted, the same frequencies');
select is((select scans from lookups where label = 'counted'), 2::bigint, 'two scans');
select is((select candidates from lookups where label = 'cached'), (select candidates from lookups where label = 'counted'),
          'the same candidates (the rare term''s memory)');
select is((select term_df from lookups where label = 'sub-scope'), array[2],
          'a scope below the keyed one is counted: the statistics are for the whole project');
select is((select array[term_df[1], scans::int] from lookups where label = 'big cap'), array[163, 1],
          'a caller''s cap above the estimate / factor (200 x 4 > 161): counted, all 163');
-- (A question of common words only then reads the memories matching all of them: one scan.)
select is((select array[term_df[1], scans::int] from lookups where label = 'every project'), array[26, 1],
          'a scope above the keys (every project): its keys are whole scopes, the term not counted (one scan: the all-common candidates)');
select is((select array[term_df[1], scans::int] from lookups where label = 'mixed'), array[26, 2],
          'with a scope below its key (devai/global/x) beside it: counted (two scans)');
select is((select term_df from lookups where label = 'tenant B'), array[3],
          'tenant B''s deploy counted in its own scope (3), tenant A''s statistics do not reach it');

-- The table and the refresh are not the tenants'.
select tests.authenticate_as('74000000-0000-4000-8000-00000000000a');
select throws_ok($$select count(*) from memory_private.keyword_common_terms$$, '42501', null,
                 'a tenant cannot read the common terms');
select throws_ok($$select memory_private.refresh_keyword_common_terms()$$, '42501', null,
                 'a tenant cannot run the refresh');
reset role;

update public.memory_settings set value = 0 where name = 'keyword_common_estimate_factor';
select is(memory_private.refresh_keyword_common_terms() ->> 'terms', '0',
          'keyword_common_estimate_factor 0: the refresh empties the table');

select * from finish();
rollback;
