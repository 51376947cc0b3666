-- A retrieval in one call (public.retrieve_for_turn) and its writes applied later in batches
-- (public.record_retrievals): what the one call returns, as the tenant (RLS); a batch gives
-- exactly what the searches' own reinforcements would have given, in order, at each search's
-- instant; a tenant's batch can neither reinforce nor record for another tenant; anon may call
-- neither.
begin;
-- Revisions are given at commit (migration 20261129300000); this file's one transaction never
-- commits, so they are given at the end of each statement instead.
set constraints public.memory_change_log_revision_at_commit immediate;
set local timezone to 'UTC';
select plan(14);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace, base_strength, strength, access_count, last_accessed_at) values
  ('35000000-0000-4000-8000-000000000001', '35000000-0000-4000-8000-0000000000aa', 'The shop deploys on Fridays with blue-green releases', 'semantic', 'devai/project/shop', 1.0, 1.0, 0, '2026-01-01 00:00+00'),
  ('35000000-0000-4000-8000-000000000002', '35000000-0000-4000-8000-0000000000aa', 'The shop''s CDN is Fastly', 'semantic', 'devai/project/shop', 1.0, 1.0, 0, '2026-01-01 00:00+00'),
  ('35000000-0000-4000-8000-000000000003', '35000000-0000-4000-8000-0000000000aa', 'The twin of the first: reinforced by hand', 'semantic', 'devai/project/other', 1.0, 1.0, 0, '2026-01-01 00:00+00'),
  ('35000000-0000-4000-8000-000000000004', '35000000-0000-4000-8000-0000000000bb', 'Another tenant deploys on Fridays too', 'semantic', 'devai/project/shop', 1.0, 1.0, 0, '2026-01-01 00:00+00');
insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength) values
  ('35000000-0000-4000-8000-0000000000aa', '35000000-0000-4000-8000-000000000001', '35000000-0000-4000-8000-000000000002', 'related_to', 0.7);

-- The one call, as the tenant.
select tests.authenticate_as('35000000-0000-4000-8000-0000000000aa');
create temporary table turn on commit drop as
  select public.retrieve_for_turn('deploys Fridays blue-green', match_namespaces => array['devai/project/shop'],
                                  similarity_threshold => 0, keyword_threshold => 0, search_mode => 'keyword',
                                  thread_id => 'default', since_revision => 0) as t;
select is((select t -> 'memories' -> 0 ->> 'id' from turn), '35000000-0000-4000-8000-000000000001',
          'the search''s best memory comes first');
select is((select jsonb_array_length(t -> 'memories') from turn), 1, 'only the tenant''s own memories (RLS)');
select is((select t -> 'related' -> 0 ->> 'id' from turn), '35000000-0000-4000-8000-000000000002',
          'the linked memory comes as a related one, with its anchor');
select ok((select (t ->> 'revision')::bigint > 0 from turn), 'the thread''s revision (the seeded writes bumped it)');
select ok((select jsonb_array_length(t -> 'changes') between 1 and 6 from turn), 'the changes after since_revision, at most six');
select is((select t -> 'weights' ->> 'keyword' from turn), '1', 'the fusion weights of the model');
select is((select (t ->> 'now')::timestamptz from turn), now(), 'the database''s clock of the statement');

-- Two searches in one batch, the first memory used by both: the same as two reinforcements in turn.
select is(public.record_retrievals(jsonb_build_array(
  jsonb_build_object('at', '2026-01-11 00:00+00', 'ids', jsonb_build_array('35000000-0000-4000-8000-000000000001', '35000000-0000-4000-8000-000000000002'),
                     'thread_id', 'chat-1', 'category', null, 'sim', 0.9, 'meta', jsonb_build_object('mode', 'retrieve')),
  jsonb_build_object('at', '2026-01-13 00:00+00', 'ids', jsonb_build_array('35000000-0000-4000-8000-000000000001', '35000000-0000-4000-8000-000000000004'),
                     'thread_id', null, 'category', 'decisions', 'sim', null, 'meta', jsonb_build_object('mode', 'query')))),
  3, 'three reinforcements: the other tenant''s memory is not one of them');
select count(*) from public.reinforce_memories(array['35000000-0000-4000-8000-000000000003']::uuid[], '2026-01-11 00:00+00');
select count(*) from public.reinforce_memories(array['35000000-0000-4000-8000-000000000003']::uuid[], '2026-01-13 00:00+00');
select is((select (strength, access_count, last_accessed_at) from public.devai_memories where id = '35000000-0000-4000-8000-000000000001'),
          (select (strength, access_count, last_accessed_at) from public.devai_memories where id = '35000000-0000-4000-8000-000000000003'),
          'a memory reinforced twice in one batch ends as with two reinforcements at those instants');
select results_eq(
  $$select thread_id, category, meta ->> 'mode', ts from public.memory_events
     where owner_id = '35000000-0000-4000-8000-0000000000aa' order by ts$$,
  $$values ('chat-1', null::text, 'retrieve', '2026-01-11 00:00+00'::timestamptz), (null, 'decisions', 'query', '2026-01-13 00:00+00')$$,
  'one search event per search, at its own instant, owned by the caller');
reset role;
select is((select (access_count, strength) from public.devai_memories where id = '35000000-0000-4000-8000-000000000004'),
          (0, 1.0::double precision), 'another tenant''s memory named in a batch is untouched (RLS)');
select is((select count(*)::int from public.memory_events where owner_id = '35000000-0000-4000-8000-0000000000bb'), 0,
          'nothing is recorded for another tenant');

select tests.authenticate_as('35000000-0000-4000-8000-0000000000aa');
select throws_ok($$select public.record_retrievals('{"at": "2026-01-11"}'::jsonb)$$, '22023', null, 'a batch is an array of searches');
reset role;
select tests.as_anon();
select throws_ok($$select public.retrieve_for_turn('anything', match_namespaces => array['devai/global'])$$, '42501', null,
                 'anon cannot search');

select * from finish();
rollback;
