-- A tenant writes through the memory service only (migration 20261128990000, docs/auth.md#data-api):
-- through Supabase's Data API (PostgREST: role authenticated, the tenant's claims, request.*, no
-- memory.via = 'service'; tests.as_data_api) it reads its own rows but cannot insert, update or
-- delete any of them, in any table the role authenticated may write, nor call the security definer
-- functions that write tenant rows. The service's statements (tests.authenticate_as, as db.ts
-- tenantItem sets them) still write. The table checks loop over every public table authenticated
-- may write, so a table added later is covered, and the first assertion fails for such a table
-- without the restrictive policies. Fixtures are written as the table owner.
begin;

-- The public tables the role authenticated may write (a table grant or an INSERT/UPDATE column grant).
create function tests.tenant_writable_tables()
returns table (tbl regclass, can_update boolean, can_delete boolean)
language sql
stable
set search_path = ''
as $$
  select c.oid::regclass,
         pg_catalog.has_any_column_privilege('authenticated', c.oid, 'update'),
         pg_catalog.has_table_privilege('authenticated', c.oid, 'delete')
    from pg_catalog.pg_class c
    join pg_catalog.pg_namespace n on n.oid = c.relnamespace
   where n.nspname = 'public' and c.relkind in ('r', 'p', 'v', 'm', 'f')
     and (pg_catalog.has_table_privilege('authenticated', c.oid, 'insert, update, delete, truncate')
          or pg_catalog.has_any_column_privilege('authenticated', c.oid, 'insert, update'))
   order by c.relname
$$;

-- For each writable table and the caller's shape (p_data_api: tests.as_data_api, else
-- tests.authenticate_as), one TAP line per write: a copy of the tenant's own row inserted (its
-- INSERT-granted columns, ON CONFLICT DO NOTHING so the service's copy of a keyed row inserts
-- nothing rather than failing), its first UPDATE-granted column set to itself (a token revoked),
-- its rows deleted;
-- through the Data API each is refused (the delete deletes nothing), as the service each runs.
-- Through the Data API, also one line per table: the tenant reads its row.
create function tests.tenant_writes(p_tenant uuid, p_data_api boolean)
returns setof text
language plpgsql
set search_path = extensions  -- pgTAP's
as $$
declare
  t record;
  v_cols text;
  v_col text;
  v_insert text;
  v_update text;
  v_deleted bigint;
  v_row jsonb;
begin
  for t in select w.*, c.relname as name from tests.tenant_writable_tables() w join pg_catalog.pg_class c on c.oid = w.tbl loop
    select string_agg(format('%I', a.attname), ', ' order by a.attnum) filter (where pg_catalog.has_column_privilege('authenticated', t.tbl, a.attnum, 'insert')),
           (array_agg(format('%I', a.attname) order by a.attnum) filter (where pg_catalog.has_column_privilege('authenticated', t.tbl, a.attnum, 'update')))[1]
      into v_cols, v_col
      from pg_catalog.pg_attribute a where a.attrelid = t.tbl and a.attnum > 0 and not a.attisdropped;
    -- The row is read here, as the table owner: a tenant may not read every column it may insert.
    execute format('select to_jsonb(t) from %s t where owner_id = %L limit 1', t.tbl, p_tenant) into v_row;
    v_insert := format('insert into %s (%s) select %s from jsonb_populate_record(null::%s, %L) on conflict do nothing',
                       t.tbl, v_cols, v_cols, t.tbl, v_row);
    -- An agent token's one update is its revocation, dated now (its permissive policy's check).
    v_update := format('update %s set %s where owner_id = %L', t.tbl,
                       case t.name when 'memory_agent_tokens' then 'revoked_at = now()' else format('%s = %1$s', v_col) end, p_tenant);
    if p_data_api then
      perform tests.as_data_api(p_tenant);
      return next isnt_empty(format('select from %s where owner_id = %L', t.tbl, p_tenant),
                             format('Data API: the tenant reads its rows of %s', t.tbl));
      return next throws_ok(v_insert, '42501',
                            format('new row violates row-level security policy "Tenants add rows through the memory service only" for table "%s"', t.name),
                            format('Data API: inserting into %s is refused', t.tbl));
      if t.can_update then
        return next throws_ok(v_update, '42501',
                              format('new row violates row-level security policy "Tenants change rows through the memory service only" for table "%s"', t.name),
                              format('Data API: updating its rows of %s is refused', t.tbl));
      else
        return next skip(format('%s: authenticated may not update it', t.tbl));
      end if;
      if t.can_delete then
        execute format('with d as (delete from %s where owner_id = %L returning 1) select count(*) from d', t.tbl, p_tenant) into v_deleted;
        return next is(v_deleted, 0::bigint, format('Data API: deleting its rows of %s deletes none', t.tbl));
      else
        return next skip(format('%s: authenticated may not delete from it', t.tbl));
      end if;
    else
      perform tests.authenticate_as(p_tenant);
      return next lives_ok(v_insert, format('the service inserts into %s', t.tbl));
      if t.can_update then
        return next lives_ok(v_update, format('the service updates the tenant''s rows of %s', t.tbl));
      else
        return next skip(format('%s: authenticated may not update it', t.tbl));
      end if;
      if t.can_delete then
        execute format('with d as (delete from %s where owner_id = %L returning 1) select count(*) from d', t.tbl, p_tenant) into v_deleted;
        return next cmp_ok(v_deleted, '>', 0::bigint, format('the service deletes the tenant''s rows of %s', t.tbl));
      else
        return next skip(format('%s: authenticated may not delete from it', t.tbl));
      end if;
    end if;
    perform tests.clear_authentication();
  end loop;
end;
$$;
grant execute on all functions in schema tests to authenticated;

select plan(13 + 7 * (select count(*)::int from tests.tenant_writable_tables()));

-- Every write authenticated holds is kept to the service: an RLS table with, for each command it
-- may run, a restrictive policy for authenticated that requires the service's mark.
select is_empty(
  $$select w.tbl, cmd
      from tests.tenant_writable_tables() w
      join pg_catalog.pg_class c on c.oid = w.tbl
     cross join unnest(array['insert', 'update', 'delete']) cmd
     where (pg_catalog.has_table_privilege('authenticated', w.tbl, cmd)
            or (cmd <> 'delete' and pg_catalog.has_any_column_privilege('authenticated', w.tbl, cmd)))
       and not (c.relkind in ('r', 'p') and c.relrowsecurity
                and exists (select from pg_catalog.pg_policy p
                             where p.polrelid = w.tbl and not p.polpermissive
                               and p.polcmd in ('*', case cmd when 'insert' then 'a' when 'update' then 'w' else 'd' end)
                               and p.polroles && array[0, 'authenticated'::regrole::oid]
                               and coalesce(pg_catalog.pg_get_expr(p.polwithcheck, p.polrelid), pg_catalog.pg_get_expr(p.polqual, p.polrelid))
                                   = $e$(( SELECT current_setting('memory.via'::text, true) AS current_setting) = 'service'::text)$e$))$$,
  'each public table authenticated may write has RLS and a restrictive policy per write requiring memory.via = ''service'' (a new table: call memory_private.writes_through_the_service_only in its migration)');
select is_empty(
  $$select c.oid::regclass, r from pg_catalog.pg_class c cross join unnest(array['authenticated', 'anon']) r
     where c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'p')
       and pg_catalog.has_table_privilege(r, c.oid, 'truncate')$$,
  'authenticated and anon may truncate no public table (TRUNCATE is not subject to RLS)');
select is_empty(
  $$select c.oid::regclass from pg_catalog.pg_class c
     where c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'p', 'v', 'm', 'f')
       and (pg_catalog.has_table_privilege('anon', c.oid, 'insert, update, delete')
            or pg_catalog.has_any_column_privilege('anon', c.oid, 'insert, update'))$$,
  'anon may write no public table');
select cmp_ok((select count(*)::int from tests.tenant_writable_tables()), '>=', 15, 'the loops below see the tenant tables');

-- One row of tenant A in each writable table.
insert into public.devai_memories (id, owner_id, content, memory_type, namespace) values
  ('10da7a00-0000-4000-8000-0000000000a1', '10da7a00-0000-4000-8000-00000000000a', 'A: the build uses deno.', 'semantic', 'devai/project/p'),
  ('10da7a00-0000-4000-8000-0000000000a2', '10da7a00-0000-4000-8000-00000000000a', 'A: tests run on postgres.', 'semantic', 'devai/project/p');
insert into public.memory_sessions (owner_id, session_id, namespace) values ('10da7a00-0000-4000-8000-00000000000a', 's-10', 'devai/project/p');
insert into public.memory_events (owner_id, node, op, status) values ('10da7a00-0000-4000-8000-00000000000a', 'hotpath', 'create', 'ok');
insert into public.memory_entities (id, owner_id, canonical_name, entity_type)
  values ('10da7a00-0000-4000-8000-0000000000e1', '10da7a00-0000-4000-8000-00000000000a', 'deno', 'tool');
insert into public.memory_entity_links (owner_id, memory_id, entity_id, mention)
  values ('10da7a00-0000-4000-8000-00000000000a', '10da7a00-0000-4000-8000-0000000000a1', '10da7a00-0000-4000-8000-0000000000e1', 'deno');
insert into public.memory_relations (owner_id, from_id, to_id, strength)
  values ('10da7a00-0000-4000-8000-00000000000a', '10da7a00-0000-4000-8000-0000000000a1', '10da7a00-0000-4000-8000-0000000000a2', 0.5);
insert into public.memory_pair_checks (owner_id, kind, id_a, id_b, score, verdict)
  values ('10da7a00-0000-4000-8000-00000000000a', 'consolidation', '10da7a00-0000-4000-8000-0000000000a1', '10da7a00-0000-4000-8000-0000000000a2', 0.5, 'different');
insert into public.memory_proposals (owner_id, field, content, namespace, expires_at)
  values ('10da7a00-0000-4000-8000-00000000000a', 'city', 'Lisbon', 'devai/project/p', now() + interval '1 day');
insert into public.memory_contradictions (owner_id, memory_a, memory_b, detected_by)
  values ('10da7a00-0000-4000-8000-00000000000a', '10da7a00-0000-4000-8000-0000000000a1', '10da7a00-0000-4000-8000-0000000000a2', 'write');
insert into public.memory_consolidation_runs (id, owner_id, trigger)
  values ('10da7a00-0000-4000-8000-0000000000c1', '10da7a00-0000-4000-8000-00000000000a', 'api');
insert into public.memory_session_summaries (owner_id, session_id, summary) values ('10da7a00-0000-4000-8000-00000000000a', 's-10', 'A summary.');
insert into public.context_injections (owner_id, session_id, memory_id, tier, level, tokens)
  values ('10da7a00-0000-4000-8000-00000000000a', 's-10', '10da7a00-0000-4000-8000-0000000000a1', 'relevant', 'full', 12);
insert into public.context_prefetch (owner_id, session_id, signal_key, memory_ids, refs, confidence)
  values ('10da7a00-0000-4000-8000-00000000000a', 's-10', 'file:src/main.ts', array['10da7a00-0000-4000-8000-0000000000a1'::uuid], '[]', 0.5);
insert into public.supervisor_checkpoints (owner_id, thread_id, state, size_bytes) values ('10da7a00-0000-4000-8000-00000000000a', 't-10', '{}', 2);
insert into public.memory_agent_tokens (owner_id, agent, token_hash, token_prefix)
  values ('10da7a00-0000-4000-8000-00000000000a', 'claude', repeat('a', 64), 'dvm_aaaa');

select is_empty(
  $$select w.tbl from tests.tenant_writable_tables() w
     where (xpath('/row/n/text()', query_to_xml(format('select count(*) as n from %s where owner_id = %L', w.tbl,
                                                       '10da7a00-0000-4000-8000-00000000000a'), false, true, '')))[1]::text = '0'$$,
  'each writable table has a row of tenant A for the loops below (a new table: add one above)');

-- Through the Data API: reads, and no writes.
select * from tests.tenant_writes('10da7a00-0000-4000-8000-00000000000a', true);

-- Nor through the functions that write tenant rows, whether security definer (over RPC: refused
-- with a message naming the service) or invoker (RLS refuses its update).
select tests.as_data_api('10da7a00-0000-4000-8000-00000000000a');
select throws_ok($$select * from public.record_memory_usage('s-10', array['10da7a00-0000-4000-8000-0000000000a1'::uuid], '{}', array[1])$$,
  '42501', 'record_memory_usage is called by the memory service only', 'Data API: record_memory_usage is refused');
select throws_ok($$select public.finish_consolidation_run('10da7a00-0000-4000-8000-0000000000c1', 0, 0, '{"planted": true}')$$,
  '42501', 'finish_consolidation_run is called by the memory service only', 'Data API: finish_consolidation_run is refused');
select throws_ok($$select public.record_extract_part(gen_random_uuid(), 0, '\x00', array['\x00'::bytea], 0, pg_current_snapshot())$$,
  '42501', 'record_extract_part is called by the memory service only', 'Data API: record_extract_part is refused');
select throws_ok($$select * from public.reinforce_memories(array['10da7a00-0000-4000-8000-0000000000a1'::uuid])$$,
  '42501', 'new row violates row-level security policy "Tenants change rows through the memory service only" for table "devai_memories"',
  'Data API: reinforce_memories (security invoker) is refused');
select tests.clear_authentication();
select results_eq(
  $$select m.access_count, r.result, (select count(*) from public.memory_usage_sessions u where u.owner_id = r.owner_id)
      from public.devai_memories m, public.memory_consolidation_runs r
     where m.id = '10da7a00-0000-4000-8000-0000000000a1' and r.id = '10da7a00-0000-4000-8000-0000000000c1'$$,
  $$values (0, null::jsonb, 0::bigint)$$, 'the refused calls changed nothing');

-- The service's statements write.
select * from tests.tenant_writes('10da7a00-0000-4000-8000-00000000000a', false);
select tests.authenticate_as('10da7a00-0000-4000-8000-00000000000a');
select results_eq($$select recorded from public.record_memory_usage('s-10', array['10da7a00-0000-4000-8000-0000000000a1'::uuid], '{}', array[1])$$,
  $$values (1)$$, 'the service records usage');
select ok(public.finish_consolidation_run('10da7a00-0000-4000-8000-0000000000c1', 1, 2, '{}'), 'the service finishes a consolidation run');
select isnt_empty($$select * from public.reinforce_memories(array['10da7a00-0000-4000-8000-0000000000a2'::uuid])$$, 'the service reinforces a memory');

select * from finish();
rollback;
