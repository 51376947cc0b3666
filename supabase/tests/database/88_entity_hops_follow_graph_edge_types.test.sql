-- hybrid_search's hop through the entities the best hits name is an edge of type 'entity' and
-- follows graph_edge_types (migration 20261128740100; docs/retrieval.md#graph): a list that does
-- not name 'entity' leaves the hop out, a null list or one naming it keeps it; the lookup of the
-- question's own names (entity_terms) is no hop and answers whatever the list.
begin;
select plan(5);

-- a1, the best hit (near [1, 0]); b1 reached from it over a causal edge; b2 names the same file;
-- b3 names Stripe, a name the question asks about.
insert into public.devai_memories (id, owner_id, content, memory_type, namespace, embedding, embedding_model)
select ('86000000-0000-4000-8000-0000000000' || k)::uuid, '86000000-0000-4000-8000-00000000000c', c, 'semantic',
       'devai/project/ex', tests.embedding(v::real[]), 'm'
  from (values ('a1', 'The billing worker retries failed charges.', array[1, 0]),
               ('b1', 'Invoices are rendered as PDF.', array[0, 1]),
               ('b2', 'Its tests need a fake clock.', array[0, 1]),
               ('b3', 'Payments go through Stripe.', array[0, 1])) as x(k, c, v);
insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength)
values ('86000000-0000-4000-8000-00000000000c', '86000000-0000-4000-8000-0000000000a1',
        '86000000-0000-4000-8000-0000000000b1', 'causal', 0.9);
insert into public.memory_entities (id, owner_id, canonical_name, entity_type, normalized_name, mention_count) values
  ('86000000-0000-4000-8000-0000000000f1', '86000000-0000-4000-8000-00000000000c', 'src/billing/worker.ts', 'file',
   'src/billing/worker.ts', 2),
  ('86000000-0000-4000-8000-0000000000f2', '86000000-0000-4000-8000-00000000000c', 'Stripe', 'service', 'stripe', 1);
insert into public.memory_entity_links (owner_id, memory_id, entity_id, mention)
select '86000000-0000-4000-8000-00000000000c', ('86000000-0000-4000-8000-0000000000' || m)::uuid,
       ('86000000-0000-4000-8000-0000000000' || e)::uuid, n
  from (values ('a1', 'f1', 'src/billing/worker.ts'), ('b2', 'f1', 'src/billing/worker.ts'), ('b3', 'f2', 'Stripe'))
         as x(m, e, n);

-- What the graph list holds for a list of edge types: each memory with the edge that reached it.
create function pg_temp.graph(edge_types text[], depth integer default 1, names text[] default null) returns text[]
language sql as $$
  select coalesce(array_agg(right(h.id::text, 2) || ':' || h.graph_edge order by right(h.id::text, 2)), '{}')
    from public.hybrid_search('billing worker retries', tests.embedding(array[1, 0]::real[]), array['devai/project/ex'],
                              10, 0.9, 'm', graph_depth => depth, graph_edge_types => edge_types,
                              entity_terms => names) h
   where h.graph_rank is not null
$$;

select tests.authenticate_as('86000000-0000-4000-8000-00000000000c');
select is(pg_temp.graph(null), array['b1:causal', 'b2:entity'], 'no list: the typed hop and the entity hop');
select is(pg_temp.graph(array['causal']), array['b1:causal'],
          'a list without entity (a why question''s): no hop through the file both memories name');
select is(pg_temp.graph(array['causal', 'entity']), array['b1:causal', 'b2:entity'], 'a list naming entity: both');
select is(pg_temp.graph(array['entity']), array['b2:entity'], 'entity alone: the entity hop only');
select is(pg_temp.graph(array['causal'], 0, array['Stripe']), array['b3:entity'],
          'the lookup of a name the question asks about is no hop: the list does not govern it');
select tests.clear_authentication();

select * from finish();
rollback;
