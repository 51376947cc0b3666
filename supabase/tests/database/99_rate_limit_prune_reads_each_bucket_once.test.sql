-- The nightly prune of full rate-limit buckets deletes what it picked by row address
-- (migration 20261205800000), whatever the statistics say of the table's size. The buckets here
-- are written after the statistics said the table is empty: the join the old function deleted
-- through was then a nested loop over every picked bucket for every bucket (20,000 buckets:
-- 399,980,000 comparisons, 52 to 105 s; 30,000 about 2.25 times that). The statement timeout is a
-- hang guard, far above the new function's work (about a second) and far below the old one's.
begin;
select plan(3);

-- The statistics of a table vacuumed when the last prune had emptied it (pages, no live rows), as
-- autovacuum leaves them after a night's prune: the plan is made for a handful of buckets. Set by
-- hand (the test runs as the superuser; rolled back with the rest).
delete from memory_private.rate_limit_buckets;
update pg_catalog.pg_class set relpages = 300, reltuples = 0 where oid = 'memory_private.rate_limit_buckets'::regclass;
insert into memory_private.rate_limit_buckets (owner_id, route_class, tokens, refilled_at)
select gen_random_uuid(), 'write', 2, clock_timestamp() - interval '1 hour' from generate_series(1, 30000);
insert into memory_private.rate_limit_buckets (owner_id, route_class, tokens, refilled_at)
values ('99b00000-0000-4000-8000-0000000000aa', 'write', 0, clock_timestamp() + interval '1 hour');

set local statement_timeout = '30s';
select is(memory_private.prune_rate_limit_buckets(clock_timestamp()), '{"deleted": 30000, "remaining": false}'::jsonb,
  '30,000 full buckets written since the statistics said empty are deleted within the hang guard');
reset statement_timeout;
select results_eq($$select owner_id::text from memory_private.rate_limit_buckets$$,
  $$values ('99b00000-0000-4000-8000-0000000000aa'::text)$$, 'the bucket drawn on stays');
select is(memory_private.prune_rate_limit_buckets(clock_timestamp(), 5), '{"deleted": 0, "remaining": false}'::jsonb,
  'a second call finds nothing due');

select * from finish();
rollback;
