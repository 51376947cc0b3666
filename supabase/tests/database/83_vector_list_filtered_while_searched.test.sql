-- The vector list is filtered while it is searched (migration 20261128600000): a strict filter
-- (time window, memory type, category, exclusion) gets the nearest memories that pass it, on the
-- exact, HNSW and as-of paths, even when hundreds of nearer memories fail it. Before, hybrid_search
-- took the nearest 80 of all and filtered them: its vector list was empty here.
-- docs/retrieval.md#vector.
begin;
select plan(25);

-- 300 recent memories near the question (cosine 0.51-1), and three old ones farther than all of
-- them (0.29; one procedural, one a decision, one naming a proxy), next to the farthest recent
-- ones. The vectors spread over four dimensions: on vectors along one arc, a fresh HNSW graph
-- left the far end unreachable (pgvector's graph, not the search's filter).
insert into public.devai_memories
  (owner_id, content, memory_type, namespace, embedding, embedding_model, created_at, metadata)
select '83000000-0000-4000-8000-00000000000c', 'recent note ' || g, 'semantic', 'devai/project/vf',
       tests.embedding(array[1, (g % 7) / 10.0, (g % 11) / 10.0, (g % 13) / 10.0]::real[]), 'local-hash-512-v1',
       now() - interval '1 day', '{"category": "workflows"}'
  from generate_series(1, 300) g;
insert into public.devai_memories
  (id, owner_id, content, memory_type, namespace, embedding, embedding_model, created_at, metadata)
values
  ('83000000-0000-4000-8000-0000000000a1', '83000000-0000-4000-8000-00000000000c', 'To rotate keys: run the rotate script.',
   'procedural', 'devai/project/vf', tests.embedding(array[0.3, 0.6, 0.5, 0.6]::real[]), 'local-hash-512-v1', '2020-03-01', '{}'),
  ('83000000-0000-4000-8000-0000000000a2', '83000000-0000-4000-8000-00000000000c', 'We chose Postgres over Mongo.',
   'semantic', 'devai/project/vf', tests.embedding(array[0.3, 0.6, 0.6, 0.5]::real[]), 'local-hash-512-v1', '2020-03-02',
   '{"category": "decisions"}'),
  ('83000000-0000-4000-8000-0000000000a3', '83000000-0000-4000-8000-00000000000c', 'The proxy was retired.',
   'semantic', 'devai/project/vf', tests.embedding(array[0.3, 0.5, 0.6, 0.6]::real[]), 'local-hash-512-v1', '2020-03-03',
   '{"category": "decisions"}');
analyze public.devai_memories;

select tests.authenticate_as('83000000-0000-4000-8000-00000000000c');

-- Exact path (the scope is small enough by default).
select is((select count(*)::int from public.hybrid_search('rotate', tests.embedding('{1}'), array['devai/project/vf'], 5, 0,
             'local-hash-512-v1', search_mode => 'vector', filter_before => '2021-01-01')),
          3, 'exact path: a time window 300 nearer memories fail still fills the vector list');
select set_eq($$select id from public.hybrid_search('rotate', tests.embedding('{1}'), array['devai/project/vf'], 5, 0,
                 'local-hash-512-v1', search_mode => 'vector', filter_memory_types => array['procedural'])$$,
              $$values ('83000000-0000-4000-8000-0000000000a1'::uuid)$$,
              'exact path: a memory type');
select set_eq($$select id from public.match_memories(tests.embedding('{1}'), 'devai/project/vf', 5, 0,
                 match_embedding_model => 'local-hash-512-v1', filter_categories => array['decisions'])$$,
              $$values ('83000000-0000-4000-8000-0000000000a2'::uuid), ('83000000-0000-4000-8000-0000000000a3'::uuid)$$,
              'exact path: a category');
select set_eq($$select id from public.match_memories(tests.embedding('{1}'), 'devai/project/vf', 5, 0,
                 match_embedding_model => 'local-hash-512-v1', filter_categories => array['decisions'],
                 filter_exclude => 'proxi'::tsquery)$$,
              $$values ('83000000-0000-4000-8000-0000000000a2'::uuid)$$,
              'exact path: an exclusion');
select set_eq($$select id from public.match_memories(tests.embedding('{1}'), 'devai/project/vf', 5, 0,
                 match_embedding_model => 'local-hash-512-v1', filter_categories => array['procedural'])$$,
              $$values ('83000000-0000-4000-8000-0000000000a1'::uuid)$$,
              'a procedural memory''s category is procedural');
select is((select count(*)::int from public.match_memories(tests.embedding('{1}'), 'devai/project/vf', 5, 0,
             match_embedding_model => 'local-hash-512-v1')),
          5, 'without filters, the nearest five of all (control)');

-- HNSW path: every scope counts as large. The walk reads the tenant's own index (what the worker
-- builds for a big tenant), built here: in the shared index, among the entries earlier files left
-- (rolled back, not vacuumed), a walk found none of these memories about one run in ten.
select tests.clear_authentication();
create index devai_memories_hnsw_owner_8300000000004000800000000000000c on public.devai_memories
  using hnsw (embedding extensions.vector_cosine_ops) with (m = 16, ef_construction = 64)
  where owner_id = '83000000-0000-4000-8000-00000000000c'::uuid and is_valid and state = 'active'
    and source is distinct from 'conversation';
create function pg_temp.hnsw_scans() returns bigint language sql as $$
  select pg_stat_get_xact_numscans('public.devai_memories_embedding_hnsw'::regclass)
         + pg_stat_get_xact_numscans('public.devai_memories_hnsw_owner_8300000000004000800000000000000c'::regclass)
$$;
update public.memory_settings set value = 0 where name in ('exact_scan_max_rows', 'exact_scan_cost_ratio');
select tests.authenticate_as('83000000-0000-4000-8000-00000000000c');
select is((select count(*)::int from public.hybrid_search('rotate', tests.embedding('{1}'), array['devai/project/vf'], 5, 0,
             'local-hash-512-v1', search_mode => 'vector', filter_before => '2021-01-01')),
          3, 'HNSW path: a time window 300 nearer memories fail still fills the vector list');
select set_eq($$select id from public.match_memories(tests.embedding('{1}'), 'devai/project/vf', 5, 0,
                 match_embedding_model => 'local-hash-512-v1', filter_memory_types => array['procedural'])$$,
              $$values ('83000000-0000-4000-8000-0000000000a1'::uuid)$$,
              'HNSW path: a memory type');
select is((select count(*)::int from public.match_memories(tests.embedding('{1}'), 'devai/project/vf', 5, 0,
             match_embedding_model => 'local-hash-512-v1', filter_exclude => 'recent'::tsquery)),
          3, 'HNSW path: an exclusion the 300 nearer memories match leaves the three others');

-- A large scope but a small time window: compared exactly, read by the window's range (counted:
-- the HNSW index is not walked for it, and is for the same scope without the window).
select tests.clear_authentication();
update public.memory_settings set value = 10 where name = 'exact_scan_max_rows';
create temporary table hnsw_scans (n bigint) on commit drop;
grant all on hnsw_scans to authenticated;
select tests.authenticate_as('83000000-0000-4000-8000-00000000000c');
insert into hnsw_scans select pg_temp.hnsw_scans();
select is((select count(*)::int from public.match_memories(tests.embedding('{1}'), 'devai/project/vf', 5, 0,
             match_embedding_model => 'local-hash-512-v1', filter_before => '2021-01-01')),
          3, 'a window of three memories in a scope of 303: the three');
select is(pg_temp.hnsw_scans() - (select n from hnsw_scans), 0::bigint,
          'read by the window''s range: no HNSW walk');
select is((select count(*)::int from public.match_memories(tests.embedding('{1}'), 'devai/project/vf', 5, 0,
             match_embedding_model => 'local-hash-512-v1', filter_after => '2021-01-01')),
          5, 'a window of 300, more than the limit of 10: five');
select cmp_ok(pg_temp.hnsw_scans() - (select n from hnsw_scans),
              '>', 0::bigint, 'that one walks the HNSW index (control)');

-- As of an instant (always exact, over what was held then).
select is((select count(*)::int from public.hybrid_search('rotate', tests.embedding('{1}'), array['devai/project/vf'], 5, 0,
             'local-hash-512-v1', search_mode => 'vector', filter_memory_types => array['procedural'],
             as_of => now())),
          1, 'as-of path: the type filter holds inside the search');

-- Hybrid: the keyword list and the vector list agree on the window.
select set_eq($$select id from public.hybrid_search('rotate keys', tests.embedding('{1}'), array['devai/project/vf'], 5, 0,
                 'local-hash-512-v1', graph_depth => 0, filter_before => '2021-01-01')$$,
              $$values ('83000000-0000-4000-8000-0000000000a1'::uuid), ('83000000-0000-4000-8000-0000000000a2'::uuid),
                       ('83000000-0000-4000-8000-0000000000a3'::uuid)$$,
              'hybrid: only the window''s memories, the keyword hit among them');
select tests.clear_authentication();

-- The filters are one function; the search calls it only when a filter is given.
select is(memory_search.passes_filters(to_tsvector('simple', 'a b'), '2020-01-01', 'procedural', '{"category": "x"}',
                                       false, 3::smallint, '2020-01-01', null, null, null, null, array['procedural'], null),
          true, 'passes_filters: a procedural memory is in category procedural whatever its metadata says');

-- memory.query's field filters are applied while searching too: one user's three memories of a
-- project sixty of another user's memories fill first. On the exact path (the settings back to
-- their defaults): these vectors lie along one arc, where a fresh HNSW graph may leave some
-- unreachable, and the HNSW path's filtering is tested above.
update public.memory_settings set value = 1000 where name = 'exact_scan_max_rows';
update public.memory_settings set value = 3 where name = 'exact_scan_cost_ratio';
insert into public.devai_memories
  (owner_id, content, memory_type, namespace, embedding, embedding_model, metadata, importance, pinned)
select '83000000-0000-4000-8000-00000000000d', 'note of user b ' || g, 'semantic', 'devai/project/shared',
       tests.embedding(array[1, g / 100.0]::real[]), 'local-hash-512-v1',
       '{"category": "knowledge", "user_id": "u-b"}', 3, false
  from generate_series(1, 60) g;
insert into public.devai_memories
  (owner_id, content, memory_type, namespace, embedding, embedding_model, metadata, importance, pinned)
select '83000000-0000-4000-8000-00000000000d', 'note of user a ' || g, 'semantic', 'devai/project/shared',
       tests.embedding(array[1, 0.7 + g / 100.0]::real[]), 'local-hash-512-v1',
       '{"category": "knowledge", "user_id": "u-a"}', case when g = 1 then 5 else 2 end, g = 2
  from generate_series(1, 3) g;
-- Memories without a category, nearer than all: a categories filter never takes them.
insert into public.devai_memories (owner_id, content, memory_type, namespace, embedding, embedding_model, metadata)
select '83000000-0000-4000-8000-00000000000d', 'uncategorised note ' || g, 'semantic', 'devai/project/shared',
       tests.embedding(array[1, g / 1000.0]::real[]), 'local-hash-512-v1', '{}'
  from generate_series(1, 30) g;
select tests.authenticate_as('83000000-0000-4000-8000-00000000000d');
select is((select count(*)::int from public.hybrid_search('note', tests.embedding('{1}'), array['devai/project/shared'], 20, 0,
             'local-hash-512-v1', filter_categories => array['knowledge'])
            where metadata ->> 'category' is null),
          0, 'hybrid: a categories filter leaves out the memories with no category');
select is((select count(*)::int from public.query_memories('quasar', tests.embedding('{1}'), array['devai/project/shared'],
             'researcher', array['knowledge'], 5, 0, 'local-hash-512-v1')),
          5, 'memory.query: five knowledge memories by vector alone, thirty uncategorised ones nearer notwithstanding');
select is((select count(*)::int from public.query_memories('note', tests.embedding('{1}'), array['devai/project/shared'],
             'researcher', array['knowledge'], 5, 0, 'local-hash-512-v1', filter_user_id => 'u-a')),
          3, 'memory.query: user_id finds that user''s memories past sixty better ones of another user');
select is((select count(*)::int from public.query_memories('note', tests.embedding('{1}'), array['devai/project/shared'],
             'researcher', array['knowledge'], 5, 0, 'local-hash-512-v1', filter_importance_min => 5)),
          1, 'memory.query: importance_min the same way');
select is((select count(*)::int from public.query_memories('note', tests.embedding('{1}'), array['devai/project/shared'],
             'researcher', array['knowledge'], 5, 0, 'local-hash-512-v1', filter_pinned => true,
             filter_user_id => 'u-a')),
          1, 'memory.query: pinned and user_id together');
select is((select count(*)::int from public.query_memories('note', tests.embedding('{1}'), array['devai/project/shared'],
             'researcher', array['knowledge'], 5, 0, 'local-hash-512-v1', filter_user_id => 'u-b',
             filter_updated_before => now() - interval '1 day')),
          0, 'memory.query: updated_before the same way (control: nothing was updated before yesterday)');
select tests.clear_authentication();

-- The keyword list too: a word more than keyword_df_cap (25) memories hold is common, and its
-- candidates were the first 25 memories holding it, filtered after (here the 20 old ones first:
-- 5 of the window's 20 found).
insert into public.devai_memories (owner_id, content, memory_type, namespace, embedding_model, created_at)
select '83000000-0000-4000-8000-00000000000e', 'legacy billing rule ' || g, 'semantic', 'devai/project/kw',
       'local-hash-512-v1', case when g <= 20 then timestamptz '2020-01-01' + g * interval '1 day' else now() - interval '1 day' end
  from generate_series(1, 40) g;
select tests.authenticate_as('83000000-0000-4000-8000-00000000000e');
select is((select count(*)::int from public.hybrid_search('legacy', null, array['devai/project/kw'], 20, 0,
             'local-hash-512-v1', search_mode => 'keyword', filter_after => '2021-01-01', keyword_threshold => 0)),
          20, 'keyword: a common word in a window: all twenty of the window''s memories holding it');
select is((select count(*)::int from public.hybrid_search('legacy', null, array['devai/project/kw'], 20, 0,
             'local-hash-512-v1', search_mode => 'keyword', filter_after => '2021-01-01', keyword_threshold => 0)
            where created_at < '2021-01-01'),
          0, 'and none from before it');
-- A rare word only older memories hold, beside the common one: its matches fail the window, and
-- the common word's memories in the window are the candidates.
select tests.clear_authentication();
insert into public.devai_memories (owner_id, content, memory_type, namespace, embedding_model, created_at)
select '83000000-0000-4000-8000-00000000000e', 'zebra crossing ' || g, 'semantic', 'devai/project/kw',
       'local-hash-512-v1', timestamptz '2020-06-01' + g * interval '1 day'
  from generate_series(1, 2) g;
select tests.authenticate_as('83000000-0000-4000-8000-00000000000e');
select is((select count(*)::int from public.hybrid_search('legacy zebra', null, array['devai/project/kw'], 20, 0,
             'local-hash-512-v1', search_mode => 'keyword', filter_after => '2021-01-01', keyword_threshold => 0)),
          20, 'keyword: a rare word whose memories all fail the window leaves the common word''s to find');
select tests.clear_authentication();

select * from finish();
rollback;
