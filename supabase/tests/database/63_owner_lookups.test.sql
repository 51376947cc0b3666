-- The security-definer lookups that take an owner (memory_search.keyword_postings,
-- memory_search.context_lookups) answer a tenant only about itself, and a session with no tenant
-- (a token as authenticated or anon without a sub) nothing at all; the jobs' roles (service_role,
-- postgres) still read any tenant's, as the worker and cron need.
begin;
select plan(10);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace, metadata) values
  ('63100000-0000-4000-8000-0000000000b1', '63000000-0000-4000-8000-00000000000b', 'B: src/billing.ts retries invoices on feat/secret-deal.', 'semantic', 'devai/project/p/notes', '{"category": "decisions", "branch": "feat/secret-deal"}');
insert into public.memory_entities (id, owner_id, canonical_name, entity_type) values
  ('63200000-0000-4000-8000-0000000000b1', '63000000-0000-4000-8000-00000000000b', 'src/billing.ts', 'file');
insert into public.memory_entity_links (owner_id, memory_id, entity_id, mention) values
  ('63000000-0000-4000-8000-00000000000b', '63100000-0000-4000-8000-0000000000b1', '63200000-0000-4000-8000-0000000000b1', 'src/billing.ts');

create temporary view lookup_of_b as
  select cardinality(ids) as n from memory_search.context_lookups('63000000-0000-4000-8000-00000000000b', array['devai/project/p/'],
           array['src/billing.ts'], null, 'feat/secret-deal', null, null, 30);
create temporary view postings_of_b as
  select cardinality(candidates) as n from memory_search.keyword_postings('63000000-0000-4000-8000-00000000000b',
           array['devai/project/p/'], array['''invoic'''::tsquery], 50, 100);
grant select on lookup_of_b, postings_of_b to authenticated, anon, service_role;

-- A token as authenticated whose claims carry no sub: auth.uid() is null, and that is no tenant.
select set_config('role', 'authenticated', true), set_config('request.jwt.claims', '{"role": "authenticated"}', true);
select is((select n from lookup_of_b), 0, 'authenticated without a sub: context_lookups finds nothing of B');
select is((select n from postings_of_b), 0, 'authenticated without a sub: keyword_postings finds nothing of B');

select tests.authenticate_as('63000000-0000-4000-8000-00000000000a');
select is((select n from lookup_of_b), 0, 'tenant A: context_lookups finds nothing of B');
select is((select n from postings_of_b), 0, 'tenant A: keyword_postings finds nothing of B');

select tests.authenticate_as('63000000-0000-4000-8000-00000000000b');
select is((select n from lookup_of_b), 2, 'tenant B: its own memory, by file and by branch');
select is((select n from postings_of_b), 1, 'tenant B: its own keyword candidate');

-- The jobs' roles, with no tenant in their claims.
select tests.as_service_role();
select is((select n from lookup_of_b), 2, 'service_role: context_lookups still reads B');
select is((select n from postings_of_b), 1, 'service_role: keyword_postings still reads B');

select tests.clear_authentication();
select is((select n from lookup_of_b), 2, 'postgres (cron, the worker''s connection): context_lookups still reads B');
select is((select n from postings_of_b), 1, 'postgres: keyword_postings still reads B');

select * from finish();
rollback;
