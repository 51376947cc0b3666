-- Bitemporal facts and typed edges: a supersede or a contradiction closes the old fact's validity
-- (decay does not, a restore reopens it); memory_at, match_memories and query_memories answer as
-- of an instant from the validity columns and the history; raw episodes are never search results
-- and never decay; edges are unique per (from, to, type), checked, audited and cascaded.
-- The history's timestamps are set by hand (as the table owner) to place changes in the past.
begin;
set local timezone to 'UTC';
select plan(36);

-- 1. Closing validity -----------------------------------------------------------------------------
insert into public.devai_memories (id, owner_id, content, memory_type, namespace, embedding, embedding_model) values
  ('41100000-0000-4000-8000-000000000001', '41000000-0000-4000-8000-00000000000a', 'The API runs on Node 18.', 'semantic', 'devai/project/api', tests.embedding('{1,0.1}'), 'm'),
  ('41100000-0000-4000-8000-000000000002', '41000000-0000-4000-8000-00000000000a', 'The API runs on Node 20.', 'semantic', 'devai/project/api', tests.embedding('{1,0.12}'), 'm'),
  ('41100000-0000-4000-8000-000000000003', '41000000-0000-4000-8000-00000000000a', 'Staging uses Redis 6.', 'semantic', 'devai/project/api', tests.embedding('{0,1}'), 'm'),
  ('41100000-0000-4000-8000-000000000004', '41000000-0000-4000-8000-00000000000a', 'Logs go to Loki.', 'semantic', 'devai/project/api', tests.embedding('{0,0,1}'), 'm');

select is((select valid_from from public.devai_memories where id = '41100000-0000-4000-8000-000000000001'), now(), 'a new fact holds from when it is recorded');
select is((select valid_until from public.devai_memories where id = '41100000-0000-4000-8000-000000000001'), null, 'and has no end');

update public.devai_memories set superseded_by = '41100000-0000-4000-8000-000000000002', is_valid = false
 where id = '41100000-0000-4000-8000-000000000001';
select is((select valid_until from public.devai_memories where id = '41100000-0000-4000-8000-000000000001'), now(),
          'a supersede (correct, dedup UPDATE) closes the old fact''s validity at that moment');
select is((select event from public.memory_history where memory_id = '41100000-0000-4000-8000-000000000001' order by ts desc, event <> 'MERGE' limit 1),
          'MERGE', 'and it is still the MERGE it was');

update public.devai_memories set is_valid = false where id = '41100000-0000-4000-8000-000000000003';
select is((select valid_until from public.devai_memories where id = '41100000-0000-4000-8000-000000000003'), now(),
          'a contradiction (dedup DELETE) closes it too');

select set_config('memory.event', 'DECAY', true);
update public.devai_memories set is_valid = false where id = '41100000-0000-4000-8000-000000000004';
select set_config('memory.event', '', true);
select is((select valid_until from public.devai_memories where id = '41100000-0000-4000-8000-000000000004'), null,
          'decay''s invalidation does not: a faded memory says nothing about whether the fact still holds');

select tests.authenticate_as('41000000-0000-4000-8000-00000000000a');
select public.restore_memory('41100000-0000-4000-8000-000000000003');
select tests.clear_authentication();
select is((select (is_valid, valid_until) from public.devai_memories where id = '41100000-0000-4000-8000-000000000003'), (true, null::timestamptz),
          'a restore reopens a contradicted fact''s validity');
select throws_ok($$update public.devai_memories set valid_until = valid_from - interval '1 day' where id = '41100000-0000-4000-8000-000000000002'$$,
                 '23514', null, 'validity cannot end before it starts');

-- 2. As of an instant -----------------------------------------------------------------------------
-- Tenant B's story: Node 18 from January, replaced by Node 20 on 1 March; the deploy script renamed
-- in place on 1 February; a log note forgotten on 1 April; an episode of the same words as the fact.
insert into public.devai_memories (id, owner_id, content, memory_type, namespace, embedding, embedding_model, created_at, valid_from, metadata) values
  ('41200000-0000-4000-8000-000000000001', '41000000-0000-4000-8000-00000000000b', 'The API runs on Node 18.', 'semantic', 'devai/project/api', tests.embedding('{1,0.1}'), 'm', '2026-01-01T10:00Z', '2026-01-01T10:00Z', '{"category": "projects"}'),
  ('41200000-0000-4000-8000-000000000003', '41000000-0000-4000-8000-00000000000b', 'Deploys run deploy.sh.', 'procedural', 'devai/project/api', tests.embedding('{0.2,1}'), 'm', '2026-01-15T10:00Z', '2026-01-15T10:00Z', '{}'),
  ('41200000-0000-4000-8000-000000000004', '41000000-0000-4000-8000-00000000000b', 'Logs go to Loki.', 'semantic', 'devai/project/api', tests.embedding('{1,0.3}'), 'm', '2026-01-20T10:00Z', '2026-01-20T10:00Z', '{"category": "projects"}');
update public.memory_history set ts = m.created_at from public.devai_memories m
 where m.id = memory_history.memory_id and m.owner_id = '41000000-0000-4000-8000-00000000000b';
insert into public.devai_memories (id, owner_id, content, memory_type, namespace, embedding, embedding_model, created_at, valid_from, metadata) values
  ('41200000-0000-4000-8000-000000000002', '41000000-0000-4000-8000-00000000000b', 'The API runs on Node 20.', 'semantic', 'devai/project/api', tests.embedding('{1,0.11}'), 'm', '2026-03-01T10:00Z', '2026-03-01T10:00Z', '{"category": "projects"}');
update public.devai_memories set superseded_by = '41200000-0000-4000-8000-000000000002', is_valid = false
 where id = '41200000-0000-4000-8000-000000000001';
update public.devai_memories set valid_until = '2026-03-01T10:00Z' where id = '41200000-0000-4000-8000-000000000001';
update public.memory_history set ts = '2026-03-01T10:00Z'
 where memory_id in ('41200000-0000-4000-8000-000000000001', '41200000-0000-4000-8000-000000000002') and ts = now();
update public.devai_memories set content = 'Deploys run release.sh.' where id = '41200000-0000-4000-8000-000000000003';
update public.memory_history set ts = '2026-02-01T10:00Z' where memory_id = '41200000-0000-4000-8000-000000000003' and event = 'UPDATE';
update public.devai_memories set state = 'soft_deleted', purge_at = '2026-05-01T10:00Z' where id = '41200000-0000-4000-8000-000000000004';
update public.memory_history set ts = '2026-04-01T10:00Z' where memory_id = '41200000-0000-4000-8000-000000000004' and event = 'DELETE';
insert into public.devai_memories (id, owner_id, content, memory_type, namespace, source, session_id, embedding, embedding_model, created_at, valid_from, metadata) values
  ('41200000-0000-4000-8000-000000000005', '41000000-0000-4000-8000-00000000000b', 'we run the API on node 20 now', 'episodic', 'devai/project/api/episodes', 'conversation', 's1',
   tests.embedding('{1,0.11}'), 'm', '2026-03-01T09:00Z', '2026-03-01T09:00Z', '{"role": "user", "digest": "d", "seq": 0, "category": "projects"}');

create temporary table at_view on commit drop as
  select m.id, t.at, a.held, a.content
    from public.devai_memories m
   cross join (values ('2025-12-31T00:00Z'::timestamptz), ('2026-01-20T00:00Z'), ('2026-02-15T00:00Z'),
                      ('2026-03-01T10:00Z'), ('2026-03-15T00:00Z'), ('2026-04-15T00:00Z')) t(at)
   cross join lateral public.memory_at(m, t.at) a
   where m.owner_id = '41000000-0000-4000-8000-00000000000b';
grant select on at_view to authenticated;

select is((select held from at_view where id = '41200000-0000-4000-8000-000000000001' and at = '2025-12-31T00:00Z'), false, 'before it was recorded, the fact was not held');
select is((select (held, content) from at_view where id = '41200000-0000-4000-8000-000000000001' and at = '2026-02-15T00:00Z'), (true, 'The API runs on Node 18.'::text), 'in February the memory held "Node 18"');
select is((select held from at_view where id = '41200000-0000-4000-8000-000000000001' and at = '2026-03-01T10:00Z'), false, 'from the instant of the correction, no longer');
select is((select held from at_view where id = '41200000-0000-4000-8000-000000000002' and at = '2026-02-15T00:00Z'), false, '"Node 20" was not recorded in February');
select is((select held from at_view where id = '41200000-0000-4000-8000-000000000002' and at = '2026-03-01T10:00Z'), true, '"Node 20" holds from the correction on');
select is((select content from at_view where id = '41200000-0000-4000-8000-000000000003' and at = '2026-01-20T00:00Z'), 'Deploys run deploy.sh.', 'content before an in-place edit comes from the history');
select is((select content from at_view where id = '41200000-0000-4000-8000-000000000003' and at = '2026-02-15T00:00Z'), 'Deploys run release.sh.', 'and after it, the edited content');
select is((select held from at_view where id = '41200000-0000-4000-8000-000000000004' and at = '2026-03-15T00:00Z'), true, 'a memory forgotten in April was held in March');
select is((select held from at_view where id = '41200000-0000-4000-8000-000000000004' and at = '2026-04-15T00:00Z'), false, 'and not after it was forgotten');

select tests.authenticate_as('41000000-0000-4000-8000-00000000000b');
select results_eq($$select content from public.match_memories(tests.embedding('{1,0.1}'), 'devai/project/api', 5, 0.5, auth.uid(), 'm', null, '2026-02-15T00:00Z')$$,
                  $$values ('The API runs on Node 18.'::text), ('Logs go to Loki.')$$,
                  'match_memories as of February: Node 18 (then current) and the Loki note, not Node 20');
select results_eq($$select content from public.match_memories(tests.embedding('{1,0.1}'), 'devai/project/api', 5, 0.5, auth.uid(), 'm', null, '2026-04-15T00:00Z')$$,
                  $$values ('The API runs on Node 20.'::text)$$,
                  'as of mid-April: Node 20 only (Node 18 superseded, Loki forgotten)');
select results_eq($$select content from public.match_memories(tests.embedding('{1,0.1}'), 'devai/project/api', 5, 0.5, auth.uid(), 'm', null)$$,
                  $$values ('The API runs on Node 20.'::text)$$,
                  'now: Node 20, and never the episode that says the same');
select results_eq($$select content from public.match_memories(tests.embedding('{0.2,1}'), 'devai/project/api', 5, 0.5, auth.uid(), 'm', null, '2026-01-20T00:00Z')$$,
                  $$values ('Deploys run deploy.sh.'::text)$$,
                  'an as-of search returns the content as it was then');
select results_eq($$select content from public.query_memories('', tests.embedding('{1,0.1}'), array['devai/project/api'], 'planner', array['projects'], 5, 0.5, 'm',
                                                              as_of => '2026-02-15T00:00Z')$$,
                  $$values ('The API runs on Node 18.'::text), ('Logs go to Loki.')$$,
                  'query_memories as of February: the same answer, under the agent''s categories');
select results_eq($$select content from public.query_memories('', tests.embedding('{1,0.1}'), array['devai/project/api'], 'planner', array['projects'], 5, 0.5, 'm')$$,
                  $$values ('The API runs on Node 20.'::text)$$,
                  'query_memories now: Node 20, no episode');
select is_empty($$select * from public.match_memories(tests.embedding('{1,0.11}'), 'devai/project/api', 5, 0.5, auth.uid(), 'm', null, '2026-03-15T00:00Z')
                   where id = '41200000-0000-4000-8000-000000000005'$$,
                'raw episodes are not returned as of an instant either');
select tests.clear_authentication();

-- 3. Episodes do not decay; TTL still retires them ------------------------------------------------
insert into public.devai_memories (id, owner_id, content, memory_type, namespace, source, session_id, importance, priority, last_accessed_at, metadata) values
  ('41300000-0000-4000-8000-000000000001', '41000000-0000-4000-8000-00000000000c', 'ok, run the migration', 'episodic', 'devai/user/episodes', 'conversation', 's2', 2, 'low', now() - interval '90 days', '{"role": "user", "digest": "x", "seq": 0}'),
  ('41300000-0000-4000-8000-000000000002', '41000000-0000-4000-8000-00000000000c', 'The migration ran in June.', 'episodic', 'devai/global', null, null, 2, 'low', now() - interval '90 days', '{}');
select memory_private.run_decay();
select is((select strength from public.devai_memories where id = '41300000-0000-4000-8000-000000000001'), 1::double precision, 'a raw episode idle for 90 days keeps its strength');
select ok((select strength < 0.05 and not is_valid from public.devai_memories where id = '41300000-0000-4000-8000-000000000002'), 'an extracted episodic memory idle as long decays as before');
select memory_private.run_ttl();
select is((select state from public.devai_memories where id = '41300000-0000-4000-8000-000000000001'), 'soft_deleted', 'TTL retires the idle episode (importance 2)');

-- 4. Typed edges ------------------------------------------------------------------------------------
insert into public.devai_memories (id, owner_id, content, memory_type, namespace) values
  ('41400000-0000-4000-8000-000000000001', '41000000-0000-4000-8000-00000000000d', 'e1', 'episodic', 'devai/global'),
  ('41400000-0000-4000-8000-000000000002', '41000000-0000-4000-8000-00000000000d', 'e2', 'episodic', 'devai/global');
select lives_ok($$insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength, confidence, evidence) values
                   ('41000000-0000-4000-8000-00000000000d', '41400000-0000-4000-8000-000000000001', '41400000-0000-4000-8000-000000000002', 'temporal', 1, 1, '[]'),
                   ('41000000-0000-4000-8000-00000000000d', '41400000-0000-4000-8000-000000000001', '41400000-0000-4000-8000-000000000002', 'causal', 1, 0.7, '[{"reason": "the error led to the fix"}]'),
                   ('41000000-0000-4000-8000-00000000000d', '41400000-0000-4000-8000-000000000002', '41400000-0000-4000-8000-000000000001', 'entity', 0.5, 1, '[]')$$,
                'temporal, causal and entity edges are accepted, with confidence and evidence');
select throws_ok($$insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength) values
                   ('41000000-0000-4000-8000-00000000000d', '41400000-0000-4000-8000-000000000001', '41400000-0000-4000-8000-000000000002', 'causal', 0.2)$$,
                 '23505', 'duplicate key value violates unique constraint "memory_relations_unique_edge"', 'one edge per (from, to, type)');
select throws_ok($$insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength, confidence) values
                   ('41000000-0000-4000-8000-00000000000d', '41400000-0000-4000-8000-000000000002', '41400000-0000-4000-8000-000000000001', 'causal', 1, 1.5)$$,
                 '23514', null, 'confidence above 1 is rejected');
select throws_ok($$insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength, evidence) values
                   ('41000000-0000-4000-8000-00000000000d', '41400000-0000-4000-8000-000000000002', '41400000-0000-4000-8000-000000000001', 'causal', 1, '{"not": "an array"}')$$,
                 '23514', null, 'evidence must be a JSON array');
select throws_ok($$insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength, valid_from, valid_until) values
                   ('41000000-0000-4000-8000-00000000000d', '41400000-0000-4000-8000-000000000002', '41400000-0000-4000-8000-000000000001', 'temporal', 1, now(), now() - interval '1 hour')$$,
                 '23514', null, 'an edge''s validity cannot end before it starts');
select results_eq($$select meta ->> 'relation_type', (meta ->> 'confidence')::real from public.memory_history
                     where memory_id = '41400000-0000-4000-8000-000000000001' and event = 'LINK' order by meta ->> 'relation_type'$$,
                  $$values ('causal'::text, 0.7::real), ('temporal', 1)$$,
                  'each new edge is a LINK in its from-memory''s history, with its confidence');
update public.memory_relations set valid_until = now() where from_id = '41400000-0000-4000-8000-000000000001' and relation_type = 'causal';
select is((select count(*)::int from public.memory_history where memory_id = '41400000-0000-4000-8000-000000000001' and event = 'LINK'
            and meta ->> 'op' = 'update' and meta ->> 'valid_until' is not null), 1, 'closing an edge is audited too');
select is((select count(*)::int from public.memory_relations where owner_id = '41000000-0000-4000-8000-00000000000d'), 3, 'the three edges exist');
delete from public.devai_memories where id = '41400000-0000-4000-8000-000000000002';
select is((select count(*)::int from public.memory_relations where owner_id = '41000000-0000-4000-8000-00000000000d'), 0, 'purging a memory removes its edges (cascade)');

select * from finish();
rollback;
