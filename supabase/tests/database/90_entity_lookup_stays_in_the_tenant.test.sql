-- GET memory/entities?q= finds its entities through memory_search.entity_matches (migration
-- 20261128750000; docs/graph.md#entities): the tenant's own entries of q's name grams, alias key
-- and summary lexemes. It answers how each matched as the per-row rules did, and a caller never
-- reads another tenant's entities through it, even naming that tenant.
begin;
select plan(6);

insert into public.memory_entities (owner_id, canonical_name, entity_type, aliases, summary, mention_count) values
  ('90000000-0000-4000-8000-00000000000a', 'Stripe', 'service', '{}', 'Takes the payments of the checkout flow.', 1),
  ('90000000-0000-4000-8000-00000000000a', 'stripe-webhooks', 'service', '{}', null, 5),
  ('90000000-0000-4000-8000-00000000000a', 'Payments', 'concept', '{Billing}', 'Refunds and flow of checkout.', 2),
  ('90000000-0000-4000-8000-00000000000a', 'nostripes', 'tool', '{}', null, 9),
  ('90000000-0000-4000-8000-00000000000b', 'Stripe', 'service', '{}', 'Another tenant''s checkout flow.', 7);

create function pg_temp.found(p_owner uuid, p_q text, p_type text default null) returns text[]
language sql as $$
  select coalesce(array_agg(m.matched || ':' || e.canonical_name order by m.n), '{}')
    from memory_search.entity_matches(p_owner, p_q, p_type, 20) with ordinality as m (id, matched, n)
    join public.memory_entities e on e.id = m.id
$$;

select tests.authenticate_as('90000000-0000-4000-8000-00000000000a');
select is(pg_temp.found(auth.uid(), 'STRIPE'), array['name:Stripe', 'prefix:stripe-webhooks', 'contains:nostripes'],
  'name, then prefix, then inside the name; each class by mentions');
select is(pg_temp.found(auth.uid(), 'billing'), array['alias:Payments'], 'an alias key');
select is(pg_temp.found(auth.uid(), '"checkout flow"'), array['summary:Stripe'],
  'a phrase of the summary''s words matches in order only');
select is(pg_temp.found(auth.uid(), '-refunds'), array['summary:Stripe'],
  'a query of negations only: summaries without the word, never an entity without a summary');
select is(pg_temp.found(auth.uid(), 'str', 'tool'), array['contains:nostripes'], 'a short key, within a type');
select is(pg_temp.found('90000000-0000-4000-8000-00000000000b', 'stripe'), '{}'::text[],
  'another tenant''s entities are not found by naming that tenant');

select * from finish();
rollback;
