-- Per-tenant rate limits (public.take_rate_limit_token): a token bucket per tenant and route
-- class that refills at the class's rate up to its burst; a refused call takes nothing and says
-- how long to wait; tenants are apart; service_role is not limited unless configured; tenants can
-- neither read nor refill a bucket; the settings are range-checked.
begin;
select plan(17);

update public.memory_settings set value = 2 where name = 'rate_limit_write_burst';
update public.memory_settings set value = 60 where name = 'rate_limit_write_per_minute';
update public.memory_settings set value = 0 where name = 'rate_limit_read_per_minute';

select tests.authenticate_as('34000000-0000-4000-8000-0000000000aa');
select is(public.take_rate_limit_token('write'), 0::double precision, 'the first write takes a token');
-- The refill is held still from here: the bucket's refilled_at ahead of the clock, which the
-- function never counts back before. Otherwise the time between these statements refills tokens
-- (at 1 a second), and on a loaded machine 100 ms of it made the third wait less than 0.9 s.
reset role;
update memory_private.rate_limit_buckets set refilled_at = clock_timestamp() + interval '1 minute'
 where owner_id = '34000000-0000-4000-8000-0000000000aa' and route_class = 'write';
select tests.authenticate_as('34000000-0000-4000-8000-0000000000aa');
select is(public.take_rate_limit_token('write'), 0::double precision, 'the second too (burst 2)');
select is(public.take_rate_limit_token('write'), 1::double precision, 'the third waits a second (60 a minute)');
select is(public.take_rate_limit_token('write'), 1::double precision, 'and stays refused: a refused call takes nothing, it does not dig deeper');
select is(public.take_rate_limit_token('read'), null::double precision, 'another class has its own bucket (read: rate 0, no limit: NULL, nothing taken)');
select is(public.take_rate_limit_token('heavy'), 0::double precision, 'heavy has its own bucket too');
select throws_ok($$select * from memory_private.rate_limit_buckets$$, '42501', null, 'a tenant cannot read the buckets');
select throws_ok($$select public.take_rate_limit_token('admin')$$, '22023', null, 'an unknown route class is refused');

select tests.authenticate_as('34000000-0000-4000-8000-0000000000bb');
select is(public.take_rate_limit_token('write'), 0::double precision, 'another tenant is not limited by the first one');
select is(public.take_rate_limit_token('write', true), null::double precision, 'service_role callers are not limited by default (NULL: no limit)');
reset role;

-- Five seconds later (the bucket's refill moved back in time): refilled, but never above the burst.
update memory_private.rate_limit_buckets set refilled_at = clock_timestamp() - interval '5 seconds'
 where owner_id = '34000000-0000-4000-8000-0000000000aa' and route_class = 'write';
select tests.authenticate_as('34000000-0000-4000-8000-0000000000aa');
select is(public.take_rate_limit_token('write'), 0::double precision, 'tokens come back at the rate');
reset role;
select ok((select tokens <= 1 from memory_private.rate_limit_buckets
            where owner_id = '34000000-0000-4000-8000-0000000000aa' and route_class = 'write'),
          'the bucket never holds more than its burst (2) after a refill');

-- The refill held still again (as above): at 1 a second, a second between the refill and the
-- second call below gave the tenant its token back (a loaded machine's stall).
update memory_private.rate_limit_buckets set refilled_at = clock_timestamp() + interval '1 minute'
 where owner_id = '34000000-0000-4000-8000-0000000000aa' and route_class = 'write';
update public.memory_settings set value = 1 where name = 'rate_limit_service_role';
select tests.authenticate_as('34000000-0000-4000-8000-0000000000aa');
select is(public.take_rate_limit_token('write', true), 0::double precision, 'service_role takes the tenant''s last token');
select ok(public.take_rate_limit_token('write', true) > 0, 'with rate_limit_service_role = 1, service_role counts against the tenant');
reset role;

select throws_ok($$update public.memory_settings set value = 0 where name = 'rate_limit_heavy_burst'$$, '23514', null, 'a burst below 1 is rejected');
select throws_ok($$update public.memory_settings set value = -1 where name = 'rate_limit_read_per_minute'$$, '23514', null, 'a negative rate is rejected');
select throws_ok($$update public.memory_settings set value = 2 where name = 'rate_limit_service_role'$$, '23514', null, 'rate_limit_service_role is 0 or 1');

select * from finish();
rollback;
