-- A write-behind batch (public.record_retrievals) writes each memory it reinforces once, however
-- many of its searches used it: k updates of one row in one transaction cannot be pruned before
-- the commit, so from the third on they were non-HOT, each an entry in every index (the HNSW
-- graph and the GIN keyword index too) that keyword lookups then read until VACUUM
-- (docs/operations.md#write-behind-reinforcement-and-search-events). The values are those of the
-- searches' own reinforcements in turn.
begin;
set local timezone to 'UTC';
select plan(3);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace, base_strength, strength, access_count, last_accessed_at) values
  ('65000000-0000-4000-8000-000000000001', '65000000-0000-4000-8000-0000000000aa', 'The shop deploys on Fridays', 'semantic', 'devai/project/shop', 0.6, 0.6, 2, '2026-01-01 00:00+00'),
  ('65000000-0000-4000-8000-000000000002', '65000000-0000-4000-8000-0000000000aa', 'The shop''s CDN is Fastly', 'semantic', 'devai/project/shop', 0.6, 0.6, 2, '2026-01-01 00:00+00'),
  ('65000000-0000-4000-8000-000000000003', '65000000-0000-4000-8000-0000000000aa', 'The twin of the first, reinforced search by search', 'semantic', 'devai/project/other', 0.6, 0.6, 2, '2026-01-01 00:00+00');

select tests.authenticate_as('65000000-0000-4000-8000-0000000000aa');
create temporary table updates_before on commit drop as
  select n_tup_upd from pg_stat_xact_user_tables where relid = 'public.devai_memories'::regclass;
select is(public.record_retrievals(jsonb_build_array(
  jsonb_build_object('at', '2026-01-03 00:00+00', 'ids', jsonb_build_array('65000000-0000-4000-8000-000000000001')),
  jsonb_build_object('at', '2026-01-03 00:00:01+00', 'ids', jsonb_build_array('65000000-0000-4000-8000-000000000001', '65000000-0000-4000-8000-000000000002')),
  jsonb_build_object('at', '2026-01-06 00:00+00', 'ids', jsonb_build_array('65000000-0000-4000-8000-000000000001')))),
  4, 'four reinforcements: three of the first memory, one of the second');
select is((select n_tup_upd from pg_stat_xact_user_tables where relid = 'public.devai_memories'::regclass)
            - (select n_tup_upd from updates_before), 2::bigint,
          'two memories reinforced, two row versions written');
select count(*) from public.reinforce_memories(array['65000000-0000-4000-8000-000000000003']::uuid[], '2026-01-03 00:00+00');
select count(*) from public.reinforce_memories(array['65000000-0000-4000-8000-000000000003']::uuid[], '2026-01-03 00:00:01+00');
select count(*) from public.reinforce_memories(array['65000000-0000-4000-8000-000000000003']::uuid[], '2026-01-06 00:00+00');
select is((select (strength, base_strength, access_count, last_accessed_at) from public.devai_memories where id = '65000000-0000-4000-8000-000000000001'),
          (select (strength, base_strength, access_count, last_accessed_at) from public.devai_memories where id = '65000000-0000-4000-8000-000000000003'),
          'the batch''s memory ends as with its three reinforcements in turn, decay between them included');

select * from finish();
rollback;
