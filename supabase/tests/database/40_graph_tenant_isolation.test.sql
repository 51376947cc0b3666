-- The graph's RLS from the outside: signed in as tenant A, tenant B's entities, entity links,
-- sessions, episodes and edges cannot be seen, counted, changed, planted, linked to, resolved by
-- name, or reached through the graph functions; anon gets nothing. Fixtures are written as the
-- table owner (postgres), the way the service and the cron jobs write.
begin;
select plan(42);

-- Tenant A and B each have two episodes of a session, a temporal edge, a fact derived from the
-- first episode, an entity with an alias and links; B's entity has the same name as one of A's.
insert into public.devai_memories (id, owner_id, content, memory_type, namespace, source, session_id, metadata) values
  ('40100000-0000-4000-8000-0000000000a1', '40000000-0000-4000-8000-00000000000a', 'the build fails in src/app.ts', 'episodic', 'devai/user/episodes', 'conversation', 's-a', '{"role": "user", "digest": "a1", "seq": 0}'),
  ('40100000-0000-4000-8000-0000000000a2', '40000000-0000-4000-8000-00000000000a', 'fixed the import in src/app.ts', 'episodic', 'devai/user/episodes', 'conversation', 's-a', '{"role": "assistant", "digest": "a2", "seq": 1}'),
  ('40100000-0000-4000-8000-0000000000a3', '40000000-0000-4000-8000-00000000000a', 'The app imports config from src/config.ts.', 'semantic', 'devai/global', 'discovery', null, '{}'),
  ('40100000-0000-4000-8000-0000000000b1', '40000000-0000-4000-8000-00000000000b', 'b: deploy with kubectl apply', 'episodic', 'devai/user/episodes', 'conversation', 's-b', '{"role": "user", "digest": "b1", "seq": 0}'),
  ('40100000-0000-4000-8000-0000000000b2', '40000000-0000-4000-8000-00000000000b', 'b: rolled out', 'episodic', 'devai/user/episodes', 'conversation', 's-b', '{"role": "assistant", "digest": "b2", "seq": 1}'),
  ('40100000-0000-4000-8000-0000000000b3', '40000000-0000-4000-8000-00000000000b', 'Tenant B deploys with kubectl.', 'semantic', 'devai/global', 'discovery', null, '{}');
insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength) values
  ('40000000-0000-4000-8000-00000000000a', '40100000-0000-4000-8000-0000000000a1', '40100000-0000-4000-8000-0000000000a2', 'temporal', 1),
  ('40000000-0000-4000-8000-00000000000a', '40100000-0000-4000-8000-0000000000a3', '40100000-0000-4000-8000-0000000000a1', 'derived_from', 1),
  ('40000000-0000-4000-8000-00000000000b', '40100000-0000-4000-8000-0000000000b1', '40100000-0000-4000-8000-0000000000b2', 'temporal', 1),
  ('40000000-0000-4000-8000-00000000000b', '40100000-0000-4000-8000-0000000000b3', '40100000-0000-4000-8000-0000000000b1', 'derived_from', 1);
insert into public.memory_entities (id, owner_id, canonical_name, entity_type, aliases) values
  ('40200000-0000-4000-8000-0000000000a1', '40000000-0000-4000-8000-00000000000a', 'src/app.ts', 'file', '{}'),
  ('40200000-0000-4000-8000-0000000000b1', '40000000-0000-4000-8000-00000000000b', 'kubectl apply', 'command', '{"k8s deploy"}'),
  ('40200000-0000-4000-8000-0000000000b2', '40000000-0000-4000-8000-00000000000b', 'src/app.ts', 'file', '{}');
insert into public.memory_entity_links (owner_id, memory_id, entity_id, mention) values
  ('40000000-0000-4000-8000-00000000000a', '40100000-0000-4000-8000-0000000000a1', '40200000-0000-4000-8000-0000000000a1', 'src/app.ts'),
  ('40000000-0000-4000-8000-00000000000b', '40100000-0000-4000-8000-0000000000b1', '40200000-0000-4000-8000-0000000000b1', 'kubectl apply'),
  ('40000000-0000-4000-8000-00000000000b', '40100000-0000-4000-8000-0000000000b3', '40200000-0000-4000-8000-0000000000b1', 'kubectl');
insert into public.memory_sessions (owner_id, session_id, namespace, episode_count, last_episode_id) values
  ('40000000-0000-4000-8000-00000000000a', 's-a', 'devai/user/episodes', 2, '40100000-0000-4000-8000-0000000000a2'),
  ('40000000-0000-4000-8000-00000000000b', 's-b', 'devai/user/episodes', 2, '40100000-0000-4000-8000-0000000000b2');

select tests.authenticate_as('40000000-0000-4000-8000-00000000000a');

-- See and count: B's rows are invisible, A's own are there (the checks are not vacuous).
select is_empty($$select * from public.memory_entities where owner_id = '40000000-0000-4000-8000-00000000000b'$$, 'A cannot select B''s entities');
select is((select count(*)::int from public.memory_entities), 1, 'A counts only its own entity');
select is_empty($$select * from public.memory_entity_links where owner_id = '40000000-0000-4000-8000-00000000000b'$$, 'A cannot select B''s entity links');
select is((select count(*)::int from public.memory_entity_links), 1, 'A counts only its own entity link');
select is_empty($$select * from public.memory_sessions where owner_id = '40000000-0000-4000-8000-00000000000b'$$, 'A cannot select B''s sessions');
select is((select count(*)::int from public.memory_sessions), 1, 'A counts only its own session');
select is_empty($$select * from public.devai_memories where source = 'conversation' and owner_id = '40000000-0000-4000-8000-00000000000b'$$, 'A cannot select B''s episodes');
select is((select count(*)::int from public.devai_memories where source = 'conversation'), 2, 'A sees its own two episodes');
select is_empty($$select * from public.memory_relations where relation_type in ('temporal', 'derived_from') and owner_id = '40000000-0000-4000-8000-00000000000b'$$, 'A cannot select B''s temporal and derived_from edges');
select is((select count(*)::int from public.memory_relations), 2, 'A sees its own two edges');

-- Change: B's rows are not there to update; nothing may be deleted by a tenant.
select is_empty($$update public.memory_entities set summary = 'pwned' where owner_id = '40000000-0000-4000-8000-00000000000b' returning id$$, 'A updates none of B''s entities');
select is_empty($$update public.memory_sessions set episode_count = 0 where owner_id = '40000000-0000-4000-8000-00000000000b' returning id$$, 'A updates none of B''s sessions');
select is_empty($$update public.memory_relations set valid_until = now() where owner_id = '40000000-0000-4000-8000-00000000000b' returning id$$, 'A closes none of B''s edges');
select lives_ok($$update public.memory_entities set summary = 'blind'$$, 'a blind update of memory_entities runs (own rows only)');
select throws_ok($$delete from public.memory_entities$$, '42501', 'permission denied for table memory_entities', 'a tenant cannot delete entities');
select throws_ok($$delete from public.memory_entity_links$$, '42501', 'permission denied for table memory_entity_links', 'a tenant cannot delete entity links');
select throws_ok($$delete from public.memory_sessions$$, '42501', 'permission denied for table memory_sessions', 'a tenant cannot delete sessions');
select throws_ok($$update public.memory_entities set owner_id = '40000000-0000-4000-8000-00000000000b'$$, '42501', 'permission denied for table memory_entities', 'A cannot hand its entity to B');

-- Plant: rows owned by B are refused; links to B's entity or B's memory fail the composite keys.
select throws_ok($$insert into public.memory_entities (owner_id, canonical_name, entity_type) values ('40000000-0000-4000-8000-00000000000b', 'planted', 'tool')$$,
  '42501', 'new row violates row-level security policy for table "memory_entities"', 'A cannot create an entity owned by B');
select throws_ok($$insert into public.memory_sessions (owner_id, session_id, namespace) values ('40000000-0000-4000-8000-00000000000b', 'planted', 'devai/user/episodes')$$,
  '42501', 'new row violates row-level security policy for table "memory_sessions"', 'A cannot open a session owned by B');
select throws_ok($$insert into public.memory_entity_links (owner_id, memory_id, entity_id, mention) values ('40000000-0000-4000-8000-00000000000a', '40100000-0000-4000-8000-0000000000a1', '40200000-0000-4000-8000-0000000000b1', 'x')$$,
  '23503', null, 'A cannot link its memory to B''s entity');
select throws_ok($$insert into public.memory_entity_links (owner_id, memory_id, entity_id, mention) values ('40000000-0000-4000-8000-00000000000a', '40100000-0000-4000-8000-0000000000b1', '40200000-0000-4000-8000-0000000000a1', 'x')$$,
  '23503', null, 'A cannot link B''s memory to its entity');
select throws_ok($$insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength) values ('40000000-0000-4000-8000-00000000000a', '40100000-0000-4000-8000-0000000000a2', '40100000-0000-4000-8000-0000000000b1', 'temporal', 1)$$,
  '23503', null, 'A cannot chain its episode to B''s');
select throws_ok($$select public.link_memory_entities('[{"memory_id": "40100000-0000-4000-8000-0000000000b1", "name": "src/app.ts", "type": "file"}]')$$,
  '23503', null, 'link_memory_entities cannot link B''s memory');

-- Resolve: names resolve only among A's own entities.
select is(public.link_memory_entities('[{"memory_id": "40100000-0000-4000-8000-0000000000a2", "name": "kubectl apply", "type": "command"},
                                        {"memory_id": "40100000-0000-4000-8000-0000000000a2", "name": "k8s deploy", "type": "command"},
                                        {"memory_id": "40100000-0000-4000-8000-0000000000a2", "name": "SRC/App.ts", "type": "file"}]'), 3,
          'A links its memory to three names, one of them B''s alias');
select results_eq($$select e.canonical_name, e.owner_id from public.memory_entity_links l join public.memory_entities e on e.id = l.entity_id
                     where l.memory_id = '40100000-0000-4000-8000-0000000000a2' order by e.canonical_name$$,
                  $$values ('k8s deploy'::text, '40000000-0000-4000-8000-00000000000a'::uuid), ('kubectl apply', '40000000-0000-4000-8000-00000000000a'),
                           ('src/app.ts', '40000000-0000-4000-8000-00000000000a')$$,
                  'every name resolved to (or created) an entity of A: B''s "kubectl apply" and its alias are never reached, "SRC/App.ts" is A''s src/app.ts');
select is((select mention_count from public.memory_entities where id = '40200000-0000-4000-8000-0000000000a1'), 1,
          'the new link counted a mention on A''s entity');
select is_empty($$select * from public.memory_entity_lookup(array['kubectl', 'k8s-deploy']) where id::text like '40100000-0000-4000-8000-0000000000b%'$$,
                'entity lookup as A never returns B''s memories, whatever the names');
select results_eq($$select id from public.memory_entity_lookup(array['src/app.ts']) order by id$$,
                  $$values ('40100000-0000-4000-8000-0000000000a1'::uuid), ('40100000-0000-4000-8000-0000000000a2')$$,
                  'entity lookup as A finds A''s memories for a name both tenants use');

-- Traverse: B's seeds lead nowhere; A's own traversal stays in A.
select is_empty($$select * from public.memory_graph_neighbours(array['40100000-0000-4000-8000-0000000000b1'::uuid], null, 3, 50)$$,
                'BFS from B''s episode as A finds nothing');
select is_empty($$select * from public.memory_temporal_chain('40100000-0000-4000-8000-0000000000b1')$$,
                'the temporal chain of B''s episode as A is empty');
select results_eq($$select id, depth from public.memory_graph_neighbours(array['40100000-0000-4000-8000-0000000000a3'::uuid], null, 3, 50, null, null, 'both')$$,
                  $$values ('40100000-0000-4000-8000-0000000000a1'::uuid, 1), ('40100000-0000-4000-8000-0000000000a2', 2)$$,
                  'BFS from A''s fact reaches A''s two episodes and nothing else');

-- Sessions: A cannot end sessions (nor queue their consolidation) itself; the service, acting for
-- A (A's claims, the service's role: sessions.ts asService), can end A's only, B's id given or not.
select throws_ok($$select * from memory_private.end_memory_sessions(array(select id from public.memory_sessions), 'explicit')$$,
                 '42501', null, 'A cannot call end_memory_sessions itself (memory_private is the service''s)');
select set_config('role', 'none', true);
select is_empty($$select * from memory_private.end_memory_sessions(array(select id from public.memory_sessions where session_id = 's-b'), 'explicit')$$,
                'acting for A, the service cannot end B''s session, named by its row id');
select is((select count(*)::int from memory_private.end_memory_sessions(array(select id from public.memory_sessions), 'explicit')), 1,
          'acting for A, it ends A''s own session only');
select tests.authenticate_as('40000000-0000-4000-8000-00000000000a');

-- anon: no privilege at all.
select tests.as_anon();
select throws_ok($$select * from public.memory_entities$$, '42501', 'permission denied for table memory_entities', 'anon cannot read entities');
select throws_ok($$select * from public.memory_entity_links$$, '42501', 'permission denied for table memory_entity_links', 'anon cannot read entity links');
select throws_ok($$select * from public.memory_sessions$$, '42501', 'permission denied for table memory_sessions', 'anon cannot read sessions');
select throws_ok($$select * from public.memory_entity_lookup(array['src/app.ts'])$$, '42501', null, 'anon cannot call the entity lookup');

-- B's rows are as they were, seen by the table owner; the service role sees both tenants.
select tests.clear_authentication();
select is((select summary from public.memory_entities where id = '40200000-0000-4000-8000-0000000000b1'), null, 'B''s entity is unchanged');
select is((select ended_at from public.memory_sessions where session_id = 's-b'), null, 'B''s session is still open');
select tests.as_service_role();
select is((select count(distinct owner_id)::int from public.memory_entities
            where owner_id in ('40000000-0000-4000-8000-00000000000a', '40000000-0000-4000-8000-00000000000b')), 2,
          'the service role sees both tenants'' entities');

select * from finish();
rollback;
