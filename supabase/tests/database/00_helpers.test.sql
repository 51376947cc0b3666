-- Shared pgTAP helpers (supabase-test-helpers style) in schema `tests`, used by every other file.
-- Files run in name order, so this one creates them first. They are committed (outside the
-- transaction below) and idempotent, so a rerun or `supabase test db` on a warm database works.
set client_min_messages = warning;
create schema if not exists tests;

-- A fresh tenant id. Tenants have no table of their own (owner_id is the JWT subject), so a random
-- uuid is a tenant no other test can collide with.
create or replace function tests.create_tenant()
returns uuid
language sql
volatile
set search_path = ''
as $$ select gen_random_uuid() $$;

-- Acts as the tenant's user token would through PostgREST or the edge functions' db.ts: role
-- authenticated with the tenant's claims, for the rest of the transaction.
create or replace function tests.authenticate_as(p_tenant uuid)
returns void
language plpgsql
set search_path = ''
as $$
begin
  perform set_config('role', 'authenticated', true);
  perform set_config('request.jwt.claims',
                     json_build_object('sub', p_tenant, 'role', 'authenticated')::text, true);
end;
$$;

-- Acts as a request without a user token (the anon key).
create or replace function tests.as_anon()
returns void
language plpgsql
set search_path = ''
as $$
begin
  perform set_config('role', 'anon', true);
  perform set_config('request.jwt.claims', json_build_object('role', 'anon')::text, true);
end;
$$;

-- Acts as a server-side caller with the service-role key (bypasses RLS).
create or replace function tests.as_service_role()
returns void
language plpgsql
set search_path = ''
as $$
begin
  perform set_config('role', 'service_role', true);
  perform set_config('request.jwt.claims', json_build_object('role', 'service_role')::text, true);
end;
$$;

-- Back to the session user (postgres) with no claims, as a Studio edit or a cron job runs.
create or replace function tests.clear_authentication()
returns void
language plpgsql
set search_path = ''
as $$
begin
  perform set_config('role', 'none', true);
  perform set_config('request.jwt.claims', '', true);
end;
$$;

-- A 512-d embedding from its first components (the rest are zero). Cosine similarity is
-- scale-invariant, so '{1}' and '{0.6,0.8}' have similarity 0.6 without normalising.
create or replace function tests.embedding(p_head real[])
returns extensions.vector
language sql
immutable
set search_path = ''
as $$
  select (p_head || array_fill(0::real, array[512 - cardinality(p_head)]))::extensions.vector(512)
$$;

grant usage on schema tests to anon, authenticated, service_role;
grant execute on all functions in schema tests to anon, authenticated, service_role;

begin;
select plan(14);

select has_function('tests', 'create_tenant', array[]::name[], 'tests.create_tenant() exists');
select isnt(tests.create_tenant(), tests.create_tenant(), 'create_tenant gives a new tenant each time');

select tests.authenticate_as('00000000-0000-4000-8000-00000000000a');
select is(current_user::text, 'authenticated', 'authenticate_as switches to role authenticated');
select is(auth.uid(), '00000000-0000-4000-8000-00000000000a'::uuid, 'authenticate_as sets the JWT subject auth.uid() reads');
select is(auth.role(), 'authenticated', 'authenticate_as sets the JWT role claim');

select tests.as_anon();
select is(current_user::text, 'anon', 'as_anon switches to role anon');
select is(auth.uid(), null, 'as_anon has no subject');

select tests.as_service_role();
select is(current_user::text, 'service_role', 'as_service_role switches to role service_role');
select is(auth.role(), 'service_role', 'as_service_role sets the service_role claim');

select tests.clear_authentication();
select is(current_user::text, session_user::text, 'clear_authentication returns to the session user');
select is(auth.jwt(), null, 'clear_authentication removes the claims');

select is(extensions.vector_dims(tests.embedding('{1,2,3}')), 512, 'embedding pads to 512 dimensions');
select is(round((1 - (tests.embedding('{1}') operator(extensions.<=>) tests.embedding('{0.6,0.8}')))::numeric, 6), 0.6,
          'embedding: cosine similarity of {1} and {0.6,0.8} is 0.6');

-- Role changes made by the helpers are transaction-local, like `set local role`.
select tests.authenticate_as(tests.create_tenant());
select lives_ok($$select tests.clear_authentication()$$, 'helpers are executable by authenticated');

select * from finish();
rollback;
