-- Which tenants get an HNSW index of their own, decided hourly by
-- memory_private.enqueue_vector_index_jobs (migration 20261127200000): a build for a tenant past
-- the threshold without a valid index, while it holds at most half of the shared index; a drop for
-- a tenant index whose tenant fell under half the threshold; once per tenant, action and day.
-- The worker's side (the statements themselves) is tests/dedicated_vector_index.test.ts.
begin;
select plan(12);

-- Tenant A: 60 memories; B: 10, with an index named as its own (a stand-in: a plain btree);
-- C: 60, with a valid own index already.
insert into public.devai_memories (owner_id, content, memory_type, namespace, embedding, embedding_model)
select o.owner_id, format('Memory %s of %s about deploys.', i, o.owner_id), 'semantic', 'devai/project/big',
       tests.embedding(array[0.5, 0.5]::real[]), 'm'
  from (values ('75000000-0000-4000-8000-00000000000a'::uuid, 60),
               ('75000000-0000-4000-8000-00000000000b'::uuid, 10),
               ('75000000-0000-4000-8000-00000000000c'::uuid, 60)) as o(owner_id, n),
       generate_series(1, o.n) i;
create index devai_memories_hnsw_owner_7500000000004000800000000000000b on public.devai_memories (created_at)
  where owner_id = '75000000-0000-4000-8000-00000000000b'::uuid;
create index devai_memories_hnsw_owner_7500000000004000800000000000000c on public.devai_memories (created_at)
  where owner_id = '75000000-0000-4000-8000-00000000000c'::uuid;
-- The shared index's size as the statistics would have it (this test's rows only).
update pg_catalog.pg_class set reltuples = 10000 where oid = 'public.devai_memories_embedding_hnsw'::regclass;

create temp table queued on commit drop as
select memory_private.enqueue_vector_index_jobs('2026-11-27 10:40:00+00', 50) as result;
select is((select result from queued), '{"build": 1, "drop": 1}'::jsonb,
          'threshold 50: one build (A) and one drop (B)');
select results_eq(
  $$select owner_id::text, payload ->> 'action', idempotency_key from public.memory_jobs
     where kind = 'vector_index' order by owner_id$$,
  $$values ('75000000-0000-4000-8000-00000000000a', 'build', 'vector_index:build:2026-11-27'),
           ('75000000-0000-4000-8000-00000000000b', 'drop', 'vector_index:drop:2026-11-27')$$,
  'A past the threshold without an index: build; B under half of it with one: drop; C has a valid one: nothing');
select is(memory_private.enqueue_vector_index_jobs('2026-11-27 11:40:00+00', 50), '{"build": 0, "drop": 0}'::jsonb,
          'the next hour queues nothing more the same day');
select is(memory_private.enqueue_vector_index_jobs('2026-11-28 10:40:00+00', 50), '{"build": 1, "drop": 1}'::jsonb,
          'the next day, what is still to do is queued again');

-- An invalid index (a failed concurrent build) is no index: the tenant is queued for a build.
update pg_catalog.pg_index set indisvalid = false
 where indexrelid = 'public.devai_memories_hnsw_owner_7500000000004000800000000000000c'::regclass;
select is(memory_private.enqueue_vector_index_jobs('2026-11-29 10:40:00+00', 50) ->> 'build', '2',
          'C''s invalid index: C is queued for a build too');
select is(public.memory_vector_index_of('75000000-0000-4000-8000-00000000000c'),
          'public.devai_memories_embedding_hnsw'::regclass,
          'and its searches keep to the shared index while it is invalid');
update pg_catalog.pg_index set indisvalid = true
 where indexrelid = 'public.devai_memories_hnsw_owner_7500000000004000800000000000000c'::regclass;
select is(public.memory_vector_index_of('75000000-0000-4000-8000-00000000000c'),
          'public.devai_memories_hnsw_owner_7500000000004000800000000000000c'::regclass,
          'a valid one is the tenant''s');

-- A tenant that is most of the shared index gains nothing from a copy of it.
update pg_catalog.pg_class set reltuples = 100 where oid = 'public.devai_memories_embedding_hnsw'::regclass;
select is(memory_private.enqueue_vector_index_jobs('2026-11-30 10:40:00+00', 50) ->> 'build', '0',
          'A holds more than half of the shared index: no build');

-- The threshold from the setting; 0 turns the queueing off.
update public.memory_settings set value = 50 where name = 'dedicated_vector_index_min_rows';
update pg_catalog.pg_class set reltuples = 10000 where oid = 'public.devai_memories_embedding_hnsw'::regclass;
select is(memory_private.enqueue_vector_index_jobs('2026-12-01 10:40:00+00') ->> 'build', '1',
          'the setting is the threshold');
update public.memory_settings set value = 0 where name = 'dedicated_vector_index_min_rows';
select is(memory_private.enqueue_vector_index_jobs('2026-12-02 10:40:00+00'), '{"off": true, "drop": 0, "build": 0}'::jsonb,
          'dedicated_vector_index_min_rows 0: nothing queued');

-- Not a tenant's to call.
select tests.authenticate_as('75000000-0000-4000-8000-00000000000a');
select throws_ok($$select memory_private.enqueue_vector_index_jobs()$$, '42501', null,
                 'a tenant cannot queue index jobs');
reset role;
set local role service_role;
select lives_ok($$select memory_private.enqueue_vector_index_jobs()$$, 'service_role can (a job''s role)');
reset role;

select * from finish();
rollback;
