-- A job the model provider could not serve is postponed (memory_private.postpone_job): queued again
-- with its attempt given back, never dead however often, after a wait that doubles each time in a
-- row up to its cap; its result says so and keeps its progress; only the worker holding it can, and
-- tenants cannot call it. docs/operations.md#an-outage-of-the-model-provider.
begin;
select plan(10);

insert into public.memory_jobs (id, owner_id, kind, status, idempotency_key, attempts, max_attempts, locked_until, locked_by, result)
values ('99100000-0000-4000-8000-000000000001', '99100000-0000-4000-8000-0000000000aa', 'extract', 'running', 'outage-1',
        5, 5, now() + interval '20 seconds', 'worker-a', '{"rules": {"status": "stored"}}');

select is(memory_private.postpone_job('99100000-0000-4000-8000-000000000001', 'worker-b', 'HTTP 503'), null,
          'a worker that does not hold the job postpones nothing');
select is(memory_private.postpone_job('99100000-0000-4000-8000-000000000001', 'worker-a', 'HTTP 503', interval '30 seconds', interval '100 seconds'),
          'queued', 'at its last attempt, the job is queued again, not dead');
select results_eq(
  $$select status, attempts, last_error, run_after = now() + interval '30 seconds', locked_by is null and locked_until is null
      from public.memory_jobs where id = '99100000-0000-4000-8000-000000000001'$$,
  $$values ('queued'::text, 4, 'provider unavailable: HTTP 503'::text, true, true)$$,
  'its attempt given back, the failure in last_error, the first wait its base');
select is((select result - 'provider_unavailable' from public.memory_jobs where id = '99100000-0000-4000-8000-000000000001'),
          '{"rules": {"status": "stored"}}'::jsonb, 'the progress recorded before stays');

-- Claimed again and postponed again, three times: the wait doubles, then is capped.
create temporary table waits (n int, wait interval) on commit drop;
do $$
begin
  for i in 2..4 loop
    update public.memory_jobs set status = 'running', attempts = attempts + 1, locked_by = 'worker-a',
                                  locked_until = now() + interval '20 seconds'
     where id = '99100000-0000-4000-8000-000000000001';
    perform memory_private.postpone_job('99100000-0000-4000-8000-000000000001', 'worker-a', 'HTTP 401',
                                        interval '30 seconds', interval '100 seconds');
    insert into waits select i, run_after - now() from public.memory_jobs where id = '99100000-0000-4000-8000-000000000001';
  end loop;
end $$;
select results_eq($$select n, wait from waits order by n$$,
                  $$values (2, interval '60 seconds'), (3, interval '100 seconds'), (4, interval '100 seconds')$$,
                  'the wait doubles each time in a row, up to its cap');
select results_eq(
  $$select status, attempts, result -> 'provider_unavailable' ->> 'times', result -> 'provider_unavailable' ->> 'error'
      from public.memory_jobs where id = '99100000-0000-4000-8000-000000000001'$$,
  $$values ('queued'::text, 4, '4'::text, 'HTTP 401'::text)$$,
  'four times postponed, still queued, its attempts where they were');
select ok((select (result -> 'provider_unavailable' ->> 'next_try_at')::timestamptz = run_after
             from public.memory_jobs where id = '99100000-0000-4000-8000-000000000001'),
          'the result says when it is tried next');
-- A failure counted in between (a claim whose attempt fail_job kept) ends the row: the next
-- postponement is the first again, with the base wait and a new `since`.
update public.memory_jobs set status = 'running', attempts = attempts + 2, locked_by = 'worker-a',
                              locked_until = now() + interval '20 seconds'
 where id = '99100000-0000-4000-8000-000000000001';
select memory_private.postpone_job('99100000-0000-4000-8000-000000000001', 'worker-a', 'HTTP 503',
                                   interval '30 seconds', interval '100 seconds');
select results_eq(
  $$select (result -> 'provider_unavailable' ->> 'times')::int, run_after - now(), attempts
      from public.memory_jobs where id = '99100000-0000-4000-8000-000000000001'$$,
  $$values (1, interval '30 seconds', 5)$$,
  'after a counted failure, postponed as the first time in a row');

-- Its times read in UTC whatever the session's zone (docs/operations.md#time-zones-and-locale).
set local timezone = 'Pacific/Chatham';
insert into public.memory_jobs (id, owner_id, kind, status, idempotency_key, attempts, max_attempts, locked_until, locked_by)
values ('99100000-0000-4000-8000-000000000002', '99100000-0000-4000-8000-0000000000aa', 'dedup', 'running', 'outage-2',
        1, 5, now() + interval '20 seconds', 'worker-a');
select memory_private.postpone_job('99100000-0000-4000-8000-000000000002', 'worker-a', 'HTTP 503');
select ok((select result -> 'provider_unavailable' ->> 'since' like '%+00:00'
                  and result -> 'provider_unavailable' ->> 'next_try_at' like '%+00:00'
             from public.memory_jobs where id = '99100000-0000-4000-8000-000000000002'),
          'its times are written in UTC in a session in another zone');
reset timezone;

select ok(not has_function_privilege('authenticated', 'memory_private.postpone_job(uuid, text, text, interval, interval)', 'execute')
          and not has_function_privilege('anon', 'memory_private.postpone_job(uuid, text, text, interval, interval)', 'execute'),
          'tenants cannot postpone jobs');

select * from finish();
rollback;
