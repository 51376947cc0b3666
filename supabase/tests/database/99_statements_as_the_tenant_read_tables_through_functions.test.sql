-- A statement the service sends as the tenant (`select … from ${tenant}`, _shared/db.ts
-- tenantItem) becomes the tenant's while its FROM item is read: a table it names itself was
-- planned before, as the login role, and row-level security does not guard it. So such a statement
-- reads tables only through functions, whose statements are planned as they run, as the tenant:
-- memory.query's empty-answer hint reads through memory_search.uncategorised_in_scopes (migration
-- 20261210700000), which finds a tenant's uncategorised memory for that tenant only.
begin;
select plan(5);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace, metadata) values
  ('99e70000-0000-4000-8000-0000000000a1', '99e70000-0000-4000-8000-00000000000a', 'A''s fact, no category', 'semantic', 'devai/project/a', '{}'),
  ('99e70000-0000-4000-8000-0000000000b1', '99e70000-0000-4000-8000-00000000000b', 'B''s fact, no category', 'semantic', 'devai/project/b', '{}'),
  ('99e70000-0000-4000-8000-0000000000b2', '99e70000-0000-4000-8000-00000000000b', 'B''s decision', 'semantic', 'devai/project/c', '{"category": "decisions"}');

-- Why the rule: the statement's own table, read with the tenant's settings as its FROM item, sees
-- every tenant's rows.
select cmp_ok(
  (select count(distinct m.owner_id)::integer
     from public.devai_memories m,
          (select count(set_config(s.name, s.value, true))
             from unnest(array['role', 'request.jwt.claims'],
                         array['authenticated', '{"sub": "99e70000-0000-4000-8000-00000000000a", "role": "authenticated"}']) as s(name, value)
           offset 0) as tenant
    where m.id::text like '99e70000-%'), '=', 2,
  'a table the statement names is read as the login role, whatever the settings its FROM item sets');
reset role;

select tests.authenticate_as('99e70000-0000-4000-8000-00000000000a');
select is(memory_search.uncategorised_in_scopes('99e70000-0000-4000-8000-00000000000a', array['devai/project/a']), true,
  'the tenant''s own uncategorised memory in the scope is found');
select is(memory_search.uncategorised_in_scopes('99e70000-0000-4000-8000-00000000000b', array['devai/project/b']), false,
  'another tenant''s is not, even naming that tenant: the function reads under row-level security');
select tests.authenticate_as('99e70000-0000-4000-8000-00000000000b');
select is(memory_search.uncategorised_in_scopes('99e70000-0000-4000-8000-00000000000b', array['devai/project/c']), false,
  'a memory with a category is not counted');
select is(memory_search.uncategorised_in_scopes('99e70000-0000-4000-8000-00000000000b', array['devai/project/bb']), false,
  'a scope is a prefix of whole segments');

select * from finish();
rollback;
