-- Rate-limit buckets that have refilled to their burst are deleted (migration 20261130300000):
-- memory_private.prune_rate_limit_buckets, run nightly by devai-rate-limit-prune. A full bucket is
-- what a tenant without one gets, so only full ones go (and those of a class without a limit); a
-- bucket drawn on stays, however many full ones are deleted around it, and its tenant stays
-- limited. A call takes at most p_limit and says whether more are due. Fixtures are written as the
-- table owner.
begin;
select plan(9);

update public.memory_settings set value = 2 where name = 'rate_limit_write_burst';
-- One token a minute: A's drained bucket must not refill while 50,000 rows are written around it
-- (the bucket's clock is clock_timestamp(): at one a second, a loaded machine gave A a token back
-- before test 3 asked).
update public.memory_settings set value = 1 where name = 'rate_limit_write_per_minute';
update public.memory_settings set value = 0 where name = 'rate_limit_read_per_minute';
-- Only this file's buckets (it rolls back).
delete from memory_private.rate_limit_buckets;

-- A drains its write bucket (burst 2).
select tests.authenticate_as('99a00000-0000-4000-8000-0000000000aa');
select public.take_rate_limit_token('write') from generate_series(1, 2);
reset role;

-- 50,000 other tenants' write buckets, full an hour ago; C's drained ten minutes ago (refilled
-- since, at one a minute); D's read bucket (no read limit); E's drained a second ago (not refilled).
insert into memory_private.rate_limit_buckets (owner_id, route_class, tokens, refilled_at)
select gen_random_uuid(), 'write', 2, clock_timestamp() - interval '1 hour' from generate_series(1, 50000);
insert into memory_private.rate_limit_buckets (owner_id, route_class, tokens, refilled_at) values
  ('99a00000-0000-4000-8000-0000000000cc', 'write', 0, clock_timestamp() - interval '10 minutes'),
  ('99a00000-0000-4000-8000-0000000000dd', 'read', 0, clock_timestamp()),
  ('99a00000-0000-4000-8000-0000000000ee', 'write', 0, clock_timestamp() - interval '1 second');

select is(memory_private.prune_rate_limit_buckets(clock_timestamp()), '{"deleted": 50002, "remaining": false}'::jsonb,
  'the 50,000 full buckets, the one refilled since and the one of a class without a limit are deleted');
select results_eq(
  $$select owner_id::text, route_class, tokens < 2 from memory_private.rate_limit_buckets order by owner_id$$,
  $$values ('99a00000-0000-4000-8000-0000000000aa'::text, 'write'::text, true),
           ('99a00000-0000-4000-8000-0000000000ee', 'write', true)$$,
  'the buckets drawn on and not yet refilled stay, as they were');

select tests.authenticate_as('99a00000-0000-4000-8000-0000000000aa');
select ok(public.take_rate_limit_token('write') > 0, 'A is still limited after 50,000 other buckets went');
reset role;
select is(memory_private.prune_rate_limit_buckets(clock_timestamp()), '{"deleted": 0, "remaining": false}'::jsonb,
  'a second call deletes nothing: A''s bucket is still drawn on');

-- An hour later A's bucket is full again: it goes, and A starts from a full bucket, as before.
select is(memory_private.prune_rate_limit_buckets(clock_timestamp() + interval '1 hour'), '{"deleted": 2, "remaining": false}'::jsonb,
  'an hour later both refilled buckets are deleted');
select tests.authenticate_as('99a00000-0000-4000-8000-0000000000aa');
select is(public.take_rate_limit_token('write'), 0::double precision, 'a tenant whose bucket was deleted takes a token from a full one');
reset role;

insert into memory_private.rate_limit_buckets (owner_id, route_class, tokens, refilled_at)
select gen_random_uuid(), 'heavy', 20, clock_timestamp() - interval '1 day' from generate_series(1, 3);
select is(memory_private.prune_rate_limit_buckets(clock_timestamp(), 2), '{"deleted": 2, "remaining": true}'::jsonb,
  'a call deletes at most p_limit and says more are due');
select throws_ok($$select memory_private.prune_rate_limit_buckets(now(), 0)$$, '22023', null, 'p_limit must be at least 1');

select results_eq(
  $$select schedule, command from public.memory_maintenance_schedules where job_name = 'devai-rate-limit-prune'$$,
  $$values ('55 6 * * *'::text, 'select memory_private.prune_rate_limit_buckets()'::text)$$,
  'devai-rate-limit-prune runs it daily at 06:55 UTC');

select * from finish();
rollback;
