-- The relation boost and the graph count only what the same search could see (migration
-- 20261128500000; docs/retrieval.md). max_relation_strength is the strongest edge valid now (as of
-- as_of: valid then), not `contradicts`, to a memory that is held, in scope, not a raw episode and above the
-- retrieval floor, in hybrid_search, query_memories, match_memories (exact and HNSW paths) and
-- context_candidates alike; a graph hop does not pass through a faded memory; the entity lookup
-- and the open contradictions read the tenant they are given; the critical tier and the
-- recent-error lookup leave out faded memories and raw episodes.
begin;
select plan(24);

-- Seven hits near [1, 0], each with one kind of edge, and the other ends near [0, 1].
insert into public.devai_memories
  (id, owner_id, content, memory_type, namespace, embedding, embedding_model, created_at, metadata)
select ('81000000-0000-4000-8000-0000000000' || k)::uuid, '81000000-0000-4000-8000-00000000000c',
       'ERR_SOCKET_TIMEOUT note ' || k, 'semantic', ns,
       -- A third dimension that varies: on vectors along one arc, a fresh or much-used HNSW graph
       -- may leave some unreachable, and the HNSW assertion below needs all of them found.
       tests.embedding(array[1, v, (ascii(right(k, 1)) % 3) / 5.0]::real[]), 'm',
       now() - interval '3 days', '{"category": "decisions"}'
  from (values ('a1', 0.0, 'devai/project/ex'), ('a2', 0.1, 'devai/project/ex'), ('a3', 0.2, 'devai/project/ex'),
               ('a4', 0.3, 'devai/project/ex'), ('a5', 0.4, 'devai/project/ex'), ('a6', 0.5, 'devai/project/ex'),
               ('a7', 0.6, 'devai/project/ex'), ('a8', 0.7, 'devai/project/ex'),
               ('b1', 8, 'devai/project/ex'), ('b2', 9, 'devai/project/other'), ('b3', 10, 'devai/project/ex'),
               ('b4', 11, 'devai/project/ex'), ('b5', 12, 'devai/project/ex'), ('b6', 13, 'devai/project/ex'),
               ('b7', 14, 'devai/project/ex'), ('b8', 15, 'devai/project/ex')) as x(k, v, ns);
-- a1: an edge that ended an hour ago. a2: to another project. a3: to a faded memory. a4: a
-- contradiction. a5: to a soft-deleted memory. a6: a live edge (0.5) beside the ended one (0.9) to
-- b6 and a 0.9 one to a superseded fact. a7: an edge made an hour ago (0.7). a8: derived from a
-- raw episode (provenance, not corroboration).
insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength, created_at, valid_from, valid_until)
select '81000000-0000-4000-8000-00000000000c', ('81000000-0000-4000-8000-0000000000' || f)::uuid,
       ('81000000-0000-4000-8000-0000000000' || t)::uuid, ty, s,
       now() - interval '1 hour' * since, now() - interval '1 hour' * since,
       case when ended then now() - interval '1 hour' end
  from (values ('a1', 'b1', 'related_to', 0.9, true, 48), ('a2', 'b2', 'related_to', 0.9, false, 48),
               ('a3', 'b3', 'related_to', 0.9, false, 48), ('b4', 'a4', 'contradicts', 0.9, false, 48),
               ('a5', 'b5', 'related_to', 0.9, false, 48), ('a6', 'b7', 'related_to', 0.5, false, 48),
               ('a6', 'b1', 'related_to', 0.9, true, 48), ('a6', 'b6', 'supersedes', 0.9, false, 48),
               ('a7', 'b7', 'related_to', 0.7, false, 1), ('a8', 'b8', 'derived_from', 1.0, false, 48))
         as e(f, t, ty, s, ended, since);
update public.devai_memories set strength = 0.05 where id = '81000000-0000-4000-8000-0000000000b3';
update public.devai_memories set source = 'conversation', memory_type = 'episodic', session_id = 's81',
       metadata = '{"role": "user", "digest": "d81", "seq": 0}'
 where id = '81000000-0000-4000-8000-0000000000b8';
update public.devai_memories set state = 'soft_deleted', purge_at = now() + interval '30 days'
 where id = '81000000-0000-4000-8000-0000000000b5';
update public.devai_memories set is_valid = false, superseded_by = '81000000-0000-4000-8000-0000000000a6'
 where id = '81000000-0000-4000-8000-0000000000b6';

-- The tenant's own HNSW index (what the worker builds for a big tenant), so the index walk below
-- reads this file's sixteen memories only: in the shared index, among the entries earlier files
-- left (rolled back, not vacuumed), a walk sometimes missed one of them.
create index devai_memories_hnsw_owner_8100000000004000800000000000000c on public.devai_memories
  using hnsw (embedding extensions.vector_cosine_ops) with (m = 16, ef_construction = 64)
  where owner_id = '81000000-0000-4000-8000-00000000000c'::uuid and is_valid and state = 'active'
    and source is distinct from 'conversation';

-- Each hit's relation strength (-1: none), as one function returns it.
create function pg_temp.boosts(p_rows jsonb) returns jsonb language sql as $$
  select jsonb_object_agg(right(r ->> 'id', 2), coalesce((r ->> 'max_relation_strength')::real, -1))
    from jsonb_array_elements(p_rows) r where right(r ->> 'id', 2) like 'a_'
$$;
create function pg_temp.match(p_as_of timestamptz default null) returns jsonb language sql as $$
  select pg_temp.boosts(jsonb_agg(to_jsonb(h)))
    from public.match_memories(tests.embedding(array[1, 0]::real[]), 'devai/project/ex', 20, 0, auth.uid(), 'm',
                               as_of => p_as_of) h
$$;
create function pg_temp.hnsw_scans() returns bigint language sql as $$
  select pg_stat_get_xact_numscans('public.devai_memories_embedding_hnsw'::regclass)
         + pg_stat_get_xact_numscans('public.devai_memories_hnsw_owner_8100000000004000800000000000000c'::regclass)
$$;
create temp table want (k text, boost real) on commit drop;
insert into want values ('a1', -1), ('a2', -1), ('a3', -1), ('a4', -1), ('a5', -1), ('a6', 0.5), ('a7', 0.7), ('a8', -1);
grant select on want to authenticated;

select tests.authenticate_as('81000000-0000-4000-8000-00000000000c');
create temp table found on commit drop as
select 'hybrid_search' as fn, pg_temp.boosts((select jsonb_agg(to_jsonb(h)) from public.hybrid_search(
         'ERR_SOCKET_TIMEOUT', tests.embedding(array[1, 0]::real[]), array['devai/project/ex'], 20, 0, 'm', graph_depth => 0) h)) as b
union all
select 'query_memories', pg_temp.boosts((select jsonb_agg(to_jsonb(q)) from public.query_memories(
         'ERR_SOCKET_TIMEOUT', tests.embedding(array[1, 0]::real[]), array['devai/project/ex'], 'coder', array['decisions'],
         20, 0, 'm', graph_depth => 0) q))
union all
select 'match_memories (exact)', pg_temp.match()
union all
select 'context_candidates', pg_temp.boosts((select jsonb_agg(to_jsonb(c)) from public.context_candidates(
         array['devai/project/ex'], (select array_agg(('81000000-0000-4000-8000-0000000000' || k)::uuid) from want)) c));
create temp table exact_scans on commit drop as select pg_temp.hnsw_scans() as n;
-- hybrid_search's vector list asks for no relation strengths (it ranks what it returns itself).
select is((select count(*)::int from public.match_memories(tests.embedding(array[1, 0]::real[]), 'devai/project/ex', 20, 0,
             auth.uid(), 'm', with_relations => false) where max_relation_strength is not null),
          0, 'match_memories with_relations => false: no relation strength, a6 and a7 included');

select is((select b from found where fn = 'hybrid_search'), (select jsonb_object_agg(k, boost) from want),
          'hybrid_search: no boost from an ended edge, another project, a faded, deleted or superseded memory, a raw episode or a contradiction; live edges count');
select is((select b from found where fn = 'query_memories'), (select jsonb_object_agg(k, boost) from want),
          'query_memories: the same');
select is((select b from found where fn = 'match_memories (exact)'), (select jsonb_object_agg(k, boost) from want),
          'match_memories, exact path: the same');
select is((select b from found where fn = 'context_candidates'), (select jsonb_object_agg(k, boost) from want),
          'context_candidates: the same');

-- No scope is small enough for the exact path: the same from the HNSW walk.
select tests.clear_authentication();
update public.memory_settings set value = 0 where name in ('exact_scan_max_rows', 'exact_scan_cost_ratio');
select tests.authenticate_as('81000000-0000-4000-8000-00000000000c');
create temp table walked on commit drop as select pg_temp.match() as b;
select ok(pg_temp.hnsw_scans() > (select n from exact_scans), 'the next search walked the HNSW index');
-- (An index walk is approximate: what it finds must carry the same strengths, and it must find the
-- two memories with a live edge, or a broken boost would go unseen.)
select ok((select jsonb_object_agg(k, boost) from want) @> (select b from walked)
          and (select b from walked) ?& array['a6', 'a7'],
          'match_memories, HNSW path: the same');

-- As of two hours ago: the edges ended since held, the edge made since did not; the other ends as
-- they were then (b5 was not deleted, b6 not superseded then: history has no record of either change).
create temp table then_ on commit drop as select pg_temp.match(now() - interval '2 hours') as b;
select is((select (b ->> 'a1')::real from then_), 0.9::real, 'as_of: an edge that ended since counts');
select is((select (b ->> 'a6')::real from then_), 0.9::real, 'as_of: the stronger edge held then counts');
select is((select (b ->> 'a7')::real from then_), -1::real, 'as_of: an edge made since does not');
select is((select (b ->> 'a4')::real from then_), -1::real, 'as_of: a contradiction still corroborates nothing');
select is((select (b ->> 'a3')::real from then_), 0.9::real, 'as_of: the floor is not applied (strength is today''s)');
select tests.clear_authentication();

-- A hop does not pass through a faded memory: c1 -> c2 (faded) -> c3, and c1 -> c4 -> c5 beside it.
insert into public.devai_memories (id, owner_id, content, memory_type, namespace, embedding, embedding_model, strength)
select ('81100000-0000-4000-8000-0000000000' || k)::uuid, '81100000-0000-4000-8000-00000000000c',
       c, 'semantic', 'devai/project/ex', tests.embedding(array[v, 1]::real[]), 'm', s
  from (values ('c1', 'The billing worker retries failed charges.', 9, 1.0),
               ('c2', 'Stripe webhooks are signed.', 0, 0.05), ('c3', 'Dunning emails go out at nine.', 0, 1.0),
               ('c4', 'Invoices are rendered as PDF.', 0, 1.0), ('c5', 'Receipts go to the payer.', 0, 1.0)) as x(k, c, v, s);
insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength)
select '81100000-0000-4000-8000-00000000000c', ('81100000-0000-4000-8000-0000000000' || f)::uuid,
       ('81100000-0000-4000-8000-0000000000' || t)::uuid, 'related_to', 0.9
  from (values ('c1', 'c2'), ('c2', 'c3'), ('c1', 'c4'), ('c4', 'c5')) as e(f, t);
select tests.authenticate_as('81100000-0000-4000-8000-00000000000c');
create temp table hops on commit drop as
select right(id::text, 2) as k, right(graph_via::text, 2) as via
  from public.hybrid_search('billing worker retries', tests.embedding(array[1, 0]::real[]), array['devai/project/ex'], 10,
                            0.9, 'm', graph_depth => 2)
 where graph_rank is not null;
select is((select array_agg(k || '<' || via order by k) from hops), array['c4<c1', 'c5<c4'],
          'two hops reach c5 through c4 but not c3 through the faded c2');
select tests.clear_authentication();

-- The tenant they are given: the entity lookup and the open contradictions for a service_role caller.
insert into public.devai_memories (id, owner_id, content, memory_type, namespace, strength, source, session_id, created_at, metadata)
values
  ('81200000-0000-4000-8000-0000000000d1', '81200000-0000-4000-8000-00000000000c', 'Deploys go out on Thursdays.',
   'semantic', 'devai/project/ex', 1.0, null, null, now() - interval '1 day', '{}'),
  ('81200000-0000-4000-8000-0000000000d2', '81200000-0000-4000-8000-00000000000c', 'Deploys go out on Mondays.',
   'semantic', 'devai/project/ex', 1.0, null, null, now() - interval '1 day', '{}'),
  ('81200000-0000-4000-8000-0000000000d3', '81200000-0000-4000-8000-00000000000c', 'Deploys go out on Fridays.',
   'semantic', 'devai/project/ex', 0.01, null, null, now() - interval '1 day', '{}'),
  ('81200000-0000-4000-8000-0000000000e1', '81200000-0000-4000-8000-00000000000c', 'ECONNREFUSED from the cache: start redis first.',
   'semantic', 'devai/project/ex', 1.0, null, null, now() - interval '2 hours', '{"category": "errors_and_fixes"}'),
  ('81200000-0000-4000-8000-0000000000e2', '81200000-0000-4000-8000-00000000000c', 'it fails again with ECONNREFUSED',
   'episodic', 'devai/project/ex', 1.0, 'conversation', 's1', now() - interval '1 hour',
   '{"role": "user", "digest": "d1", "seq": 0, "category": "errors_and_fixes"}');
insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength, valid_from)
values ('81200000-0000-4000-8000-00000000000c', '81200000-0000-4000-8000-0000000000d2', '81200000-0000-4000-8000-0000000000d1',
        'contradicts', 0.9, now() - interval '1 day'),
       ('81200000-0000-4000-8000-00000000000c', '81200000-0000-4000-8000-0000000000d3', '81200000-0000-4000-8000-0000000000d1',
        'contradicts', 0.9, now() - interval '1 day');
insert into public.memory_entities (id, owner_id, canonical_name, entity_type) values
  ('81200000-0000-4000-8000-0000000000f1', '81200000-0000-4000-8000-00000000000c', 'src/deploy.ts', 'file');
insert into public.memory_entity_links (owner_id, memory_id, entity_id, mention) values
  ('81200000-0000-4000-8000-00000000000c', '81200000-0000-4000-8000-0000000000d1', '81200000-0000-4000-8000-0000000000f1', 'src/deploy.ts');

select tests.authenticate_as('81200000-0000-4000-8000-00000000000c');
select is((select array_agg(right(memory_a::text, 2) || '-' || right(memory_b::text, 2))
             from public.context_open_contradictions(array['devai/project/ex'])),
          array['d1-d2'], 'the open contradictions leave out the pair whose other memory has faded');
select is((select array_agg(right(id::text, 2) order by id) from public.context_candidates(array['devai/project/ex'],
             recent_since => now() - interval '1 day', max_per_kind => 1) where kind = 'recent_error'),
          array['e1'], 'the recent-error lookup''s one slot goes to the error memory, not the newer raw episode');
select is((select count(*)::int from public.memory_entity_lookup(array['src/deploy.ts'])), 1,
          'the tenant''s entity lookup finds the memory naming the file');
select tests.clear_authentication();

select tests.as_service_role();
select is((select count(*)::int from public.memory_entity_lookup(array['src/deploy.ts'],
             match_owner => '81200000-0000-4000-8000-00000000000c')), 1,
          'service_role naming the tenant: the same entity lookup');
select is((select count(*)::int from public.hybrid_search('deploys mondays src/deploy.ts', null, array['devai/project/ex'], 10, 0,
             'm', match_owner => '81200000-0000-4000-8000-00000000000c', graph_depth => 0,
             entity_terms => array['src/deploy.ts']) where graph_edge = 'entity'), 1,
          'and hybrid_search''s entity signal for that tenant');
select is((select count(*)::int from public.context_open_contradictions(array['devai/project/ex'],
             match_owner => '81200000-0000-4000-8000-00000000000c')), 1,
          'service_role naming the tenant: the open contradictions');
select is((select count(*)::int from public.context_candidates(array['devai/project/ex'], contradictions => true,
             match_owner => '81200000-0000-4000-8000-00000000000c') where kind = 'contradiction'), 2,
          'and context_candidates'' critical tier for that tenant (each side of the pair)');
select is((select count(*)::int from public.context_open_contradictions(array['devai/project/ex'],
             match_owner => '81900000-0000-4000-8000-00000000000c')), 0,
          'a tenant without contradictions named: none');
select tests.clear_authentication();

-- A tenant naming another tenant reads nothing of it (RLS).
select tests.authenticate_as('81000000-0000-4000-8000-00000000000c');
select is((select count(*)::int from public.memory_entity_lookup(array['src/deploy.ts'],
             match_owner => '81200000-0000-4000-8000-00000000000c')), 0,
          'a tenant naming another in the entity lookup reads nothing');
select is((select count(*)::int from public.context_open_contradictions(array['devai/project/ex'],
             match_owner => '81200000-0000-4000-8000-00000000000c')), 0,
          'nor in the open contradictions');
select tests.clear_authentication();

-- The helper is not for anon.
select ok(not has_function_privilege('anon', 'memory_search.relation_strengths(uuid, uuid[], timestamptz, text[])', 'execute'),
          'anon cannot run the relation strength helper');

select * from finish();
rollback;
