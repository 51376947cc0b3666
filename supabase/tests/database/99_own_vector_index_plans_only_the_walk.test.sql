-- A tenant with its own HNSW index has its walk planned for it at each call (the planner uses a
-- partial index only in a plan made for its owner), and nothing else of match_memories: the
-- answer's statement (its fields and relation boost) keeps its generic plan (migration
-- 20261210200000). Before, the setting that plans the walk afresh stayed for the rest of the call,
-- and the answer was planned at every call too: on the bench's biggest tenant as much planning as
-- its own index saved in the walk. Counted with pg_stat_statements' plans (loaded by
-- scripts/db.sh, as on Supabase). docs/operations.md#a-dedicated-vector-index-for-a-big-tenant.
begin;
select plan(4);

create extension if not exists pg_stat_statements with schema extensions;
set local pg_stat_statements.track = 'all';
set local pg_stat_statements.track_planning = on;

insert into public.devai_memories (owner_id, content, memory_type, namespace, embedding, embedding_model)
select '99a00000-0000-4000-8000-00000000000c', 'own index note ' || g, 'semantic', 'devai/project/ownidx',
       tests.embedding(array[1, (g % 7) / 10.0, (g % 11) / 10.0, (g % 13) / 10.0]::real[]), 'local-hash-512-v1'
  from generate_series(1, 60) g;
create index devai_memories_hnsw_owner_99a0000000004000800000000000000c on public.devai_memories
  using hnsw (embedding extensions.vector_cosine_ops) with (m = 16, ef_construction = 64)
  where owner_id = '99a00000-0000-4000-8000-00000000000c'::uuid and is_valid and state = 'active'
    and source is distinct from 'conversation';
analyze public.devai_memories;
-- Every scope counts as large: the HNSW path.
update public.memory_settings set value = 0 where name in ('exact_scan_max_rows', 'exact_scan_cost_ratio');

-- Plans made so far of match_memories' walk (its cursor's statement since migration
-- 20261211650000) and of the answer statement after it.
create function pg_temp.plans(p_like text) returns bigint language sql as $$
  select coalesce(sum(s.plans), 0)::bigint from extensions.pg_stat_statements s where s.query like p_like
$$;
create function pg_temp.own_scans() returns bigint language sql as $$
  select pg_stat_get_xact_numscans('public.devai_memories_hnsw_owner_99a0000000004000800000000000000c'::regclass)
$$;
create temp table counted as
select pg_temp.plans('select m.id, m.embedding operator(extensions.<=>) query_embedding as distance%') as walk,
       pg_temp.plans('%unnest(v_walk_ids, v_walk_dist)%') as answer,
       pg_temp.own_scans() as scans;
grant select on counted to authenticated;

select tests.authenticate_as('99a00000-0000-4000-8000-00000000000c');
select is((select count(*)::int from public.match_memories(tests.embedding('{1}'), 'devai/project/ownidx', 5, 0,
             match_embedding_model => 'local-hash-512-v1')), 5, 'first search: five memories');
select count(*) from public.match_memories(tests.embedding('{1,0.3}'), 'devai/project/ownidx', 5, 0,
                                          match_embedding_model => 'local-hash-512-v1');
select count(*) from public.match_memories(tests.embedding('{1,0.5}'), 'devai/project/ownidx', 5, 0,
                                          match_embedding_model => 'local-hash-512-v1');
select tests.clear_authentication();

select is(pg_temp.own_scans() - (select scans from counted), 3::bigint, 'the three searches walked the tenant''s own index');
select is(pg_temp.plans('select m.id, m.embedding operator(extensions.<=>) query_embedding as distance%') - (select walk from counted), 3::bigint,
          'the walk is planned for the owner at each call');
select cmp_ok(pg_temp.plans('%unnest(v_walk_ids, v_walk_dist)%') - (select answer from counted), '<=', 1::bigint,
              'the answer statement after the walk keeps its generic plan (planned at most once in the session, not at each call)');

select * from finish();
rollback;
