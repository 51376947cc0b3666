-- The HNSW walk of a large scope stops at the similarity floor (migration 20261211650000): a
-- question the scope holds fewer answers to than match_count does not walk on for rows the answer
-- drops. Counted: the index entries the walk read in this transaction (pg_stat_get_xact_tuples_returned
-- of the tenant's own index), not a time. Before, the walk read match_count entries here (12 above
-- the floor, 8 below it) for the same 12 answers. docs/retrieval.md#vector.
begin;
select plan(6);

-- Twelve memories above the floor (cosine 0.6 to 0.96) and 200 below it (0 to 0.37), one scope;
-- the vectors along one continuum (a graph of three near ones apart from the rest left them
-- unreachable about one build in two, with or without this change: pgvector's graph).
insert into public.devai_memories
  (owner_id, content, memory_type, namespace, embedding, embedding_model)
select '99110000-0000-4000-8000-00000000000c', 'near note ' || g, 'semantic', 'devai/project/wf',
       tests.embedding(array[0.5 + g / 4.0, 1, 0, 0]::real[]), 'local-hash-512-v1'
  from generate_series(1, 12) g;
insert into public.devai_memories
  (owner_id, content, memory_type, namespace, embedding, embedding_model)
select '99110000-0000-4000-8000-00000000000c', 'far note ' || g, 'semantic', 'devai/project/wf',
       tests.embedding(array[g / 500.0, 1, (g % 7) / 10.0, (g % 11) / 10.0]::real[]), 'local-hash-512-v1'
  from generate_series(1, 200) g;

-- The tenant's own index (what the worker builds for a big tenant; the shared one holds what
-- earlier files left), and every scope large: the walk.
create index devai_memories_hnsw_owner_9911000000004000800000000000000c on public.devai_memories
  using hnsw (embedding extensions.vector_cosine_ops) with (m = 16, ef_construction = 64)
  where owner_id = '99110000-0000-4000-8000-00000000000c'::uuid and is_valid and state = 'active'
    and source is distinct from 'conversation';
analyze public.devai_memories;
update public.memory_settings set value = 0 where name in ('exact_scan_max_rows', 'exact_scan_cost_ratio');
create function pg_temp.walked() returns bigint language sql as $$
  select pg_stat_get_xact_tuples_returned('public.devai_memories_hnsw_owner_9911000000004000800000000000000c'::regclass)
$$;
create temporary table walked (n bigint) on commit drop;
grant all on walked to authenticated;
select tests.authenticate_as('99110000-0000-4000-8000-00000000000c');

insert into walked select pg_temp.walked();
select set_eq($$select content from public.match_memories(tests.embedding('{1}'), 'devai/project/wf', 20, 0.5,
                 match_embedding_model => 'local-hash-512-v1')$$,
              $$select 'near note ' || g from generate_series(1, 12) g$$,
              'the twelve memories above the floor');
select is(pg_temp.walked() - (select n from walked), 13::bigint,
          'the walk read 13 entries: the twelve and the first below the floor (20 before)');

-- hybrid_search's vector list walks the same way (down to half its threshold).
update walked set n = pg_temp.walked();
select set_eq($$select content from public.hybrid_search('near', tests.embedding('{1}'), array['devai/project/wf'], 20, 0.9,
                 'local-hash-512-v1', search_mode => 'vector')$$,
              $$select 'near note ' || g from generate_series(1, 12) g$$,
              'hybrid_search, vector (down to 0.45): the same twelve');
select is(pg_temp.walked() - (select n from walked), 13::bigint, 'its walk read 13 entries');

-- Control: a floor below every memory reads match_count entries, and answers them.
update walked set n = pg_temp.walked();
select is((select count(*)::int from public.match_memories(tests.embedding('{1}'), 'devai/project/wf', 20, -1,
             match_embedding_model => 'local-hash-512-v1')),
          20, 'floor -1: twenty memories');
select is(pg_temp.walked() - (select n from walked), 20::bigint, 'read by a walk of 20 entries');

select * from finish();
rollback;
