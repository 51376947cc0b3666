-- Graph edges are unique per from/to/type, so the dedup worker can link idempotently with
-- `on conflict do nothing` and a retried job never doubles an edge.
begin;
select plan(6);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace) values
  ('51000000-0000-4000-8000-000000000001', '50000000-0000-4000-8000-00000000000a', 'api uses hono', 'semantic', 'devai/project/api'),
  ('51000000-0000-4000-8000-000000000002', '50000000-0000-4000-8000-00000000000a', 'routes live in src/routes', 'semantic', 'devai/project/api');

select tests.authenticate_as('50000000-0000-4000-8000-00000000000a');

insert into public.memory_relations (from_id, to_id, relation_type, strength)
values ('51000000-0000-4000-8000-000000000001', '51000000-0000-4000-8000-000000000002', 'related_to', 0.8)
on conflict (from_id, to_id, relation_type) do nothing;
insert into public.memory_relations (from_id, to_id, relation_type, strength)
values ('51000000-0000-4000-8000-000000000001', '51000000-0000-4000-8000-000000000002', 'related_to', 0.4)
on conflict (from_id, to_id, relation_type) do nothing;

select results_eq($$select count(*)::int, max(strength) from public.memory_relations
                     where from_id = '51000000-0000-4000-8000-000000000001'$$,
                  $$values (1, 0.8::real)$$,
                  'inserting the same edge twice with on conflict do nothing leaves one edge, the first');
select is((select count(*)::int from public.memory_history
            where memory_id = '51000000-0000-4000-8000-000000000001' and event = 'LINK'), 1,
          'the skipped duplicate writes no LINK history');

insert into public.memory_relations (from_id, to_id, relation_type, strength)
values ('51000000-0000-4000-8000-000000000001', '51000000-0000-4000-8000-000000000002', 'derived_from', 0.5)
on conflict (from_id, to_id, relation_type) do nothing;
select is((select count(*)::int from public.memory_relations where from_id = '51000000-0000-4000-8000-000000000001'), 2,
          'a different relation_type between the same memories is a second edge');

insert into public.memory_relations (from_id, to_id, relation_type, strength)
values ('51000000-0000-4000-8000-000000000002', '51000000-0000-4000-8000-000000000001', 'related_to', 0.5)
on conflict (from_id, to_id, relation_type) do nothing;
select is((select count(*)::int from public.memory_relations where from_id = '51000000-0000-4000-8000-000000000002'), 1,
          'the reverse direction is its own edge');

select throws_ok($$insert into public.memory_relations (from_id, to_id, relation_type, strength)
                   values ('51000000-0000-4000-8000-000000000001', '51000000-0000-4000-8000-000000000002', 'related_to', 0.1)$$,
                 '23505', 'duplicate key value violates unique constraint "memory_relations_unique_edge"',
                 'a plain duplicate insert fails instead of doubling the edge');

select is((select owner_id from public.memory_relations
            where from_id = '51000000-0000-4000-8000-000000000001' and relation_type = 'related_to'),
          '50000000-0000-4000-8000-00000000000a'::uuid, 'an edge added by a user token is owned by its tenant (owner_id defaults to auth.uid())');

select * from finish();
rollback;
