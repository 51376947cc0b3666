-- The relation boost (max_relation_strength, memory_search.relation_strengths) says how well the
-- memory itself is corroborated, whatever the request asks (docs/retrieval.md#graph): an edge to a
-- memory the request's filters leave out (time window, memory types, categories, exclusions)
-- still counts, so one memory ranks with the same boost in every search that finds it.
begin;
select plan(5);

-- a1 (found, recent, semantic, category decisions) and b1, related to it, old, episodic, in
-- another category and naming what the exclusion leaves out.
insert into public.devai_memories
  (id, owner_id, content, memory_type, namespace, embedding, embedding_model, created_at, metadata)
values
  ('87000000-0000-4000-8000-0000000000a1', '87000000-0000-4000-8000-00000000000c',
   'The billing worker retries failed charges.', 'semantic', 'devai/project/ex', tests.embedding(array[1, 0]::real[]),
   'm', now() - interval '1 day', '{"category": "decisions"}'),
  ('87000000-0000-4000-8000-0000000000b1', '87000000-0000-4000-8000-00000000000c',
   'Stripe webhooks are signed.', 'episodic', 'devai/project/ex', tests.embedding(array[0, 1]::real[]),
   'm', now() - interval '30 days', '{"category": "errors_and_fixes"}');
insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength)
values ('87000000-0000-4000-8000-00000000000c', '87000000-0000-4000-8000-0000000000a1',
        '87000000-0000-4000-8000-0000000000b1', 'related_to', 0.8);

create function pg_temp.boost(q text, after timestamptz default null, types text[] default null,
                              categories text[] default null) returns real
language sql as $$
  select h.max_relation_strength
    from public.hybrid_search(q, tests.embedding(array[1, 0]::real[]), array['devai/project/ex'], 10, 0.9, 'm',
                              graph_depth => 0, filter_after => after, filter_memory_types => types,
                              filter_categories => categories) h
   where h.id = '87000000-0000-4000-8000-0000000000a1'
$$;

select tests.authenticate_as('87000000-0000-4000-8000-00000000000c');
select is(pg_temp.boost('billing worker retries'), 0.8::real, 'no filter: the edge to b1 boosts a1');
select is(pg_temp.boost('billing worker retries', after => now() - interval '7 days'), 0.8::real,
          'a time window that leaves b1 out: the same boost');
select is(pg_temp.boost('billing worker retries', types => array['semantic']), 0.8::real,
          'memory types that leave b1 out: the same boost');
select is(pg_temp.boost('billing worker retries', categories => array['decisions']), 0.8::real,
          'categories that leave b1 out: the same boost');
select is(pg_temp.boost('billing worker retries -stripe'), 0.8::real, 'an exclusion b1 matches: the same boost');
select tests.clear_authentication();

select * from finish();
rollback;
