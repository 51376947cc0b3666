-- public.memory_settings: readable by signed-in users, writable only by postgres/service_role,
-- values range-checked; a missing setting is an error, not a silent default.
begin;
set local timezone to 'UTC';
select plan(12);

select results_eq(
  $$select name, value from public.memory_settings
     where name in ('decay_base', 'prune_threshold', 'ttl_idle_days', 'ttl_importance_below', 'purge_grace_days') order by name$$,
  $$values ('decay_base'::text, 0.95::numeric), ('prune_threshold', 0.05), ('purge_grace_days', 30), ('ttl_idle_days', 60), ('ttl_importance_below', 3)$$,
  'defaults: decay 0.95/day, prune below 0.05, TTL after 60 idle days below importance 3, purge 30 days later');
select is(public.memory_setting('decay_base'), 0.95, 'memory_setting reads a value');
select throws_ok($$select public.memory_setting('no_such_setting')$$, 'P0002', null, 'a missing setting raises');
select throws_ok($$update public.memory_settings set value = 1.5 where name = 'decay_base'$$, '23514', null, 'decay_base above 1 is rejected');
select throws_ok($$update public.memory_settings set value = 0 where name = 'purge_batch_size'$$, '23514', null, 'purge_batch_size 0 is rejected');
select throws_ok($$update public.memory_settings set value = 0 where name = 'step_new_run_after_hours'$$, '23514', null,
                 'step_new_run_after_hours 0 is rejected (a new run at every call)');
select lives_ok($$update public.memory_settings set value = 0.5 where name = 'step_new_run_after_hours'$$,
                'step_new_run_after_hours may be a fraction of an hour');

set local role authenticated;
select set_config('request.jwt.claims', '{"sub": "27000000-0000-4000-8000-0000000000aa", "role": "authenticated"}', true);
select is((select count(*) > 0 from public.memory_settings), true, 'authenticated can read the settings');
select throws_ok($$update public.memory_settings set value = 0.5 where name = 'decay_base'$$, '42501', null, 'authenticated cannot change them');
select is((select count(*) from public.memory_maintenance_schedules), 18::bigint, 'authenticated can read the maintenance schedules');
reset role;

set local role anon;
select throws_ok($$select * from public.memory_settings$$, '42501', null, 'anon cannot read the settings');
reset role;

set local role service_role;
select lives_ok($$update public.memory_settings set value = 90 where name = 'ttl_idle_days'$$, 'service_role can change a setting');
reset role;

select * from finish();
rollback;
