-- Tenants write through the memory service only; the Data API (PostgREST, /rest/v1) reads.
--
-- Tenants are Supabase Auth users, so besides the service's HTTP API (the edge functions: input
-- validation, the secret redactor, rate limits, per-tenant fairness) a tenant reaches every table in
-- public directly with its own JWT and the publishable key; PostgREST runs each request as role
-- authenticated with the tenant's claims. The service itself writes as authenticated under RLS
-- (defence in depth), so that role holds INSERT/UPDATE grants and write policies on the tenant
-- tables, and RLS alone kept a tenant to its own rows but let it write them directly: past the rate
-- limits (unbounded inserts, each paying the triggers and the HNSW index: a stall for every other
-- tenant), past validation and the redactor, with bookkeeping values of its choosing (timestamps in
-- the future that escape the prunes, counters). The security definer functions that authenticated
-- may execute were callable over RPC (/rest/v1/rpc/<name>) the same way.
--
-- The service marks every statement it runs as a tenant with the setting memory.via = 'service',
-- local to the transaction (supabase/functions/_shared/db.ts tenantItem, the one place a statement
-- becomes the tenant's). PostgREST sets only role, request.jwt.claims, request.method/path/headers
-- and its own configured settings, and no function a tenant may execute sets a setting from the
-- caller's input, so a tenant cannot set the marker. Here:
--   * every public table the role authenticated may insert into, update or delete from gets three
--     RESTRICTIVE policies, for INSERT, UPDATE and DELETE, that require the marker
--     (memory_private.writes_through_the_service_only; the condition is wrapped in a select, an
--     initplan evaluated once per statement). Reads are unchanged: a tenant still reads its own
--     rows through the Data API. A table added later calls the same function in its migration;
--     supabase/tests/database/10_data_api_writes_refused fails for a writable table without them.
--   * the three security definer functions that write tenant rows raise 42501 when called as
--     authenticated without the marker: record_extract_part and finish_consolidation_run here,
--     record_memory_usage since 20261128921000 (memory_private.require_the_service is there). public.take_rate_limit_token is left open: it only spends the caller's
--     own tokens.
-- Through the Data API an insert, and an update of a row the tenant can see, now fails with 42501
-- (new row violates row-level security policy); a delete deletes nothing. docs/auth.md#data-api.

-- memory_private.require_the_service(p_function): 20261128921000, where record_memory_usage first
-- called it.

-- Gives p_table the three restrictive policies that keep the role authenticated's writes to the
-- memory service (the header): INSERT checks the new row, UPDATE the new version of a row the
-- tenant can see (so the update fails rather than matching nothing), DELETE the rows it would
-- delete. Idempotent. Called below for every table authenticated may write today, and by the
-- migration of any table that grants authenticated a write later.
create or replace function memory_private.writes_through_the_service_only(p_table regclass)
returns void
language plpgsql
set search_path = ''
as $$
declare
  v_cmd text;
  v_name text;
begin
  foreach v_cmd in array array['insert', 'update', 'delete'] loop
    v_name := format('Tenants %s through the memory service only',
                     case v_cmd when 'insert' then 'add rows' when 'update' then 'change rows' else 'delete rows' end);
    if not exists (select from pg_catalog.pg_policy p where p.polrelid = p_table and p.polname = v_name) then
      execute format('create policy %I on %s as restrictive for %s to authenticated %s ((select current_setting(%L, true)) = %L)',
                     v_name, p_table, v_cmd, case v_cmd when 'delete' then 'using' else 'with check' end,
                     'memory.via', 'service');
    end if;
  end loop;
end;
$$;
revoke all on function memory_private.writes_through_the_service_only(regclass) from public, anon, authenticated, service_role;

-- Every public table authenticated may write today (a table grant, or a column grant for INSERT
-- or UPDATE).
do $$
declare
  v_table regclass;
begin
  for v_table in
    select c.oid::regclass
      from pg_catalog.pg_class c
      join pg_catalog.pg_namespace n on n.oid = c.relnamespace
     where n.nspname = 'public' and c.relkind in ('r', 'p')
       and (pg_catalog.has_table_privilege('authenticated', c.oid, 'insert, update, delete')
            or pg_catalog.has_any_column_privilege('authenticated', c.oid, 'insert, update'))
     order by c.relname
  loop
    perform memory_private.writes_through_the_service_only(v_table);
  end loop;
end;
$$;

-- 20261128830000's function, first refusing a call that is not the service's (the header).
create or replace function public.record_extract_part(p_job uuid, p_start integer, p_start_digest bytea, p_digests bytea[], p_tail_messages integer, p_covered_as_of pg_snapshot, p_tries integer DEFAULT 1)
returns void
language plpgsql
security definer
set search_path = ''
as $$
declare
  v_owner uuid;
  v_kind text;
  v_key text;
  v_mine boolean;
  v_payload jsonb;
  v_session text;
  v_seen jsonb;
  v_prefix bytea;
  v_plain text;
  v_count integer := coalesce(cardinality(p_digests), 0);
begin
  perform memory_private.require_the_service('record_extract_part');
  select j.owner_id, j.kind, j.idempotency_key, j.xmin = pg_current_xact_id()::xid, j.payload
    into v_owner, v_kind, v_key, v_mine, v_payload
    from public.memory_jobs j where j.id = p_job;
  if v_owner is null or v_owner is distinct from auth.uid() or v_kind <> 'extract' or not v_mine then
    raise exception 'record_extract_part: job % is not an extract job this transaction queued', p_job
      using errcode = '42501';
  end if;
  -- Taken out of the payload once: an expression on v_payload in the marks' insert would read the
  -- whole payload again for every mark (450 ms for 2,000 marks of a 2 MB payload).
  v_session := v_payload ->> 'session_id';
  v_plain := format('session:%s:%s:%s', v_session, p_start + v_count, encode(p_digests[v_count], 'hex'));
  if v_count = 0 or p_start is distinct from (v_payload ->> 'offset')::integer
     or v_count is distinct from jsonb_array_length(v_payload -> 'messages')
     or p_tries is null or p_tries not between 1 and 3
     or (v_key is distinct from v_plain and (p_tries = 1 or v_key is distinct from v_plain || ':try' || p_tries))
     or p_covered_as_of is null or pg_snapshot_xmax(p_covered_as_of) > pg_current_xact_id() then
    raise exception 'record_extract_part: the part does not match job %''s key and payload', p_job
      using errcode = '22023';
  end if;
  v_seen := coalesce(v_payload -> 'context', '[]'::jsonb) || (v_payload -> 'messages');
  insert into public.memory_extract_parts (job_id, owner_id, session_id, start_position, start_digest, end_position,
                                           tail, payload_bytes, covered_as_of, tries)
  values (p_job, v_owner, v_session, p_start, p_start_digest, p_start + v_count,
          jsonb_path_query_array(v_seen, '$[$from to last]',
                                 jsonb_build_object('from', greatest(0, jsonb_array_length(v_seen) - p_tail_messages))),
          octet_length(v_payload::text), p_covered_as_of, p_tries);
  -- The marks' keys (the comment on memory_extract_marks): the same bytes memory-extract's
  -- markKey (session-parts.ts) hashes.
  v_prefix := convert_to(format('devai-mark|%s|%s|', v_owner, v_session), 'UTF8');
  insert into public.memory_extract_marks (job_id, position, key)
  select p_job, p_start + d.i::integer, substring(sha256(v_prefix || d.digest) from 1 for 16)
    from unnest(p_digests) with ordinality as d(digest, i);
end;
$$;

-- 20261124900000's function, first refusing a call that is not the service's (the header).
create or replace function public.finish_consolidation_run(p_run_id uuid, p_pairs integer, p_tokens integer, p_result jsonb)
returns boolean
language plpgsql
security definer
set search_path = ''
as $$
declare
  v_owner uuid := auth.uid();
begin
  perform memory_private.require_the_service('finish_consolidation_run');
  if v_owner is null then
    raise exception 'no tenant: request.jwt.claims has no sub' using errcode = '42501';
  end if;
  update public.memory_consolidation_runs
     set finished_at = coalesce(finished_at, now()),
         pairs_checked = pairs_checked + greatest(coalesce(p_pairs, 0), 0),
         tokens_used = tokens_used + greatest(coalesce(p_tokens, 0), 0),
         result = p_result
   where id = p_run_id and owner_id = v_owner;
  return found;
end;
$$;

