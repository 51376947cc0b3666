-- An ended relation boosts nothing in match_memories or context_candidates either (migration
-- 20261128500000): max_relation_strength is the strongest edge valid now, and in match_memories'
-- as_of answer the strongest edge valid then (a later edge does not count, an edge ended since
-- does). Both vector paths (exact and HNSW) are checked. docs/graph.md.
begin;
select plan(10);

insert into public.devai_memories
  (id, owner_id, content, memory_type, namespace, embedding, embedding_model, created_at)
select ('81000000-0000-4000-8000-0000000000' || k)::uuid, '81000000-0000-4000-8000-00000000000c',
       'memory ' || k, 'semantic', 'devai/project/ex', tests.embedding(array[1, v]::real[]), 'm',
       now() - interval '3 days'
  from (values ('a1', 0.0), ('b1', 0.1), ('c1', 0.2), ('d1', 0.3), ('e1', 0.4)) as x(k, v);
-- a1: only an edge that ended an hour ago. c1: a live edge (0.5) and an ended one (0.9).
-- e1: an edge made an hour ago (0.7).
insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength, created_at, valid_from, valid_until)
select '81000000-0000-4000-8000-00000000000c', ('81000000-0000-4000-8000-0000000000' || f)::uuid,
       ('81000000-0000-4000-8000-0000000000' || t)::uuid, 'related_to', s,
       now() - interval '1 hour' * since, now() - interval '1 hour' * since,
       case when ended then now() - interval '1 hour' end
  from (values ('a1', 'b1', 0.9, true, 48), ('c1', 'd1', 0.5, false, 48), ('c1', 'b1', 0.9, true, 48),
               ('e1', 'd1', 0.7, false, 1)) as e(f, t, s, ended, since);

create function pg_temp.strengths(p_as_of timestamptz default null) returns jsonb language sql as $$
  select jsonb_object_agg(right(id::text, 2), coalesce(max_relation_strength, -1))
    from public.match_memories(tests.embedding(array[1, 0]::real[]), 'devai/project/ex', 10, 0, auth.uid(), 'm',
                               as_of => p_as_of)
$$;
create function pg_temp.hnsw_scans() returns bigint language sql as $$
  select pg_stat_get_xact_numscans('public.devai_memories_embedding_hnsw'::regclass)
$$;

select tests.authenticate_as('81000000-0000-4000-8000-00000000000c');
create temp table exact on commit drop as select pg_temp.strengths() as s, pg_temp.hnsw_scans() as scans;
select is((select (s ->> 'a1')::real from exact), -1::real, 'exact path: a memory whose only edge has ended gets no relation strength');
select is((select (s ->> 'c1')::real from exact), 0.5::real, 'exact path: the live edge counts, not the stronger ended one');
select is((select (s ->> 'e1')::real from exact), 0.7::real, 'exact path: a new edge counts');

-- No scope is small enough for the exact path: the same answers from the HNSW walk.
select tests.clear_authentication();
update public.memory_settings set value = 0 where name in ('exact_scan_max_rows', 'exact_scan_cost_ratio');
select tests.authenticate_as('81000000-0000-4000-8000-00000000000c');
create temp table walked on commit drop as select pg_temp.strengths() as s;
select ok(pg_temp.hnsw_scans() > (select scans from exact), 'the second search walked the HNSW index');
select is((select s from walked), (select s from exact), 'HNSW path: the same relation strengths');

-- As of yesterday: the edge ended an hour ago held then, the edge made an hour ago did not.
create temp table then_ on commit drop as select pg_temp.strengths(now() - interval '1 day') as s;
select is((select (s ->> 'a1')::real from then_), 0.9::real, 'as_of: an edge that ended since counts');
select is((select (s ->> 'c1')::real from then_), 0.9::real, 'as_of: the stronger edge held then');
select is((select (s ->> 'e1')::real from then_), -1::real, 'as_of: an edge made since does not count');

-- context_candidates, given the ids.
create temp table given on commit drop as
select jsonb_object_agg(right(id::text, 2), coalesce(max_relation_strength, -1)) as s
  from public.context_candidates(array['devai/project/ex'],
         array['81000000-0000-4000-8000-0000000000a1', '81000000-0000-4000-8000-0000000000c1']::uuid[]);
select is((select (s ->> 'a1')::real from given), -1::real, 'context_candidates: an ended edge gives no relation strength');
select is((select (s ->> 'c1')::real from given), 0.5::real, 'context_candidates: the live edge counts');

select * from finish();
rollback;
