-- Every write lands in memory_history with its event and actor, written by triggers, so a Studio
-- edit or a cron job is audited like an edge function. Bookkeeping (strength, access) is not.
begin;
select plan(28);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace) values
  ('41000000-0000-4000-8000-000000000001', '40000000-0000-4000-8000-00000000000a', 'tests run with vitest', 'semantic', 'devai/global'),
  ('41000000-0000-4000-8000-000000000002', '40000000-0000-4000-8000-00000000000a', 'deploys on fridays', 'episodic', 'devai/global'),
  ('41000000-0000-4000-8000-000000000003', '40000000-0000-4000-8000-00000000000a', 'db is mysql', 'semantic', 'devai/global'),
  ('41000000-0000-4000-8000-000000000004', '40000000-0000-4000-8000-00000000000a', 'db is postgres 17', 'semantic', 'devai/global'),
  ('41000000-0000-4000-8000-000000000005', '40000000-0000-4000-8000-00000000000a', 'used jest once', 'episodic', 'devai/global'),
  ('41000000-0000-4000-8000-000000000007', '40000000-0000-4000-8000-00000000000a', 'never force-push main', 'procedural', 'devai/global');

-- ADD, actor from memory.actor.
select set_config('memory.actor', 'worker:dedup', true);
insert into public.devai_memories (id, owner_id, content, memory_type, namespace)
values ('41000000-0000-4000-8000-000000000006', '40000000-0000-4000-8000-00000000000a', 'temp note', 'episodic', 'devai/global');
select results_eq($$select event, actor, new_content from public.memory_history where memory_id = '41000000-0000-4000-8000-000000000006'$$,
                  $$values ('ADD', 'worker:dedup', 'temp note')$$,
                  'an insert writes ADD, with the actor from memory.actor');
select set_config('memory.actor', '', true);
select results_eq($$select event, actor from public.memory_history where memory_id = '41000000-0000-4000-8000-000000000001'$$,
                  $$values ('ADD', 'postgres')$$,
                  'without memory.actor nor JWT claims the actor is the database user (a Studio edit)');

-- UPDATE, actor from the JWT subject.
select tests.authenticate_as('40000000-0000-4000-8000-00000000000a');
update public.devai_memories set content = 'tests run with vitest 3' where id = '41000000-0000-4000-8000-000000000001';
select results_eq($$select event, actor, old_content, new_content from public.memory_history
                     where memory_id = '41000000-0000-4000-8000-000000000001' and event = 'UPDATE'$$,
                  $$values ('UPDATE', 'user:40000000-0000-4000-8000-00000000000a', 'tests run with vitest', 'tests run with vitest 3')$$,
                  'a content change writes UPDATE with old and new content, actor user:<sub> from the JWT');

select set_config('memory.actor', 'agent:devai', true);
update public.devai_memories set importance = 5 where id = '41000000-0000-4000-8000-000000000001';
select is((select actor from public.memory_history
            where memory_id = '41000000-0000-4000-8000-000000000001' and actor = 'agent:devai'),
          'agent:devai', 'memory.actor wins over the JWT subject');
select set_config('memory.actor', '', true);

-- source = 'user_stated' shields a memory from the LLM's dedup decisions: changing it is audited.
update public.devai_memories set source = 'user_stated' where id = '41000000-0000-4000-8000-000000000007';
select results_eq($$select event, meta ->> 'source' from public.memory_history
                     where memory_id = '41000000-0000-4000-8000-000000000007' and event <> 'ADD'$$,
                  $$values ('UPDATE', 'user_stated')$$,
                  'changing source (e.g. to user_stated) writes UPDATE');

-- Bookkeeping writes no history.
update public.devai_memories set strength = 0.7, base_strength = 0.7 where id = '41000000-0000-4000-8000-000000000001';
update public.devai_memories set access_count = access_count + 1, last_accessed_at = now() + interval '1 hour'
 where id = '41000000-0000-4000-8000-000000000001';
select is((select count(*)::int from public.memory_history where memory_id = '41000000-0000-4000-8000-000000000001'), 3,
          'strength-only and access-only updates write no history row');

-- DELETE (soft), RESTORE.
update public.devai_memories set state = 'soft_deleted', purge_at = now() + interval '30 days'
 where id = '41000000-0000-4000-8000-000000000001';
select results_eq($$select event, meta ->> 'state' from public.memory_history
                     where memory_id = '41000000-0000-4000-8000-000000000001' and event = 'DELETE'$$,
                  $$values ('DELETE', 'soft_deleted')$$,
                  'a soft delete (state soft_deleted + purge_at) writes DELETE');
update public.devai_memories set state = 'active', purge_at = null where id = '41000000-0000-4000-8000-000000000001';
select results_eq($$select event from public.memory_history
                     where memory_id = '41000000-0000-4000-8000-000000000001' and event = 'RESTORE'$$,
                  array['RESTORE'], 'soft_deleted back to active writes RESTORE');

update public.devai_memories set is_valid = false where id = '41000000-0000-4000-8000-000000000002';
select results_eq($$select event from public.memory_history
                     where memory_id = '41000000-0000-4000-8000-000000000002' and event <> 'ADD'$$,
                  array['DELETE'], 'invalidating without a hint writes DELETE');
update public.devai_memories set is_valid = true where id = '41000000-0000-4000-8000-000000000002';
select results_eq($$select event from public.memory_history
                     where memory_id = '41000000-0000-4000-8000-000000000002' and event = 'RESTORE'$$,
                  array['RESTORE'], 'invalid back to valid writes RESTORE');

-- MERGE.
update public.devai_memories set superseded_by = '41000000-0000-4000-8000-000000000004', is_valid = false
 where id = '41000000-0000-4000-8000-000000000003';
select results_eq($$select event, new_ref from public.memory_history
                     where memory_id = '41000000-0000-4000-8000-000000000003' and event <> 'ADD'$$,
                  $$values ('MERGE', '41000000-0000-4000-8000-000000000004'::uuid)$$,
                  'setting superseded_by writes MERGE pointing at the surviving memory');

-- LINK.
insert into public.memory_relations (from_id, to_id, relation_type, strength)
values ('41000000-0000-4000-8000-000000000004', '41000000-0000-4000-8000-000000000005', 'related_to', 0.8);
select results_eq($$select event, new_ref, actor, meta ->> 'relation_type' from public.memory_history
                     where memory_id = '41000000-0000-4000-8000-000000000004' and event = 'LINK'$$,
                  $$values ('LINK', '41000000-0000-4000-8000-000000000005'::uuid,
                            'user:40000000-0000-4000-8000-00000000000a', 'related_to')$$,
                  'a new relation writes LINK under its from-memory');
update public.memory_relations set strength = 0.9 where from_id = '41000000-0000-4000-8000-000000000004';
select is((select count(*)::int from public.memory_history
            where memory_id = '41000000-0000-4000-8000-000000000004' and event = 'LINK'), 2,
          're-weighting a relation writes LINK again');

-- DECAY and TTL, as the nightly cron jobs run them (no JWT; hint and actor from settings).
select tests.clear_authentication();
select set_config('memory.actor', 'cron:decay', true);
select set_config('memory.event', 'DECAY', true);
update public.devai_memories set is_valid = false, strength = 0.04 where id = '41000000-0000-4000-8000-000000000005';
select results_eq($$select event, actor from public.memory_history
                     where memory_id = '41000000-0000-4000-8000-000000000005' and event not in ('ADD')$$,
                  $$values ('DECAY', 'cron:decay')$$,
                  'invalidation with memory.event = DECAY writes DECAY');

select set_config('memory.actor', 'cron:ttl', true);
select set_config('memory.event', 'TTL', true);
update public.devai_memories set state = 'soft_deleted', purge_at = now() + interval '7 days'
 where id = '41000000-0000-4000-8000-000000000006';
select results_eq($$select event, actor from public.memory_history
                     where memory_id = '41000000-0000-4000-8000-000000000006' and event <> 'ADD'$$,
                  $$values ('TTL', 'cron:ttl')$$,
                  'a soft delete with memory.event = TTL writes TTL');
select set_config('memory.event', '', true);

select set_config('memory.event', 'TTL', true);
update public.devai_memories set content = 'db is postgres 17.2' where id = '41000000-0000-4000-8000-000000000004';
select is((select count(*)::int from public.memory_history
            where memory_id = '41000000-0000-4000-8000-000000000004' and event = 'TTL'), 0,
          'a hint refines an inferred event, never invents one (TTL on a content edit is UPDATE)');
select set_config('memory.event', '', true);

-- PURGE: physical delete as postgres; the history outlives the memory.
select set_config('memory.actor', '', true);
delete from public.devai_memories where id = '41000000-0000-4000-8000-000000000006';
select results_eq($$select event, actor, new_content from public.memory_history
                     where memory_id = '41000000-0000-4000-8000-000000000006' and event = 'PURGE'$$,
                  $$values ('PURGE', 'postgres', null::text)$$,
                  'a physical delete writes PURGE');
select bag_eq($$select event from public.memory_history where memory_id = '41000000-0000-4000-8000-000000000006'$$,
              array['ADD', 'TTL', 'PURGE'], 'history survives the purge (no foreign key)');
select is((select meta ->> 'namespace' from public.memory_history
            where memory_id = '41000000-0000-4000-8000-000000000006' and event = 'PURGE'),
          'devai/global', 'the PURGE row keeps a snapshot of the memory');

delete from public.devai_memories where id = '41000000-0000-4000-8000-000000000005';
select results_eq($$select event, meta ->> 'kind' from public.memory_history
                     where memory_id = '41000000-0000-4000-8000-000000000004' and event = 'DELETE'$$,
                  $$values ('DELETE', 'relation')$$,
                  'an edge removed by the cascade writes DELETE for the relation');

-- The full story of each memory, and nothing else.
select bag_eq($$select event from public.memory_history where memory_id = '41000000-0000-4000-8000-000000000001'$$,
              array['ADD', 'UPDATE', 'UPDATE', 'DELETE', 'RESTORE'], 'memory 1: ADD, UPDATE x2, DELETE, RESTORE');
select bag_eq($$select event from public.memory_history where memory_id = '41000000-0000-4000-8000-000000000002'$$,
              array['ADD', 'DELETE', 'RESTORE'], 'memory 2: ADD, DELETE, RESTORE');
select bag_eq($$select event from public.memory_history where memory_id = '41000000-0000-4000-8000-000000000003'$$,
              array['ADD', 'MERGE'], 'memory 3: ADD, MERGE');
select bag_eq($$select event from public.memory_history where memory_id = '41000000-0000-4000-8000-000000000004'$$,
              array['ADD', 'LINK', 'LINK', 'UPDATE', 'DELETE'], 'memory 4: ADD, LINK x2, UPDATE, relation DELETE');
select bag_eq($$select event from public.memory_history where memory_id = '41000000-0000-4000-8000-000000000005'$$,
              array['ADD', 'DECAY', 'PURGE'], 'memory 5: ADD, DECAY, PURGE');
select ok((select bool_and(owner_id = '40000000-0000-4000-8000-00000000000a') from public.memory_history
            where memory_id::text like '41000000-%'), 'every history row carries the tenant');
select ok(not exists(select from public.memory_history h where h.meta ? 'embedding'),
          'history rows do not copy embeddings');

-- Studio edits as postgres are audited too.
update public.devai_memories set namespace = 'devai/user' where id = '41000000-0000-4000-8000-000000000002';
select results_eq($$select event, actor from public.memory_history
                     where memory_id = '41000000-0000-4000-8000-000000000002' and event = 'UPDATE'$$,
                  $$values ('UPDATE', 'postgres')$$, 'an edit made as postgres (Studio) writes UPDATE');

select * from finish();
rollback;
