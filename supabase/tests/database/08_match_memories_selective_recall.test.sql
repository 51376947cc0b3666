-- Recall under selective filters: with the HNSW index in use, tenant A's few memories must still
-- be found when thousands of another tenant's vectors are nearer (pgvector 0.8 iterative scans).
begin;
select plan(2);

insert into public.devai_memories (owner_id, content, memory_type, namespace, embedding, embedding_model)
select '08000000-0000-4000-8000-00000000000a', 'other ' || g, 'semantic', 'devai/project/other',
       tests.embedding(array[1, (g % 97) / 1000.0, (g % 89) / 1000.0]::real[]), 'text-embedding-3-small'
  from generate_series(1, 3000) g;
insert into public.devai_memories (owner_id, content, memory_type, namespace, embedding, embedding_model)
select '08000000-0000-4000-8000-00000000000a', 'a ' || g, 'semantic', 'devai/project/target',
       tests.embedding(array[0.9, 0.3 + g / 100.0]::real[]), 'text-embedding-3-small'
  from generate_series(1, 5) g;
analyze public.devai_memories;
-- Force the ordered HNSW scan (what a large table gets) instead of filter + sort.
set local enable_sort = off;
set local enable_seqscan = off;
set local enable_bitmapscan = off;

select tests.authenticate_as('08000000-0000-4000-8000-00000000000a');
select is((select count(*)::int from public.match_memories(tests.embedding('{1}'), 'devai/project/target', match_count => 5, similarity_threshold => 0)), 5,
          'a selective namespace filter still returns all 5 matches when 3000 nearer rows are filtered out (iterative index scan)');
select tests.clear_authentication();
select is((select count(*)::int from public.match_memories(tests.embedding('{1}'), 'devai/project/target', match_count => 5, similarity_threshold => 0,
            match_owner => '08000000-0000-4000-8000-00000000000a')), 5,
          'same as table owner (no RLS)');
select * from finish();
rollback;
