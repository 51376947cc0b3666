-- The graph signals retrieval follows (memory_graph_neighbours, memory_temporal_chain,
-- memory_entity_lookup): what they reach, in which direction, with which weight, as of when, inside
-- which scopes, and that their work is bounded by their arguments. Then the session and nightly
-- functions: a session ends once with one consolidation job, the idle sweep and the graph
-- maintenance queue only what has work, once per night.
begin;
set local timezone to 'UTC';
select plan(39);

-- A session of five episodes (e1 → … → e5, one minute apart), facts derived from them, a causal
-- edge, a related fact, an invalid one, and a fact in another project. Everything was recorded on
-- 1 April; the edge e4 → e5 stopped holding on 1 June.
insert into public.devai_memories (id, owner_id, content, memory_type, namespace, source, session_id, is_valid, created_at, valid_from, metadata) values
  ('42100000-0000-4000-8000-0000000000e1', '42000000-0000-4000-8000-00000000000a', 'e1', 'episodic', 'devai/project/p/episodes', 'conversation', 's', true, '2026-04-01T10:00Z', '2026-04-01T10:01Z', '{"seq": 0}'),
  ('42100000-0000-4000-8000-0000000000e2', '42000000-0000-4000-8000-00000000000a', 'e2', 'episodic', 'devai/project/p/episodes', 'conversation', 's', true, '2026-04-01T10:00Z', '2026-04-01T10:02Z', '{"seq": 1}'),
  ('42100000-0000-4000-8000-0000000000e3', '42000000-0000-4000-8000-00000000000a', 'e3', 'episodic', 'devai/project/p/episodes', 'conversation', 's', true, '2026-04-01T10:00Z', '2026-04-01T10:03Z', '{"seq": 2}'),
  ('42100000-0000-4000-8000-0000000000e4', '42000000-0000-4000-8000-00000000000a', 'e4', 'episodic', 'devai/project/p/episodes', 'conversation', 's', true, '2026-04-01T10:00Z', '2026-04-01T10:04Z', '{"seq": 3}'),
  ('42100000-0000-4000-8000-0000000000e5', '42000000-0000-4000-8000-00000000000a', 'e5', 'episodic', 'devai/project/p/episodes', 'conversation', 's', true, '2026-04-01T10:00Z', '2026-04-01T10:05Z', '{"seq": 4}'),
  ('42100000-0000-4000-8000-0000000000f1', '42000000-0000-4000-8000-00000000000a', 'f1', 'semantic', 'devai/project/p', 'discovery', 's', true, '2026-04-01T10:00Z', '2026-04-01T10:10Z', '{}'),
  ('42100000-0000-4000-8000-0000000000f2', '42000000-0000-4000-8000-00000000000a', 'f2', 'semantic', 'devai/project/other', 'discovery', 's', true, '2026-04-01T10:00Z', '2026-04-01T10:10Z', '{}'),
  ('42100000-0000-4000-8000-0000000000f3', '42000000-0000-4000-8000-00000000000a', 'f3', 'semantic', 'devai/project/p', 'discovery', null, true, '2026-04-01T10:00Z', '2026-04-01T09:00Z', '{}'),
  ('42100000-0000-4000-8000-0000000000f4', '42000000-0000-4000-8000-00000000000a', 'f4', 'semantic', 'devai/project/p', 'discovery', null, false, '2026-04-01T10:00Z', '2026-04-01T09:00Z', '{}');
update public.memory_history set ts = '2026-04-01T10:00Z' where owner_id = '42000000-0000-4000-8000-00000000000a';
insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength, confidence, created_at, valid_from, valid_until) values
  ('42000000-0000-4000-8000-00000000000a', '42100000-0000-4000-8000-0000000000e1', '42100000-0000-4000-8000-0000000000e2', 'temporal', 1, 1, '2026-04-01T10:00Z', '2026-04-01T10:00Z', null),
  ('42000000-0000-4000-8000-00000000000a', '42100000-0000-4000-8000-0000000000e2', '42100000-0000-4000-8000-0000000000e3', 'temporal', 1, 1, '2026-04-01T10:00Z', '2026-04-01T10:00Z', null),
  ('42000000-0000-4000-8000-00000000000a', '42100000-0000-4000-8000-0000000000e3', '42100000-0000-4000-8000-0000000000e4', 'temporal', 1, 1, '2026-04-01T10:00Z', '2026-04-01T10:00Z', null),
  ('42000000-0000-4000-8000-00000000000a', '42100000-0000-4000-8000-0000000000e4', '42100000-0000-4000-8000-0000000000e5', 'temporal', 1, 1, '2026-04-01T10:00Z', '2026-04-01T10:00Z', '2026-06-01T00:00Z'),
  ('42000000-0000-4000-8000-00000000000a', '42100000-0000-4000-8000-0000000000e2', '42100000-0000-4000-8000-0000000000e3', 'causal', 1, 0.7, '2026-04-01T10:00Z', '2026-04-01T10:00Z', null),
  ('42000000-0000-4000-8000-00000000000a', '42100000-0000-4000-8000-0000000000f1', '42100000-0000-4000-8000-0000000000e2', 'derived_from', 1, 1, '2026-04-01T10:00Z', '2026-04-01T10:00Z', null),
  ('42000000-0000-4000-8000-00000000000a', '42100000-0000-4000-8000-0000000000f1', '42100000-0000-4000-8000-0000000000e3', 'derived_from', 1, 0.8, '2026-04-01T10:00Z', '2026-04-01T10:00Z', null),
  ('42000000-0000-4000-8000-00000000000a', '42100000-0000-4000-8000-0000000000f2', '42100000-0000-4000-8000-0000000000e4', 'derived_from', 1, 1, '2026-04-01T10:00Z', '2026-04-01T10:00Z', null),
  ('42000000-0000-4000-8000-00000000000a', '42100000-0000-4000-8000-0000000000f3', '42100000-0000-4000-8000-0000000000f1', 'related_to', 0.5, 1, '2026-04-01T10:00Z', '2026-04-01T10:00Z', null),
  ('42000000-0000-4000-8000-00000000000a', '42100000-0000-4000-8000-0000000000f4', '42100000-0000-4000-8000-0000000000f1', 'related_to', 0.9, 1, '2026-04-01T10:00Z', '2026-04-01T10:00Z', null);
insert into public.memory_entities (id, owner_id, canonical_name, entity_type, aliases) values
  ('42200000-0000-4000-8000-000000000001', '42000000-0000-4000-8000-00000000000a', 'React', 'package', '{react.js}'),
  ('42200000-0000-4000-8000-000000000002', '42000000-0000-4000-8000-00000000000a', 'src/app.ts', 'file', '{}');
insert into public.memory_entity_links (owner_id, memory_id, entity_id, mention, confidence) values
  ('42000000-0000-4000-8000-00000000000a', '42100000-0000-4000-8000-0000000000f1', '42200000-0000-4000-8000-000000000001', 'React', 1),
  ('42000000-0000-4000-8000-00000000000a', '42100000-0000-4000-8000-0000000000e2', '42200000-0000-4000-8000-000000000001', 'react@18', 0.9),
  ('42000000-0000-4000-8000-00000000000a', '42100000-0000-4000-8000-0000000000f2', '42200000-0000-4000-8000-000000000001', 'React', 1),
  ('42000000-0000-4000-8000-00000000000a', '42100000-0000-4000-8000-0000000000f3', '42200000-0000-4000-8000-000000000002', 'src/app.ts', 1);

select tests.authenticate_as('42000000-0000-4000-8000-00000000000a');

-- BFS -----------------------------------------------------------------------------------------------
select results_eq($$select id, via, edge_type, depth, round(weight::numeric, 3) from public.memory_graph_neighbours(array['42100000-0000-4000-8000-0000000000f1'::uuid], array['derived_from'], 1, 10)$$,
  $$values ('42100000-0000-4000-8000-0000000000e2'::uuid, '42100000-0000-4000-8000-0000000000f1'::uuid, 'derived_from'::text, 1, 1.0),
           ('42100000-0000-4000-8000-0000000000e3', '42100000-0000-4000-8000-0000000000f1', 'derived_from', 1, 0.8)$$,
  'derived_from forward: the fact''s source episodes, weight = strength × confidence, best first');
select results_eq($$select id, round(weight::numeric, 3) from public.memory_graph_neighbours(array['42100000-0000-4000-8000-0000000000e2'::uuid], array['causal'], 3, 10)$$,
  $$values ('42100000-0000-4000-8000-0000000000e3'::uuid, 0.7)$$,
  'causal forward from a cause: its effect, weighted by the edge''s confidence');
select results_eq($$select id from public.memory_graph_neighbours(array['42100000-0000-4000-8000-0000000000e3'::uuid], array['causal'], 3, 10, null, null, 'backward')$$,
  $$values ('42100000-0000-4000-8000-0000000000e2'::uuid)$$,
  'causal backward from an effect: its cause (a "why" question)');
select is_empty($$select * from public.memory_graph_neighbours(array['42100000-0000-4000-8000-0000000000e3'::uuid], array['causal'], 3, 10)$$,
  'a directional type is not followed against its direction by default');
select results_eq($$select id, depth, round(weight::numeric, 3) from public.memory_graph_neighbours(array['42100000-0000-4000-8000-0000000000f3'::uuid], array['related_to', 'derived_from'], 2, 10)$$,
  $$values ('42100000-0000-4000-8000-0000000000f1'::uuid, 1, 0.5), ('42100000-0000-4000-8000-0000000000e2', 2, 0.25), ('42100000-0000-4000-8000-0000000000e3', 2, 0.2)$$,
  'two hops: related_to (symmetric) then derived_from; weight multiplies along the path and halves per extra hop; the invalid f4 is never reached');
select is((select count(*)::int from public.memory_graph_neighbours(array['42100000-0000-4000-8000-0000000000e1'::uuid], null, 50, 2, null, null, 'both')), 2,
  'max_nodes bounds the answer however much there is to find');
select ok(not exists (select from public.memory_graph_neighbours(array['42100000-0000-4000-8000-0000000000e1'::uuid, '42100000-0000-4000-8000-0000000000f1'::uuid], null, 5, 50, null, null, 'both')
                       where id in ('42100000-0000-4000-8000-0000000000e1', '42100000-0000-4000-8000-0000000000f1')),
  'seeds are never returned');
select results_eq($$select id from public.memory_graph_neighbours(array['42100000-0000-4000-8000-0000000000e4'::uuid], array['derived_from'], 1, 10, null, null, 'backward')$$,
  $$values ('42100000-0000-4000-8000-0000000000f2'::uuid)$$,
  'backward over derived_from: the facts an episode led to');
select is_empty($$select * from public.memory_graph_neighbours(array['42100000-0000-4000-8000-0000000000e4'::uuid], array['derived_from'], 1, 10, null, array['devai/project/p'], 'backward')$$,
  'with scopes, a fact of another project is neither returned nor walked through');
select is_empty($$select * from public.memory_graph_neighbours(array['42100000-0000-4000-8000-0000000000e4'::uuid], array['temporal'], 1, 10)$$,
  'an edge whose validity has ended is not followed now');
select results_eq($$select id from public.memory_graph_neighbours(array['42100000-0000-4000-8000-0000000000e4'::uuid], array['temporal'], 1, 10, '2026-05-01T00:00Z')$$,
  $$values ('42100000-0000-4000-8000-0000000000e5'::uuid)$$,
  'as of May, when it held, it is');
select is_empty($$select * from public.memory_graph_neighbours(array['42100000-0000-4000-8000-0000000000e1'::uuid], array['temporal'], 1, 10, '2026-03-01T00:00Z')$$,
  'as of March nothing had been recorded: no edge, no memory');
select throws_ok($$select * from public.memory_graph_neighbours(array['42100000-0000-4000-8000-0000000000e1'::uuid], null, 0, 10)$$, '22023', null, 'max_depth below 1 is refused');
select throws_ok($$select * from public.memory_graph_neighbours(array['42100000-0000-4000-8000-0000000000e1'::uuid], null, 2, 501)$$, '22023', null, 'max_nodes above 500 is refused');
select throws_ok($$select * from public.memory_graph_neighbours(array['42100000-0000-4000-8000-0000000000e1'::uuid], array['likes'], 2, 10)$$, '22023', null, 'an unknown edge type is refused');
select throws_ok($$select * from public.memory_graph_neighbours(array(select gen_random_uuid() from generate_series(1, 101)), null, 2, 10)$$, '22023', null, 'more than 100 seeds are refused');
select throws_ok($$select * from public.memory_graph_neighbours(array['42100000-0000-4000-8000-0000000000e1'::uuid], null, 2, 10, null, null, 'up')$$, '22023', null, 'an unknown direction is refused');

-- Temporal chain --------------------------------------------------------------------------------------
select results_eq($$select id, depth, chain_direction, event_at from public.memory_temporal_chain('42100000-0000-4000-8000-0000000000e3')$$,
  $$values ('42100000-0000-4000-8000-0000000000e1'::uuid, 2, 'backward'::text, '2026-04-01T10:01Z'::timestamptz),
           ('42100000-0000-4000-8000-0000000000e2', 1, 'backward', '2026-04-01T10:02Z'),
           ('42100000-0000-4000-8000-0000000000e4', 1, 'forward', '2026-04-01T10:04Z')$$,
  'the chain around an episode as a timeline; it ends where the temporal edge stopped holding');
select results_eq($$select id from public.memory_temporal_chain('42100000-0000-4000-8000-0000000000e1', 'forward', 2)$$,
  $$values ('42100000-0000-4000-8000-0000000000e2'::uuid), ('42100000-0000-4000-8000-0000000000e3')$$,
  'forward only, at most max_nodes');
select is((select count(*)::int from public.memory_temporal_chain('42100000-0000-4000-8000-0000000000e3', 'forward', 10, '2026-05-01T00:00Z')), 2,
  'as of May the chain still ran on to e5');

-- Entity lookup ----------------------------------------------------------------------------------
select results_eq($$select id, entity_name, round(weight::numeric, 3) from public.memory_entity_lookup(array['REACT'])$$,
  $$values ('42100000-0000-4000-8000-0000000000f1'::uuid, 'React'::text, 1.0), ('42100000-0000-4000-8000-0000000000f2', 'React', 1.0),
           ('42100000-0000-4000-8000-0000000000e2', 'React', 0.9)$$,
  'a name resolved whatever its case: the linked memories, newest first, weighted by the link''s confidence');
select results_eq($$select id, round(weight::numeric, 3) from public.memory_entity_lookup(array['React-JS'], 1)$$,
  $$values ('42100000-0000-4000-8000-0000000000f1'::uuid, 0.8)$$,
  'an alias resolves, punctuation ignored, at 0.8 of a canonical match; max_nodes bounds the answer');
select results_eq($$select id from public.memory_entity_lookup(array['react'], 10, null, array['devai/project/p'])$$,
  $$values ('42100000-0000-4000-8000-0000000000f1'::uuid), ('42100000-0000-4000-8000-0000000000e2')$$,
  'with scopes, another project''s fact is left out');
select results_eq($$select id, entity_type from public.memory_entity_lookup(array['SRC/App.TS'])$$,
  $$values ('42100000-0000-4000-8000-0000000000f3'::uuid, 'file'::text)$$,
  'a file path resolves case-insensitively');
select is_empty($$select * from public.memory_entity_lookup(array['%', '_', '.*', 'react%', '']) where entity_name <> 'React'$$,
  'terms are plain text: wildcards match nothing but themselves ("react%" is "react")');
select is_empty($$select * from public.memory_entity_lookup(array['%', '_', ':*', '!&|'])$$, 'punctuation-only terms resolve to nothing, without an error');
select is((select count(*)::int from public.memory_entity_lookup(array['react'], 50, '2026-03-01T00:00Z')), 0, 'as of March nothing was recorded');
select throws_ok($$select * from public.memory_entity_lookup(array(select 't' || g from generate_series(1, 21) as g))$$, '22023', null, 'more than 20 terms are refused');

-- Sessions and nightly jobs --------------------------------------------------------------------------
select tests.clear_authentication();
insert into public.memory_sessions (id, owner_id, session_id, thread_id, namespace, episode_count, updated_at) values
  ('42300000-0000-4000-8000-000000000001', '42000000-0000-4000-8000-00000000000a', 's', 't', 'devai/project/p/episodes', 5, now() - interval '3 hours'),
  ('42300000-0000-4000-8000-000000000002', '42000000-0000-4000-8000-00000000000a', 's-busy', 't2', 'devai/project/p/episodes', 2, now() - interval '10 minutes'),
  ('42300000-0000-4000-8000-000000000003', '42000000-0000-4000-8000-00000000000b', 's-b', null, 'devai/user/episodes', 1, now() - interval '2 hours');
select tests.authenticate_as('42000000-0000-4000-8000-00000000000a');
select set_config('role', 'none', true);  -- the service acting for A (sessions.ts asService): A's claims, the service's role
select results_eq($$select session_id, ended_now from memory_private.end_memory_sessions(array['42300000-0000-4000-8000-000000000001'::uuid], 'explicit')$$,
  $$values ('s'::text, true)$$, 'ending a session ends it now');
select results_eq($$select session_id, ended_now from memory_private.end_memory_sessions(array['42300000-0000-4000-8000-000000000001'::uuid], 'new_session')$$,
  $$values ('s'::text, false)$$, 'ending it again changes nothing');
select results_eq($$select kind, idempotency_key, payload from public.memory_jobs where owner_id = auth.uid()$$,
  $$values ('consolidate'::text, 'consolidate:s'::text, '{"session_id": "s"}'::jsonb)$$, 'one consolidation job, however often it is ended');
select is((select (end_reason, consolidation_job_id = (select id from public.memory_jobs where owner_id = auth.uid())) from public.memory_sessions where session_id = 's'),
  ('explicit'::text, true), 'the session records why it ended and its job: the consolidation record');
select throws_ok($$select * from memory_private.end_memory_sessions(array['42300000-0000-4000-8000-000000000002'::uuid], 'bored')$$, '22023', null, 'an unknown reason is refused');
select tests.clear_authentication();

select is(memory_private.end_idle_sessions(), '{"ended": 1, "queued": 1}'::jsonb, 'the nightly sweep ends the session idle for over an hour (tenant B''s), not the busy one');
select is(memory_private.end_idle_sessions(), '{"ended": 0, "queued": 0}'::jsonb, 'and nothing the second time');
select is((select end_reason from public.memory_sessions where session_id = 's-b'), 'idle', 'B''s session ended as idle');

update public.memory_entities set mention_count = 3 where id = '42200000-0000-4000-8000-000000000001';
-- The function queues for every tenant with work: count this file's tenants' jobs only, so the
-- test passes on a database other tests (or users) have written to.
create function pg_temp.graph_jobs(p_night text) returns jsonb language sql as $$
  select coalesce(jsonb_object_agg(kind, n), '{}'::jsonb) from (
    select kind, count(*)::int as n from public.memory_jobs
     where owner_id in ('42000000-0000-4000-8000-00000000000a', '42000000-0000-4000-8000-00000000000b')
       and kind in ('enrich', 'causal') and idempotency_key = kind || ':' || p_night
     group by kind) j
$$;
do $$ begin perform memory_private.enqueue_graph_maintenance('2026-11-20T02:30Z'); end $$;
select is(pg_temp.graph_jobs('2026-11-20'), '{"enrich": 1, "causal": 1}'::jsonb,
  'tonight: one enrichment job (an entity with 3 mentions, no summary), one causal job (an ended session with unchecked pairs)');
do $$ begin perform memory_private.enqueue_graph_maintenance('2026-11-20T03:00Z'); end $$;
select is(pg_temp.graph_jobs('2026-11-20'), '{"enrich": 1, "causal": 1}'::jsonb, 'once per tenant per night');
do $$ begin perform memory_private.enqueue_graph_maintenance('2026-11-21T02:30Z'); end $$;
select is(pg_temp.graph_jobs('2026-11-21'), '{"enrich": 1, "causal": 1}'::jsonb, 'the next night again, while the work is there');

select * from finish();
rollback;
