-- A faded memory (strength at or below 0.05, the floor of every signal) comes back by no way in
-- (migration 20261128300000): not by a hop over an edge from a best hit, not by the entity lookup,
-- not by the hop through an entity a best hit names, not as a related bullet; the same memories
-- just above the floor come back by each. An as_of search reads what held then, as the keyword
-- and vector signals do. docs/retrieval.md#scope-rules-every-signal.
begin;
select plan(10);

insert into public.devai_memories
  (id, owner_id, content, memory_type, namespace, embedding, embedding_model, strength, created_at)
values
  -- The best hit for the question.
  ('79000000-0000-4000-8000-0000000000a1', '79000000-0000-4000-8000-00000000000c',
   'The billing worker retries failed charges three times.', 'semantic', 'devai/project/ex',
   tests.embedding(array[1, 0]::real[]), 'local-hash-512-v1', 1.0, now() - interval '1 day'),
  -- Linked to it by an edge only, far from the question's vector and words.
  ('79000000-0000-4000-8000-0000000000b1', '79000000-0000-4000-8000-00000000000c',
   'Stripe webhooks arrive signed with the endpoint secret.', 'semantic', 'devai/project/ex',
   tests.embedding(array[0, 1]::real[]), 'local-hash-512-v1', 0.05, now() - interval '1 day'),
  -- Naming the same file as the best hit, no edge.
  ('79000000-0000-4000-8000-0000000000b2', '79000000-0000-4000-8000-00000000000c',
   'Dunning emails go out from a cron job at nine.', 'semantic', 'devai/project/ex',
   tests.embedding(array[0, 1]::real[]), 'local-hash-512-v1', 0.05, now() - interval '1 day');
insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength, created_at, valid_from)
values ('79000000-0000-4000-8000-00000000000c', '79000000-0000-4000-8000-0000000000a1',
        '79000000-0000-4000-8000-0000000000b1', 'related_to', 0.9, now() - interval '1 day', now() - interval '1 day');
insert into public.memory_entities (id, owner_id, canonical_name, entity_type) values
  ('79200000-0000-4000-8000-0000000000e1', '79000000-0000-4000-8000-00000000000c', 'src/billing/worker.ts', 'file');
insert into public.memory_entity_links (owner_id, memory_id, entity_id, mention) values
  ('79000000-0000-4000-8000-00000000000c', '79000000-0000-4000-8000-0000000000a1', '79200000-0000-4000-8000-0000000000e1', 'src/billing/worker.ts'),
  ('79000000-0000-4000-8000-00000000000c', '79000000-0000-4000-8000-0000000000b2', '79200000-0000-4000-8000-0000000000e1', 'src/billing/worker.ts');

select tests.authenticate_as('79000000-0000-4000-8000-00000000000c');

create temporary view reached as
select (select count(*)::int from public.hybrid_search('billing worker retries', tests.embedding(array[1, 0]::real[]),
          array['devai/project/ex'], 10, 0.5, 'local-hash-512-v1', graph_depth => 1)
         where id = '79000000-0000-4000-8000-0000000000b1') as by_edge,
       (select count(*)::int from public.hybrid_search('who owns src/billing/worker.ts', tests.embedding(array[1, 0]::real[]),
          array['devai/project/ex'], 10, 0.5, 'local-hash-512-v1', graph_depth => 0,
          entity_terms => array['src/billing/worker.ts'])
         where id = '79000000-0000-4000-8000-0000000000b2') as by_lookup,
       (select count(*)::int from public.hybrid_search('billing worker retries', tests.embedding(array[1, 0]::real[]),
          array['devai/project/ex'], 10, 0.5, 'local-hash-512-v1', graph_depth => 1)
         where id = '79000000-0000-4000-8000-0000000000b2') as by_shared_entity,
       (select count(*)::int
          from jsonb_array_elements(public.retrieve_for_turn('billing worker retries', tests.embedding(array[1, 0]::real[]),
                 array['devai/project/ex'], 5, 0.5, 'local-hash-512-v1', graph_depth => 0) -> 'related') r
         where r ->> 'id' = '79000000-0000-4000-8000-0000000000b1') as as_related;

select is(by_edge, 0, 'faded: a hop over an edge from the best hit does not bring it back') from reached;
select is(by_lookup, 0, 'faded: the entity lookup does not bring it back') from reached;
select is(by_shared_entity, 0, 'faded: the hop through an entity the best hit names does not bring it back') from reached;
select is(as_related, 0, 'faded: it is no related bullet') from reached;
select is((select count(*)::int from public.hybrid_search('billing worker retries', tests.embedding(array[1, 0]::real[]),
             array['devai/project/ex'], 10, 0.5, 'local-hash-512-v1', graph_depth => 1, as_of => now())
            where id = '79000000-0000-4000-8000-0000000000b1'),
          1, 'as_of: what held then is read from history, as by the keyword and vector signals');

-- Just above the floor, each way in finds them (the ways above are real ways in).
reset role;
update public.devai_memories set strength = 0.06
 where id in ('79000000-0000-4000-8000-0000000000b1', '79000000-0000-4000-8000-0000000000b2');
select tests.authenticate_as('79000000-0000-4000-8000-00000000000c');
select is(by_edge, 1, 'above the floor: found by a hop over the edge') from reached;
select is(by_lookup, 1, 'above the floor: found by the entity lookup') from reached;
select is(by_shared_entity, 1, 'above the floor: found through the shared entity') from reached;
select is(as_related, 1, 'above the floor: a related bullet') from reached;
select is((select count(*)::int from public.hybrid_search('billing worker retries', tests.embedding(array[1, 0]::real[]),
             array['devai/project/ex'], 10, 0.5, 'local-hash-512-v1', graph_depth => 1, graph_edge_types => array['causal'])
            where id = '79000000-0000-4000-8000-0000000000b1'),
          0, 'the edge-only memory comes by its edge alone (an edge type not asked for: not found)');

select * from finish();
rollback;
