-- A write-behind batch sent again applies nothing twice (migration 20261128400000): a batch whose
-- commit's reply was lost is sent again by the function; each search carries an id, its event is
-- written under it, and a search whose event is already there is not applied again. A search
-- without an id is applied each time, as before. docs/operations.md#write-behind-reinforcement-and-search-events.
begin;
set local timezone to 'UTC';
select plan(10);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace, base_strength, strength, access_count, last_accessed_at) values
  ('80000000-0000-4000-8000-000000000001', '80000000-0000-4000-8000-0000000000aa', 'The shop deploys on Fridays', 'semantic', 'devai/project/shop', 0.6, 0.6, 2, '2026-01-01 00:00+00'),
  ('80000000-0000-4000-8000-000000000002', '80000000-0000-4000-8000-0000000000aa', 'The shop''s CDN is Fastly', 'semantic', 'devai/project/shop', 0.6, 0.6, 2, '2026-01-01 00:00+00');

select tests.authenticate_as('80000000-0000-4000-8000-0000000000aa');
create temporary table batch on commit drop as select jsonb_build_array(
  jsonb_build_object('id', '80100000-0000-4000-8000-000000000001', 'at', '2026-01-03 00:00+00', 'thread_id', 't1',
                     'ids', jsonb_build_array('80000000-0000-4000-8000-000000000001'), 'meta', '{"mode": "retrieve"}'::jsonb),
  jsonb_build_object('id', '80100000-0000-4000-8000-000000000002', 'at', '2026-01-03 00:00:01+00', 'thread_id', 't1',
                     'ids', jsonb_build_array('80000000-0000-4000-8000-000000000001', '80000000-0000-4000-8000-000000000002'),
                     'meta', '{"mode": "query"}'::jsonb)) as items;

select is(public.record_retrievals((select items from batch)), 3, 'the batch: three reinforcements');
create temporary table after_first on commit drop as
  select id, strength, base_strength, access_count, last_accessed_at from public.devai_memories
   where owner_id = '80000000-0000-4000-8000-0000000000aa';
select is(public.record_retrievals((select items from batch)), 0, 'the same batch again: nothing reinforced');
select is((select array_agg((strength, base_strength, access_count, last_accessed_at)::text order by id)
             from public.devai_memories where owner_id = '80000000-0000-4000-8000-0000000000aa'),
          (select array_agg((strength, base_strength, access_count, last_accessed_at)::text order by id) from after_first),
          'the memories are as after the first');
select is((select count(*)::int from public.memory_events where owner_id = '80000000-0000-4000-8000-0000000000aa' and op = 'search'),
          2, 'one event per search');
select is((select array_agg(id::text order by ts) from public.memory_events
            where owner_id = '80000000-0000-4000-8000-0000000000aa' and op = 'search'),
          array['80100000-0000-4000-8000-000000000001', '80100000-0000-4000-8000-000000000002'],
          'each event under its search''s id');

-- Sent again with one new search: only the new one is applied.
select is(public.record_retrievals((select items || jsonb_build_array(jsonb_build_object(
            'id', '80100000-0000-4000-8000-000000000003', 'at', '2026-01-04 00:00+00',
            'ids', jsonb_build_array('80000000-0000-4000-8000-000000000002'), 'meta', '{}'::jsonb)) from batch)),
          1, 'a batch with one new search: that one applied');
-- Without ids (SQL callers): applied each time.
select is(public.record_retrievals(jsonb_build_array(
            jsonb_build_object('at', '2026-01-05 00:00+00', 'ids', jsonb_build_array('80000000-0000-4000-8000-000000000002')))) +
          public.record_retrievals(jsonb_build_array(
            jsonb_build_object('at', '2026-01-05 00:00+00', 'ids', jsonb_build_array('80000000-0000-4000-8000-000000000002')))),
          2, 'searches without an id: applied each time');

-- An id given twice in one batch (in either case): applied once; a null id: as no id (no event without meta).
select is(public.record_retrievals(jsonb_build_array(
            jsonb_build_object('id', '80100000-0000-4000-8000-000000000004', 'at', '2026-01-06 00:00+00',
                               'ids', jsonb_build_array('80000000-0000-4000-8000-000000000002'), 'meta', '{}'::jsonb),
            jsonb_build_object('id', '80100000-0000-4000-8000-000000000004', 'at', '2026-01-06 00:00+00',
                               'ids', jsonb_build_array('80000000-0000-4000-8000-000000000002'), 'meta', '{}'::jsonb),
            jsonb_build_object('id', upper('80100000-0000-4000-8000-000000000004'), 'at', '2026-01-06 00:00+00',
                               'ids', jsonb_build_array('80000000-0000-4000-8000-000000000002'), 'meta', '{}'::jsonb))),
          1, 'an id twice in one batch: applied once');
select is(public.record_retrievals(jsonb_build_array(
            jsonb_build_object('id', null, 'at', '2026-01-07 00:00+00',
                               'ids', jsonb_build_array('80000000-0000-4000-8000-000000000002')))),
          1, 'a null id: applied, as without one');
select is((select count(*)::int from public.memory_events where owner_id = '80000000-0000-4000-8000-0000000000aa' and op = 'search'),
          4, 'events: one per search with meta or an id, none for the searches without either');

select * from finish();
rollback;
