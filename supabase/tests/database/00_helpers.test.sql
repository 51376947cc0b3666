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

-- Acts as the memory service acting for the tenant (the edge functions' db.ts tenantItem): role
-- authenticated with the tenant's claims and the service's mark memory.via = 'service', for the
-- rest of the transaction. Without the mark a tenant only reads (tests.as_data_api).
create or replace function tests.authenticate_as(p_tenant uuid)
returns void
language plpgsql
set search_path = ''
as $$
begin
  perform set_config('role', 'authenticated', true);
  perform set_config('request.jwt.claims',
                     json_build_object('sub', p_tenant, 'role', 'authenticated')::text, true);
  perform set_config('memory.via', 'service', true);
end;
$$;

-- Acts as the tenant's own token through Supabase's Data API (PostgREST, /rest/v1), for the rest
-- of the transaction: role authenticated, the tenant's claims and the request.* settings PostgREST
-- sets, and no service mark. What a tenant can do from outside the service.
create or replace function tests.as_data_api(p_tenant uuid, p_method text default 'POST')
returns void
language plpgsql
set search_path = ''
as $$
begin
  perform tests.authenticate_as(p_tenant);  -- role and claims as the service sets them; its mark is taken off below
  perform set_config('request.method', p_method, true);
  perform set_config('request.path', '/rest/v1/', true);
  perform set_config('request.headers', '{"accept": "application/json"}', true);
  perform set_config('memory.via', '', true);
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
  perform set_config('memory.via', '', true);
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
  perform set_config('memory.via', '', true);
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

-- Calls the step form of the lifecycle job p_job ('decay' or 'ttl': memory_private.run_<job>_step)
-- again and again with p_batches, as pg_cron does every minute of the window: call n (from 0) with
-- p_now = p_first_now + n minutes, until the run is finished (at most 10,000 calls). Returns every
-- call's result, in order. Used by 29_decay_steps and 30_ttl_steps.
create or replace function tests.run_steps_until_finished(p_job text, p_batches integer, p_first_now timestamptz)
returns table (n integer, result jsonb)
language plpgsql
set search_path = ''
as $$
begin
  n := 0;
  loop
    execute format('select memory_private.%I($1, $2)', 'run_' || p_job || '_step') into result
      using p_batches, p_first_now + make_interval(mins => n);
    return next;
    n := n + 1;
    exit when (result -> 'run' ->> 'finished')::boolean or n >= 10000;
  end loop;
end;
$$;

-- Everything a lifecycle job may write for the tenants whose owner_id starts with p_owner_prefix,
-- as one comparable value: their memories (strength, validity, state, purge_at, updated_at), the
-- history and change log past their creation, and their thread revisions. Used by 29_decay_steps
-- and 30_ttl_steps to compare the step form with the one-shot form.
create or replace function tests.lifecycle_state(p_owner_prefix text)
returns jsonb
language sql
stable
set search_path = ''
as $$
  select jsonb_build_object(
    'memories', (select jsonb_agg(jsonb_build_array(m.id, m.strength, m.is_valid, m.state, m.purge_at, m.updated_at) order by m.id)
                   from public.devai_memories m where starts_with(m.owner_id::text, p_owner_prefix)),
    'history', (select jsonb_agg(jsonb_build_array(h.memory_id, h.event, h.actor, h.old_content, h.new_content, h.meta)
                                 order by h.memory_id, h.event)
                  from public.memory_history h where starts_with(h.owner_id::text, p_owner_prefix) and h.event <> 'ADD'),
    'change_log', (select jsonb_agg(jsonb_build_array(c.owner_id, c.thread_id, c.revision, c.memory_id, c.event, c.summary, c.meta)
                                    order by c.owner_id, c.revision)
                     from public.memory_change_log c where starts_with(c.owner_id::text, p_owner_prefix) and c.event <> 'created'),
    'revisions', (select jsonb_agg(jsonb_build_array(r.owner_id, r.thread_id, r.revision) order by r.owner_id, r.thread_id)
                    from public.memory_thread_revisions r where starts_with(r.owner_id::text, p_owner_prefix)))
$$;

-- How many rows of p_table the statement p_sql read (sequential and index fetches, as counted in
-- this transaction's statistics): the "reads a few rows, not the table" checks of the queue's files.
create or replace function tests.rows_read_by(p_table regclass, p_sql text)
returns bigint
language plpgsql
set search_path = ''
as $$
declare
  v_before bigint;
  v_after bigint;
begin
  select seq_tup_read + idx_tup_fetch into v_before from pg_catalog.pg_stat_xact_user_tables where relid = p_table;
  execute p_sql;
  select seq_tup_read + idx_tup_fetch into v_after from pg_catalog.pg_stat_xact_user_tables where relid = p_table;
  return v_after - v_before;
end;
$$;

grant usage on schema tests to anon, authenticated, service_role;
grant execute on all functions in schema tests to anon, authenticated, service_role;

begin;
select plan(17);

select has_function('tests', 'create_tenant', array[]::name[], 'tests.create_tenant() exists');
select isnt(tests.create_tenant(), tests.create_tenant(), 'create_tenant gives a new tenant each time');

select tests.authenticate_as('00000000-0000-4000-8000-00000000000a');
select is(current_user::text, 'authenticated', 'authenticate_as switches to role authenticated');
select is(auth.uid(), '00000000-0000-4000-8000-00000000000a'::uuid, 'authenticate_as sets the JWT subject auth.uid() reads');
select is(auth.role(), 'authenticated', 'authenticate_as sets the JWT role claim');

select is(current_setting('memory.via', true), 'service', 'authenticate_as marks the statements as the service''s');

select tests.as_data_api('00000000-0000-4000-8000-00000000000a');
select is(auth.uid(), '00000000-0000-4000-8000-00000000000a'::uuid, 'as_data_api sets the JWT subject as PostgREST does');
select is(current_setting('memory.via', true), '', 'as_data_api has no service mark');

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
