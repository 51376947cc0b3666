-- match_memories' two search paths (20261123000300): a scope of at most exact_scan_max_rows
-- memories is searched exactly; a larger one through HNSW with pgvector 0.8 iterative scans, which
-- must keep recall when the filter is selective: tenant A's few memories must still be found when
-- thousands of nearer vectors are filtered out.
begin;
select plan(10);

insert into public.devai_memories (owner_id, content, memory_type, namespace, embedding, embedding_model)
select '08000000-0000-4000-8000-00000000000a', 'other ' || g, 'semantic', 'devai/project/other',
       tests.embedding(array[1, (g % 97) / 1000.0, (g % 89) / 1000.0]::real[]), 'text-embedding-3-small'
  from generate_series(1, 3000) g;
insert into public.devai_memories (owner_id, content, memory_type, namespace, embedding, embedding_model)
select '08000000-0000-4000-8000-00000000000a', 'a ' || g, 'semantic', 'devai/project/target',
       tests.embedding(array[0.9, 0.3 + g / 100.0]::real[]), 'text-embedding-3-small'
  from generate_series(1, 5) g;
analyze public.devai_memories;

create temporary table exact_result on commit drop as
  select id, similarity from public.match_memories(tests.embedding('{1}'), 'devai/project/target', match_count => 5,
    similarity_threshold => 0, match_owner => '08000000-0000-4000-8000-00000000000a');
select is((select count(*)::int from exact_result), 5, 'a 5-memory scope is searched exactly: all 5 found');

-- Force the HNSW path: every scope counts as large (no floor, and no exact search for a small
-- share of the index either).
update public.memory_settings set value = 0 where name in ('exact_scan_max_rows', 'exact_scan_cost_ratio');

select tests.authenticate_as('08000000-0000-4000-8000-00000000000a');
select is((select count(*)::int from public.match_memories(tests.embedding('{1}'), 'devai/project/target', match_count => 5, similarity_threshold => 0)), 5,
          'HNSW path: a selective namespace filter still returns all 5 when 3000 nearer rows are filtered out (iterative index scan)');
select tests.clear_authentication();
select results_eq(
  $$select id, similarity from public.match_memories(tests.embedding('{1}'), 'devai/project/target', match_count => 5,
      similarity_threshold => 0, match_owner => '08000000-0000-4000-8000-00000000000a')$$,
  $$select id, similarity from exact_result order by similarity desc, id$$,
  'both paths return the same memories, most similar first');

-- A walk that comes back short (migration 20261207100000) from a scope larger than
-- exact_scan_fallback_max_rows keeps what it found: the 3005-memory scope is not read again. A
-- filter nothing passes makes every walk short. Rows fetched other than by the walk (through the
-- table and its other indexes): the 1,001 that the short walk's fresh count reads
-- (memory_search.scope_rows, capped at exact_scan_fallback_max_rows + 1; the exact-or-HNSW decision
-- itself reads the kept counts, no rows, migration 20261208300000) and 1 (1,002); the exact
-- comparison would read the scope again (6,011 in all with the bound at 10,000).
create temporary view rows_fetched as
  select pg_catalog.pg_stat_get_xact_tuples_fetched('public.devai_memories'::regclass)
         + (select sum(pg_catalog.pg_stat_get_xact_tuples_fetched(i.indexrelid))::bigint
              from pg_catalog.pg_index i
              join pg_catalog.pg_class c on c.oid = i.indexrelid
              join pg_catalog.pg_am a on a.oid = c.relam
             where i.indrelid = 'public.devai_memories'::regclass and a.amname <> 'hnsw') as n;
create temporary table fetched on commit drop as select n from rows_fetched;
update public.memory_settings set value = 1000 where name = 'exact_scan_fallback_max_rows';
select is((select count(*)::int from public.match_memories(tests.embedding('{1}'), 'devai/project', match_count => 5,
            similarity_threshold => 0, match_owner => '08000000-0000-4000-8000-00000000000a',
            filter_memory_types => '{procedural}')), 0,
          'HNSW path: a filter no memory passes finds none');
select cmp_ok((select r.n - f.n from rows_fetched r, fetched f), '<', 3005::bigint,
              'HNSW path: a short walk from a scope above exact_scan_fallback_max_rows is not followed by the exact comparison');
update public.memory_settings set value = 10000 where name = 'exact_scan_fallback_max_rows';

-- Many index entries of a few vectors near the query (3,000 copies of 101 vectors, written and
-- rolled back: dead until vacuum, as the Deno suite's rewrites of the same texts leave them) keep
-- pgvector's walk among those copies: it returned 0 of the 5. The scope is within
-- exact_scan_fallback_max_rows, so the short walk is followed by the exact comparison.
savepoint copies;
insert into public.devai_memories (owner_id, content, memory_type, namespace, embedding, embedding_model)
select '08000000-0000-4000-8000-00000000000d', 'copy ' || g, 'semantic', 'devai/project/copies',
       tests.embedding(array[1, (g % 101) / 1000.0]::real[]), 'text-embedding-3-small'
  from generate_series(1, 3000) g;
rollback to savepoint copies;
select results_eq(
  $$select id, similarity from public.match_memories(tests.embedding('{1}'), 'devai/project/target', match_count => 5,
      similarity_threshold => 0, match_owner => '08000000-0000-4000-8000-00000000000a')$$,
  $$select id, similarity from exact_result order by similarity desc, id$$,
  'HNSW path among 3,000 dead copies of 101 vectors: all 5, as the exact comparison finds them');
select is((select count(*)::int from public.hybrid_search('zzz', tests.embedding('{1}'), array['devai/project/target'], 5, 0,
            'text-embedding-3-small', '08000000-0000-4000-8000-00000000000a', search_mode => 'vector')), 5,
          'hybrid search''s vector list among the same copies: all 5');

-- Overlapping scopes count and return each memory once, on both paths.
select is((select count(distinct id)::int - count(*)::int from public.match_memories(tests.embedding('{1}'), 'devai/project', match_count => 50,
            similarity_threshold => 0, match_owner => '08000000-0000-4000-8000-00000000000a',
            match_namespaces => array['devai/project/target', 'devai/project/target/'])), 0,
          'HNSW path: a scope inside another adds no duplicates');
update public.memory_settings set value = 1000000 where name = 'exact_scan_max_rows';
select is((select count(distinct id)::int - count(*)::int from public.match_memories(tests.embedding('{1}'), 'devai/project', match_count => 50,
            similarity_threshold => 0, match_owner => '08000000-0000-4000-8000-00000000000a',
            match_namespaces => array['devai/project/target', 'devai/project/target/'])), 0,
          'exact path: a scope inside another adds no duplicates');
select is((select count(*)::int from public.match_memories(tests.embedding('{1}'), 'devai/project/target', match_count => 50,
            similarity_threshold => 0, match_owner => '08000000-0000-4000-8000-00000000000a',
            match_namespaces => array['devai/project/targetx', 'devai/project/target_'])), 5,
          'exact path: byte ranges still match by path segment (targetx and target_ add nothing)');

select * from finish();
rollback;
