-- Categories and agent allowlists are deployment-wide configuration: every signed-in user reads
-- them, no user changes them (one tenant cannot widen another's agents), anon sees nothing, and
-- the service role manages them. The coding defaults are seeded.
begin;
select plan(14);

select ok((select count(*) = 12 from public.memory_categories
            where name in ('architecture', 'conventions', 'commands', 'build', 'testing', 'deployment', 'dependencies',
                           'errors_and_fixes', 'decisions', 'preferences', 'workflows', 'procedural') and kind = 'system'),
          'the coding categories are seeded as system categories');
select ok((select count(distinct agent) = 5 from public.memory_agent_allowlists
            where agent in ('coder', 'reviewer', 'planner', 'tester', 'ops')),
          'the coding agents are seeded');
select ok(exists (select from public.memory_agent_allowlists where agent = 'supervisor' and category = 'profile'),
          'the earlier agents keep their allowlists');

select tests.authenticate_as(tests.create_tenant());
select ok((select count(*) > 0 from public.memory_categories), 'a signed-in user reads the categories');
select ok((select count(*) > 0 from public.memory_agent_allowlists), 'a signed-in user reads the allowlists');
select throws_ok($$insert into public.memory_categories (name) values ('mine')$$, '42501', null, 'a user cannot add a category');
select throws_ok($$insert into public.memory_agent_allowlists (agent, category) values ('coder', 'tasks')$$, '42501', null,
                 'a user cannot widen an agent''s allowlist');
select throws_ok($$update public.memory_categories set context = 'all' where name = 'testing'$$, '42501', null, 'a user cannot change a category');
select throws_ok($$delete from public.memory_agent_allowlists where agent = 'coder'$$, '42501', null, 'a user cannot remove an allowlist');

select tests.as_anon();
select throws_ok($$select * from public.memory_categories$$, '42501', null, 'anon cannot read the categories');

select tests.as_service_role();
insert into public.memory_categories (name) values ('runbooks_tap');
insert into public.memory_agent_allowlists (agent, category) values ('claude-code', 'runbooks_tap');
select is((select array_agg(category) from public.memory_agent_allowlists where agent = 'claude-code'), array['runbooks_tap'],
          'the service role adds a category and an agent');
update public.memory_categories set context = 'all' where name = 'runbooks_tap';
select is((select context from public.memory_categories where name = 'runbooks_tap'), 'all', 'the service role changes a category');
delete from public.memory_categories where name = 'runbooks_tap';
select is_empty($$select from public.memory_agent_allowlists where agent = 'claude-code'$$,
                'removing a category removes it from every allowlist');
select tests.clear_authentication();
select is((select count(*)::int from public.memory_categories where name = 'runbooks_tap'), 0, 'nothing of the test is left');

select * from finish();
rollback;
