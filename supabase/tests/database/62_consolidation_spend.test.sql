-- A consolidation run's spending (the pairs and tokens the nightly caps read) is written only
-- through public.finish_consolidation_run, which pins the tenant and only adds: a tenant cannot
-- reset its own counters through the API, cannot close or count another tenant's run, and the
-- service's path still counts (docs/consolidation.md#nightly-consolidation).
begin;
select plan(9);

insert into public.memory_consolidation_runs (id, owner_id, trigger, finished_at, pairs_checked, tokens_used) values
  ('62000000-0000-4000-8000-0000000000a1', '62000000-0000-4000-8000-00000000000a', 'api', now(), 50, 20000),
  ('62000000-0000-4000-8000-0000000000b1', '62000000-0000-4000-8000-00000000000b', 'api', null, 0, 0);

select tests.authenticate_as('62000000-0000-4000-8000-00000000000a');

select throws_ok($$update public.memory_consolidation_runs set tokens_used = 0 where id = '62000000-0000-4000-8000-0000000000a1'$$,
  '42501', 'permission denied for table memory_consolidation_runs', 'a tenant cannot reset its own tokens_used');
select throws_ok($$update public.memory_consolidation_runs set pairs_checked = 0 where id = '62000000-0000-4000-8000-0000000000a1'$$,
  '42501', 'permission denied for table memory_consolidation_runs', 'a tenant cannot reset its own pairs_checked');
select is(public.finish_consolidation_run('62000000-0000-4000-8000-0000000000a1', -50, -20000, '{}'), true,
  'finishing its own run with negative figures is accepted ...');
select results_eq($$select pairs_checked, tokens_used from public.memory_consolidation_runs where id = '62000000-0000-4000-8000-0000000000a1'$$,
  $$values (50, 20000)$$, '... and takes nothing off: the counters only grow');
select is(public.finish_consolidation_run('62000000-0000-4000-8000-0000000000b1', 1, 1, '{}'), false, 'another tenant''s run is not the caller''s');

-- The service's path: the worker runs as the tenant and closes its run with what it spent.
select lives_ok($$insert into public.memory_consolidation_runs (owner_id, trigger, dry_run)
  values ('62000000-0000-4000-8000-00000000000a', 'api', true)$$, 'a tenant opens a (dry) run');
select is(public.finish_consolidation_run((select id from public.memory_consolidation_runs where dry_run), 3, 700, '{"dry_run": true}'), true, 'and closes it');
select results_eq($$select sum(pairs_checked)::int, sum(tokens_used)::int, count(*) filter (where finished_at is null)::int from public.memory_consolidation_runs$$,
  $$values (53, 20700, 0)$$, 'its spending counts towards the day''s caps; nothing is left under way');

select tests.clear_authentication();
select results_eq($$select pairs_checked, tokens_used, finished_at is null from public.memory_consolidation_runs where id = '62000000-0000-4000-8000-0000000000b1'$$,
  $$values (0, 0, true)$$, 'B''s run was neither counted nor closed');

select * from finish();
rollback;
