-- A search scope's size is kept by the write path (migration 20261208300000): per tenant and scope
-- base (a namespace and each of its parents), the valid, active memories that are not episodes.
-- The kept counts match a fresh count after every kind of write; match_memories' choice between
-- the exact comparison and the HNSW walk reads them without reading the scope (before, it counted
-- the scope's index entries on every search: up to the exact-scan limit's heap fetches), and leaves
-- episodes out of it; a count that drifts changes the path, not the answer. docs/retrieval.md#vector.
begin;
select plan(26);

-- What the kept counts say, and what a fresh count of the memories says, per tenant and base, for
-- the tenants of this file.
create function pg_temp.kept() returns table (owner_id uuid, scope text, memories bigint) language sql as $$
  select c.owner_id, c.scope, sum(c.memories)::bigint
    from memory_private.memory_scope_counts c
   where c.owner_id::text like '99830000-%'
   group by c.owner_id, c.scope
  having sum(c.memories) <> 0
$$;
create function pg_temp.fresh() returns table (owner_id uuid, scope text, memories bigint) language sql as $$
  select m.owner_id, s.scope, count(*)
    from public.devai_memories m
   cross join lateral unnest(memory_private.namespace_scopes(m.namespace)) as s(scope)
   where m.owner_id::text like '99830000-%' and m.is_valid and m.state = 'active' and m.source is distinct from 'conversation'
   group by m.owner_id, s.scope
$$;

select is(memory_private.namespace_scopes('devai/project/task_forge/ci'),
          array['devai', 'devai/project', 'devai/project/task_forge', 'devai/project/task_forge/ci'],
          'a namespace falls under itself and each of its parents');

-- Inserts: two tenants, nested namespaces, and episodes (not counted).
insert into public.devai_memories (owner_id, content, memory_type, namespace)
select '99830000-0000-4000-8000-00000000000a', 'note ' || g, 'semantic',
       (array['devai/global', 'devai/project/task_forge', 'devai/project/task_forge/ci', 'devai/project/taskxforge'])[1 + g % 4]
  from generate_series(1, 40) g;
insert into public.devai_memories (owner_id, content, memory_type, namespace)
select '99830000-0000-4000-8000-00000000000b', 'other ' || g, 'semantic', 'devai/project/task_forge'
  from generate_series(1, 7) g;
insert into public.devai_memories (owner_id, content, memory_type, namespace, source, session_id)
select '99830000-0000-4000-8000-00000000000a', 'turn ' || g, 'episodic', 'devai/project/task_forge', 'conversation', 's1'
  from generate_series(1, 5) g;
select set_eq('select * from pg_temp.kept()', 'select * from pg_temp.fresh()', 'after inserts, the kept counts are a fresh count');
select is(public.memory_scope_size('99830000-0000-4000-8000-00000000000a', array['devai/project/task_forge'], 1000), 20,
          'a scope counts its namespace and those below it, not a sibling sharing its prefix, nor episodes');
select is(public.memory_scope_size('99830000-0000-4000-8000-00000000000a', array['devai/global', 'devai/project/task_forge'], 12), 13,
          'several bases add up, counted to the cap + 1');

-- Forgets, invalidations, restores, deletes, namespace moves.
update public.devai_memories set state = 'soft_deleted', purge_at = now() + interval '30 days'
 where owner_id = '99830000-0000-4000-8000-00000000000a' and content in ('note 1', 'note 2', 'note 3');
select set_eq('select * from pg_temp.kept()', 'select * from pg_temp.fresh()', 'after forgets');
update public.devai_memories set is_valid = false
 where owner_id = '99830000-0000-4000-8000-00000000000a' and content in ('note 4', 'note 5');
select set_eq('select * from pg_temp.kept()', 'select * from pg_temp.fresh()', 'after invalidations');
update public.devai_memories set state = 'active', purge_at = null
 where owner_id = '99830000-0000-4000-8000-00000000000a' and content = 'note 1';
select set_eq('select * from pg_temp.kept()', 'select * from pg_temp.fresh()', 'after a restore');
delete from public.devai_memories
 where owner_id = '99830000-0000-4000-8000-00000000000a' and content in ('note 6', 'note 7', 'note 2', 'turn 1');
select set_eq('select * from pg_temp.kept()', 'select * from pg_temp.fresh()', 'after deletes (of counted, forgotten and episode rows)');
update public.devai_memories set namespace = 'devai/project/task_forge/ci'
 where owner_id = '99830000-0000-4000-8000-00000000000a' and content in ('note 8', 'note 12', 'note 13');
update public.devai_memories set namespace = 'devai/user', importance = 4, strength = 0.5
 where owner_id = '99830000-0000-4000-8000-00000000000a' and content = 'note 9';
select set_eq('select * from pg_temp.kept()', 'select * from pg_temp.fresh()', 'after namespace moves');

-- Rolled back writes leave no count behind.
savepoint before_rollback;
insert into public.devai_memories (owner_id, content, memory_type, namespace)
select '99830000-0000-4000-8000-00000000000a', 'rolled back ' || g, 'semantic', 'devai/project/task_forge' from generate_series(1, 9) g;
update public.devai_memories set state = 'soft_deleted', purge_at = now() + interval '30 days'
 where owner_id = '99830000-0000-4000-8000-00000000000b';
rollback to savepoint before_rollback;
select set_eq('select * from pg_temp.kept()', 'select * from pg_temp.fresh()', 'after writes rolled back');

-- Rows left by concurrent writers (each takes a row no other transaction holds, or adds its own):
-- the compaction merges a base's rows into one and drops bases counted 0.
insert into memory_private.memory_scope_counts (owner_id, scope, memories) values
  ('99830000-0000-4000-8000-00000000000a', 'devai', 3), ('99830000-0000-4000-8000-00000000000a', 'devai', -3),
  ('99830000-0000-4000-8000-00000000000b', 'devai/empty', 0);
select memory_private.compact_scope_counts();
select is((select count(*)::int from memory_private.memory_scope_counts c
            where c.owner_id::text like '99830000-%'),
          (select count(*)::int from pg_temp.fresh()),
          'after compaction, one row per base that holds memories');
select set_eq('select * from pg_temp.kept()', 'select * from pg_temp.fresh()', 'and the same counts');

-- Another tenant's scope counts 0 for a tenant (the function is theirs to call).
select tests.authenticate_as('99830000-0000-4000-8000-00000000000b');
select is(public.memory_scope_size('99830000-0000-4000-8000-00000000000a', array['devai'], 1000), 0,
          'a tenant reads no size of another tenant''s scopes');
select is(public.memory_scope_size('99830000-0000-4000-8000-00000000000b', array['devai'], 1000), 7,
          'and its own');
select tests.clear_authentication();

-- The decision for a big scope reads no memory: 3,000 memories in the scope, a limit of 1,000.
update public.memory_settings set value = 1000 where name = 'exact_scan_max_rows';
update public.memory_settings set value = 0 where name = 'exact_scan_cost_ratio';
insert into public.devai_memories (owner_id, content, memory_type, namespace, embedding, embedding_model)
select '99830000-0000-4000-8000-00000000000c', 'big ' || g, 'semantic', 'devai/project/big',
       tests.embedding(array[1, (g % 97) / 1000.0, (g % 89) / 1000.0]::real[]), 'm'
  from generate_series(1, 3000) g;
-- A small scope of the same tenant, and one of 40 memories with 3,000 episodes (raw
-- conversation turns, which no search path compares) beside them.
insert into public.devai_memories (owner_id, content, memory_type, namespace, embedding, embedding_model)
select '99830000-0000-4000-8000-00000000000c', 'small ' || g, 'semantic', 'devai/project/small',
       tests.embedding(array[0.9, 0.3 + g / 100.0, (g % 7) / 10.0]::real[]), 'm'
  from generate_series(1, 40) g;
insert into public.devai_memories (owner_id, content, memory_type, namespace, embedding, embedding_model)
select '99830000-0000-4000-8000-00000000000c', 'chat note ' || g, 'semantic', 'devai/project/chatty',
       tests.embedding(array[0.9, 0.3 + g / 100.0, (g % 5) / 10.0]::real[]), 'm'
  from generate_series(1, 40) g;
insert into public.devai_memories (owner_id, content, memory_type, namespace, embedding, embedding_model, source, session_id)
select '99830000-0000-4000-8000-00000000000c', 'turn ' || g, 'episodic', 'devai/project/chatty',
       tests.embedding(array[0.8, (g % 97) / 1000.0]::real[]), 'm', 'conversation', 'chat-' || (g % 30)
  from generate_series(1, 3000) g;
analyze public.devai_memories;
select set_eq('select * from pg_temp.kept()', 'select * from pg_temp.fresh()', 'after the bulk inserts');

create function pg_temp.scans(p_index text) returns bigint language sql as $$
  select pg_catalog.pg_stat_get_xact_numscans(p_index::regclass)
$$;
create temporary table before on commit drop as
  select pg_temp.scans('public.devai_memories_owner_namespace') as scope_scans,
         pg_temp.scans('public.devai_memories_embedding_hnsw') as walks,
         tests.rows_read_by('public.devai_memories',
                            $$select public.memory_scope_size('99830000-0000-4000-8000-00000000000c', array['devai/project/big'], 1000)$$) as decision_rows;
select is((select decision_rows from before), 0::bigint, 'the size of a 3,000-memory scope is read without reading a memory');

select is((select count(*)::int from public.match_memories(tests.embedding('{1}'), 'devai/project/big', 20, 0,
            '99830000-0000-4000-8000-00000000000c', 'm')), 20, 'the big scope finds its 20 nearest');
select ok(pg_temp.scans('public.devai_memories_embedding_hnsw') > (select walks from before),
          'by the HNSW walk');
select is(pg_temp.scans('public.devai_memories_owner_namespace'), (select scope_scans from before),
          'and the decision read the scope''s index no more (the count of its entries is gone from the search)');

-- The small scope in the big table: compared exactly.
create temporary table walks_then on commit drop as select pg_temp.scans('public.devai_memories_embedding_hnsw') as n;
select results_eq(
  $$select id from public.match_memories(tests.embedding('{1}'), 'devai/project/small', 20, 0, '99830000-0000-4000-8000-00000000000c', 'm')$$,
  $$select id from public.devai_memories where owner_id = '99830000-0000-4000-8000-00000000000c' and namespace = 'devai/project/small'
     order by embedding operator(extensions.<=>) tests.embedding('{1}'), id limit 20$$,
  'a 40-memory scope of a 3,000-memory tenant gets its exact 20 nearest');
-- The 40 memories among 3,000 episodes: the scope is 40 memories, so it is compared exactly (the
-- count of its index entries, 3,040, took it to the HNSW walk).
select results_eq(
  $$select id from public.match_memories(tests.embedding('{1}'), 'devai/project/chatty', 20, 0, '99830000-0000-4000-8000-00000000000c', 'm')$$,
  $$select id from public.devai_memories where owner_id = '99830000-0000-4000-8000-00000000000c' and namespace = 'devai/project/chatty'
       and source is distinct from 'conversation'
     order by embedding operator(extensions.<=>) tests.embedding('{1}'), id limit 20$$,
  'a scope of 40 memories and 3,000 episodes gets its exact 20 nearest, no episode');
select is(pg_temp.scans('public.devai_memories_embedding_hnsw'), (select n from walks_then),
          'both exactly, without an HNSW walk: episodes do not count toward the scope''s size');
select cmp_ok(tests.rows_read_by('public.devai_memories',
                $$select * from public.match_memories(tests.embedding('{1}'), 'devai/project/chatty', 20, 0, '99830000-0000-4000-8000-00000000000c', 'm')$$),
              '<=', 100::bigint,
              'and the exact path reads the 40 memories, not the 3,000 episodes beside them (3,062 rows before)');
select is(memory_search.scope_rows('99830000-0000-4000-8000-00000000000c', array['devai/project/chatty'], 10000), 40,
          'the fallback''s fresh count leaves episodes out too');

-- Drift: a count far too large sends the small scope to the HNSW walk, a count of 0 sends the big
-- one to the exact comparison; the answers stay those of the exact comparison. The small scope is
-- asked for more than its 40 memories: a walk's first 20 of a scope are approximate (HNSW's graph
-- is built with random levels: one CI run in many got another 20th), but a walk that comes back
-- short is counted afresh and compared exactly, so the answer is the exact one every run.
update memory_private.memory_scope_counts set memories = 1000000
 where owner_id = '99830000-0000-4000-8000-00000000000c' and scope = 'devai/project/small';
update memory_private.memory_scope_counts set memories = 0
 where owner_id = '99830000-0000-4000-8000-00000000000c' and scope = 'devai/project/big';
select results_eq(
  $$select id from public.match_memories(tests.embedding('{1}'), 'devai/project/small', 50, 0, '99830000-0000-4000-8000-00000000000c', 'm')
    union all
    select id from public.match_memories(tests.embedding('{1}'), 'devai/project/big', 20, 0, '99830000-0000-4000-8000-00000000000c', 'm')$$,
  $$(select id from public.devai_memories where owner_id = '99830000-0000-4000-8000-00000000000c' and namespace = 'devai/project/small'
      order by embedding operator(extensions.<=>) tests.embedding('{1}'), id limit 50)
    union all
    (select id from public.devai_memories where owner_id = '99830000-0000-4000-8000-00000000000c' and namespace = 'devai/project/big'
      order by embedding operator(extensions.<=>) tests.embedding('{1}'), id limit 20)$$,
  'counts that drifted change the path, not the answers');
select memory_private.recount_scope_sizes();
select set_eq('select * from pg_temp.kept()', 'select * from pg_temp.fresh()', 'a recount repairs them');

select * from finish();
rollback;
