-- match_memories compares every vector of a scope up to public.memory_exact_scan_limit memories:
-- exact_scan_max_rows, or √(exact_scan_cost_ratio · match_count · memories in the HNSW index) when
-- that is more, so a small share of a big table is searched exactly instead of by an index walk
-- that examines about k·N/s entries. Which path ran is read from the HNSW index's scan counter for
-- this transaction (pg_stat_get_xact_numscans). docs/retrieval.md#vector.
begin;
select plan(6);

-- 3,000 memories of another tenant, 100 of this one's project.
insert into public.devai_memories (owner_id, content, memory_type, namespace, embedding, embedding_model)
select '73000000-0000-4000-8000-00000000000b', 'other ' || g, 'semantic', 'devai/project/other',
       tests.embedding(array[1, (g % 97) / 1000.0, (g % 89) / 1000.0]::real[]), 'm'
  from generate_series(1, 3000) g;
insert into public.devai_memories (owner_id, content, memory_type, namespace, embedding, embedding_model)
select '73000000-0000-4000-8000-00000000000a', 'a ' || g, 'semantic', 'devai/project/target',
       tests.embedding(array[0.9, 0.3 + g / 100.0, (g % 7) / 10.0]::real[]), 'm'
  from generate_series(1, 100) g;
analyze public.devai_memories;

update public.memory_settings set value = 10 where name = 'exact_scan_max_rows';
update public.memory_settings set value = 3 where name = 'exact_scan_cost_ratio';

create temp table indexed on commit drop as
select c.reltuples::bigint as n from pg_class c where c.oid = 'public.devai_memories_embedding_hnsw'::regclass;
select ok((select n from indexed) >= 3000, 'the index''s own estimate counts the 3,100 memories');
select is(public.memory_exact_scan_limit(20), floor(sqrt(3 * 20 * (select n from indexed)))::integer,
          'the limit: sqrt(ratio * match_count * indexed), above the floor of 10');

create function pg_temp.hnsw_scans() returns bigint language sql as $$
  select pg_stat_get_xact_numscans('public.devai_memories_embedding_hnsw'::regclass)
$$;
create temp table before on commit drop as select pg_temp.hnsw_scans() as n;

select tests.authenticate_as('73000000-0000-4000-8000-00000000000a');
create temp table exact on commit drop as
select id, similarity from public.match_memories(tests.embedding('{1}'), 'devai/project/target', 20, 0, auth.uid(), 'm');
select tests.clear_authentication();
select is(pg_temp.hnsw_scans(), (select n from before),
          'a 100-memory scope (above exact_scan_max_rows, below the limit) is searched exactly: no index walk');
select is((select count(*)::int from exact), 20, 'and finds its 20 nearest');

-- Ratio 0: exact_scan_max_rows alone decides, as before the limit grew with the table.
update public.memory_settings set value = 0 where name = 'exact_scan_cost_ratio';
select is(public.memory_exact_scan_limit(20), 10, 'ratio 0: the limit is exact_scan_max_rows');
select tests.authenticate_as('73000000-0000-4000-8000-00000000000a');
select count(*) from public.match_memories(tests.embedding('{1}'), 'devai/project/target', 20, 0, auth.uid(), 'm');
select tests.clear_authentication();
select ok(pg_temp.hnsw_scans() > (select n from before), 'then the same scope walks the HNSW index');

select * from finish();
rollback;
