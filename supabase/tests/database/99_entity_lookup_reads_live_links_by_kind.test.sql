-- A who/what question's entity lookup finds the fact that names an entity however many newer
-- episodes, or forgotten memories, name it too (migration 20261203500000, docs/graph.md#graph-signals):
-- it reads each entity's live links by kind, facts apart from episodes, and answers facts first.
begin;
select plan(7);

-- One fact names src/billing.ts on 1 April; then 100 episodes of a session and 100 memories the
-- tenant forgot name it, all newer.
insert into public.devai_memories (id, owner_id, content, memory_type, namespace, source, session_id, state, created_at, valid_from, metadata)
select '99f10000-0000-4000-8000-0000000000f1'::uuid, '99f00000-0000-4000-8000-00000000000a'::uuid,
       'src/billing.ts must never import the database client directly'::text, 'semantic'::text, 'devai/project/p'::text, 'user_stated'::text, null::text,
       'active'::text, '2026-04-01T10:00Z'::timestamptz, '2026-04-01T10:00Z'::timestamptz, '{}'::jsonb
union all
select ('99f20000-0000-4000-8000-' || lpad(g::text, 12, '0'))::uuid, '99f00000-0000-4000-8000-00000000000a',
       'turn ' || g || ': open src/billing.ts again', 'episodic', 'devai/project/p/episodes', 'conversation', 's', 'active',
       '2026-04-02T10:00Z'::timestamptz + g * interval '1 minute', '2026-04-02T10:00Z'::timestamptz + g * interval '1 minute',
       jsonb_build_object('seq', g, 'role', 'user')
  from generate_series(1, 100) g
union all
select ('99f30000-0000-4000-8000-' || lpad(g::text, 12, '0'))::uuid, '99f00000-0000-4000-8000-00000000000a',
       'forgotten note ' || g || ' about src/billing.ts', 'semantic', 'devai/project/p', 'user_stated', null, 'active',
       '2026-04-03T10:00Z'::timestamptz + g * interval '1 minute', '2026-04-03T10:00Z'::timestamptz + g * interval '1 minute', '{}'
  from generate_series(1, 100) g;
insert into public.memory_entities (id, owner_id, canonical_name, entity_type, mention_count)
values ('99f40000-0000-4000-8000-000000000001', '99f00000-0000-4000-8000-00000000000a', 'src/billing.ts', 'file', 201);
insert into public.memory_entity_links (owner_id, memory_id, entity_id, mention, confidence, created_at)
select m.owner_id, m.id, '99f40000-0000-4000-8000-000000000001', 'src/billing.ts', 1, m.created_at
  from public.devai_memories m where m.owner_id = '99f00000-0000-4000-8000-00000000000a';

-- A fact of March linked only now, as the entity backfill links a memory older than graph memory.
insert into public.devai_memories (id, owner_id, content, memory_type, namespace, source, created_at, valid_from)
values ('99f10000-0000-4000-8000-0000000000f2', '99f00000-0000-4000-8000-00000000000a',
        'src/billing.ts was split out of src/app.ts', 'semantic', 'devai/project/p', 'user_stated', '2026-03-01', '2026-03-01');
insert into public.memory_entity_links (owner_id, memory_id, entity_id, mention)
values ('99f00000-0000-4000-8000-00000000000a', '99f10000-0000-4000-8000-0000000000f2',
        '99f40000-0000-4000-8000-000000000001', 'src/billing.ts');

-- forgotten after they were linked, as POST memory/{id}/forget does (a second later: the rows of
-- one transaction share its timestamp, so the forget is dated as another transaction's would be)
update public.devai_memories set state = 'soft_deleted', purge_at = now() + interval '30 days'
 where id::text like '99f30000-%';
update public.memory_history set ts = ts + interval '1 second'
 where memory_id::text like '99f30000-%' and event = 'DELETE';

select tests.authenticate_as('99f00000-0000-4000-8000-00000000000a');

select is((select id from public.memory_entity_lookup(array['src/billing.ts'], 10) limit 1),
  '99f10000-0000-4000-8000-0000000000f1'::uuid,
  'the newest fact is found by its name though 200 newer memories name it (20 links read per kind)');
select is((select count(*)::int from public.memory_entity_lookup(array['src/billing.ts'], 10)), 10,
  'it holds max_nodes memories: a forgotten one takes no place in what is read');
-- (Now the forgotten memories' links are off the profile index; as of an instant after they were
-- forgotten, the links made by then include theirs, and their state then leaves them out.)
select is((select count(*)::int
             from (select l.id from public.memory_entity_lookup(array['src/billing.ts'], 10) l
                   union all
                   select l.id from public.memory_entity_lookup(array['src/billing.ts'], 10, now() + interval '2 seconds') l) l
             join public.devai_memories m on m.id = l.id where m.state <> 'active'), 0,
  'no forgotten memory is in it, nor in what it held as of after they were forgotten');
select results_eq($$select l.id from public.memory_entity_lookup(array['src/billing.ts'], 3) l$$,
  $$values ('99f10000-0000-4000-8000-0000000000f1'::uuid), ('99f10000-0000-4000-8000-0000000000f2'), ('99f20000-0000-4000-8000-000000000100')$$,
  'facts first (newest first), then the newest episodes');
select is((select graph_edge from public.hybrid_search('what is src/billing.ts', null, array['devai/project/p'], 5, 0.45,
             graph_depth => 0, entity_terms => array['src/billing.ts'])
            where id = '99f10000-0000-4000-8000-0000000000f1'),
  'entity', 'a who/what search gives the fact the graph signal of its name');
select ok(exists (select from public.memory_entity_lookup(array['src/billing.ts'], 10, '2026-04-01T12:00Z')
                   where id = '99f10000-0000-4000-8000-0000000000f1'),
  'as of before the episodes, the fact is found');
select ok(exists (select from public.memory_entity_lookup(array['src/billing.ts'], 10, '2026-04-01T12:00Z')
                   where id = '99f10000-0000-4000-8000-0000000000f2'),
  'and so is an older fact linked since');

select * from finish();
rollback;
