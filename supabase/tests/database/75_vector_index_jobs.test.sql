-- Which tenants get an HNSW index of their own (migration 20261127200000):
-- memory_private.vector_index_plan wants a build for a tenant past the threshold without a valid
-- index, while it holds at most half of all memories; a drop for a tenant index whose tenant fell
-- under half the threshold, or that a failed build left invalid; the hourly
-- memory_private.enqueue_vector_index_jobs queues them once per tenant, action and day. Tenants
-- cannot queue them. The worker's side (the statements) is tests/dedicated_vector_index.test.ts.
begin;
select plan(14);

-- Tenant A: 60 memories; B: 10, with an index named as its own (a stand-in: a plain btree);
-- C: 60, with a valid own index already; D: 30, with an invalid one (a failed build).
insert into public.devai_memories (owner_id, content, memory_type, namespace, embedding, embedding_model)
select o.owner_id, format('Memory %s of %s about deploys.', i, o.owner_id), 'semantic', 'devai/project/big',
       tests.embedding(array[0.5, 0.5]::real[]), 'm'
  from (values ('75000000-0000-4000-8000-00000000000a'::uuid, 60),
               ('75000000-0000-4000-8000-00000000000b'::uuid, 10),
               ('75000000-0000-4000-8000-00000000000c'::uuid, 60),
               ('75000000-0000-4000-8000-00000000000d'::uuid, 30)) as o(owner_id, n),
       generate_series(1, o.n) i;
create index devai_memories_hnsw_owner_7500000000004000800000000000000b on public.devai_memories (created_at)
  where owner_id = '75000000-0000-4000-8000-00000000000b'::uuid;
create index devai_memories_hnsw_owner_7500000000004000800000000000000c on public.devai_memories (created_at)
  where owner_id = '75000000-0000-4000-8000-00000000000c'::uuid;
create index devai_memories_hnsw_owner_7500000000004000800000000000000d on public.devai_memories (created_at)
  where owner_id = '75000000-0000-4000-8000-00000000000d'::uuid;
update pg_catalog.pg_index set indisvalid = false
 where indexrelid = 'public.devai_memories_hnsw_owner_7500000000004000800000000000000d'::regclass;

select results_eq(
  $$select owner_id::text, action from memory_private.vector_index_plan(50) order by owner_id$$,
  $$values ('75000000-0000-4000-8000-00000000000a', 'build'),
           ('75000000-0000-4000-8000-00000000000b', 'drop'),
           ('75000000-0000-4000-8000-00000000000d', 'drop')$$,
  'threshold 50: build A (60, no index); drop B (10, under half of it) and D (30, invalid, not to be rebuilt); C has a valid one');
select is(memory_private.enqueue_vector_index_jobs('2026-11-27 10:40:00+00', 50), '{"build": 1, "drop": 2}'::jsonb,
          'the hourly job queues what the plan says');
select results_eq(
  $$select owner_id::text, payload, idempotency_key from public.memory_jobs
     where kind = 'vector_index' order by owner_id$$,
  $$values ('75000000-0000-4000-8000-00000000000a', '{"action": "build", "min_rows": 50}'::jsonb, 'vector_index:build:2026-11-27'),
           ('75000000-0000-4000-8000-00000000000b', '{"action": "drop", "min_rows": 50}'::jsonb, 'vector_index:drop:2026-11-27'),
           ('75000000-0000-4000-8000-00000000000d', '{"action": "drop", "min_rows": 50}'::jsonb, 'vector_index:drop:2026-11-27')$$,
  'one job per tenant and action, with the threshold the worker checks the plan again with');
select is(memory_private.enqueue_vector_index_jobs('2026-11-27 11:40:00+00', 50), '{"build": 0, "drop": 0}'::jsonb,
          'the next hour queues nothing more the same day');
select is(memory_private.enqueue_vector_index_jobs('2026-11-28 10:40:00+00', 50), '{"build": 1, "drop": 2}'::jsonb,
          'the next day, what is still to do is queued again');

-- An invalid index of a tenant that qualifies: a build (the worker drops the leftover first), and
-- its searches keep to the shared index meanwhile.
update pg_catalog.pg_index set indisvalid = false
 where indexrelid = 'public.devai_memories_hnsw_owner_7500000000004000800000000000000c'::regclass;
select results_eq(
  $$select action from memory_private.vector_index_plan(50) where owner_id = '75000000-0000-4000-8000-00000000000c'$$,
  array['build'], 'C''s index invalid: C is planned for a build');
select is(public.memory_vector_index_of('75000000-0000-4000-8000-00000000000c'),
          'public.devai_memories_embedding_hnsw'::regclass,
          'and its searches keep to the shared index while it is invalid');
update pg_catalog.pg_index set indisvalid = true
 where indexrelid = 'public.devai_memories_hnsw_owner_7500000000004000800000000000000c'::regclass;
select is(public.memory_vector_index_of('75000000-0000-4000-8000-00000000000c'),
          'public.devai_memories_hnsw_owner_7500000000004000800000000000000c'::regclass,
          'a valid one is the tenant''s');

-- A tenant that is most of the memories gains nothing from a copy of the shared index.
update public.devai_memories set state = 'soft_deleted', purge_at = now() + interval '30 days'
 where owner_id <> '75000000-0000-4000-8000-00000000000a';
select is_empty($$select from memory_private.vector_index_plan(50) where action = 'build'$$,
                'A holds more than half of all memories: no build');

-- The threshold from the setting; 0 turns the queueing off.
update public.devai_memories set state = 'active', purge_at = null
 where owner_id <> '75000000-0000-4000-8000-00000000000a' and state = 'soft_deleted';
update public.memory_settings set value = 50 where name = 'dedicated_vector_index_min_rows';
select is(memory_private.enqueue_vector_index_jobs('2026-12-01 10:40:00+00') ->> 'build', '1',
          'the setting is the threshold');
update public.memory_settings set value = 0 where name = 'dedicated_vector_index_min_rows';
select is(memory_private.enqueue_vector_index_jobs('2026-12-02 10:40:00+00'), '{"off": true, "drop": 0, "build": 0}'::jsonb,
          'dedicated_vector_index_min_rows 0: nothing queued');

-- Not a tenant's to ask for, neither through the function nor by a row of its own.
select tests.authenticate_as('75000000-0000-4000-8000-00000000000a');
select throws_ok($$select memory_private.enqueue_vector_index_jobs()$$, '42501', null,
                 'a tenant cannot run the queueing');
select throws_ok(
  $$insert into public.memory_jobs (owner_id, kind, payload, idempotency_key)
    values ('75000000-0000-4000-8000-00000000000a', 'vector_index', '{"action": "build", "min_rows": 1}', 'mine')$$,
  '42501', null, 'nor queue an index job of its own (no insert on memory_jobs)');
reset role;
set local role service_role;
select lives_ok($$select memory_private.enqueue_vector_index_jobs()$$, 'service_role can (a job''s role)');
reset role;

select * from finish();
rollback;
