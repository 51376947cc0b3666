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
--   * the three security definer functions that write tenant rows (record_memory_usage,
--     record_extract_part, finish_consolidation_run) raise 42501 when called as authenticated
--     without the marker. public.take_rate_limit_token is left open: it only spends the caller's
--     own tokens.
-- Through the Data API an insert, and an update of a row the tenant can see, now fails with 42501
-- (new row violates row-level security policy); a delete deletes nothing. docs/auth.md#data-api.

-- Raises 42501 when the caller is the role authenticated and the statement is not the memory
-- service's (no memory.via = 'service'): a tenant calling p_function over the Data API. Called
-- first by the security definer functions that write tenant rows (below); as their owner, so no
-- grant.
create or replace function memory_private.require_the_service(p_function text)
returns void
language plpgsql
stable
set search_path = ''
as $$
begin
  if current_setting('role', true) = 'authenticated'
     and current_setting('memory.via', true) is distinct from 'service' then
    raise exception '% is called by the memory service only', p_function
      using errcode = '42501',
            hint = 'Tenants write through the memory service''s HTTP API; the Data API (/rest/v1) is read-only for them.';
  end if;
end;
$$;
revoke all on function memory_private.require_the_service(text) from public, anon, authenticated, service_role;

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

-- 20261128921000's function, first refusing a call that is not the service's (the header).
create or replace function public.record_memory_usage(p_session_id text, p_retrieved uuid[], p_cited uuid[], p_tokens integer[], p_now timestamp with time zone DEFAULT now())
returns TABLE(recorded integer, cited integer, unknown uuid[], cited_prefetched integer, predicted_session boolean, already_recorded uuid[], inactive uuid[])
language plpgsql
security definer
set search_path = ''
as $$
#variable_conflict use_column
declare
  v_owner        uuid := (select auth.uid());
  v_step         double precision := public.memory_setting('citation_reinforce_step')::double precision;
  v_base         double precision := public.memory_setting('decay_base')::double precision;
  v_known        uuid[];
  v_inactive     uuid[];
  v_new          uuid[];
  v_newly_cited  uuid[];
  v_tokens       bigint;
  v_cited_tokens bigint;
  v_hits         integer;
begin
  perform memory_private.require_the_service('record_memory_usage');
  -- Security definer: RLS does not apply here, so every read and write below names the tenant.
  if v_owner is null then
    raise exception 'record_memory_usage reports for a tenant: no tenant in the request''s claims' using errcode = '42501';
  end if;
  -- A report dated ahead would keep its session records from devai-context-prune.
  if p_now is null or p_now > now() then
    raise exception 'p_now must be a time no later than now(), got %', p_now using errcode = '22023';
  end if;
  if coalesce(cardinality(p_retrieved), 0) <> coalesce(cardinality(p_tokens), 0) then
    raise exception 'p_tokens must have one count per retrieved id' using errcode = '22023';
  end if;
  -- The caller's memories among the reported ids, read by id: the active ones are counted,
  -- the corrected and forgotten ones (what lock_retrieved_memories leaves out too) are not.
  select coalesce(array_agg(r.id order by r.id) filter (where m.active), '{}'),
         coalesce(array_agg(r.id order by r.id) filter (where not m.active), '{}')
    into v_known, v_inactive
    from (select distinct x as id from unnest(coalesce(p_retrieved, '{}'::uuid[])) x) r
    cross join lateral (select m.is_valid and m.state = 'active' as active
                          from public.devai_memories m where m.id = r.id and m.owner_id = v_owner offset 0) m;

  -- The session's record decides what moves: a new record counts the memory; an existing one
  -- changes only from retrieved to cited (the upsert's WHERE), and returns nothing otherwise.
  -- Concurrent reports of one session serialize on these rows, so each change is made once.
  with r as (
    select distinct on (t.id) t.id, greatest(coalesce(t.tokens, 0), 0) as tokens
      from unnest(coalesce(p_retrieved, '{}'::uuid[]), coalesce(p_tokens, '{}'::integer[])) as t(id, tokens)
     where t.id = any (v_known)
     order by t.id
  ), w as (
    insert into public.memory_usage_sessions as s (owner_id, session_id, memory_id, cited, tokens, reported_at)
    select v_owner, p_session_id, r.id, r.id = any (coalesce(p_cited, '{}'::uuid[])), r.tokens, p_now
      from r
    on conflict (owner_id, session_id, memory_id) do update
       set cited = true
     where excluded.cited and not s.cited
    returning s.memory_id, s.cited, s.tokens, s.xmax = 0 as inserted
  )
  select coalesce(array_agg(w.memory_id order by w.memory_id) filter (where w.inserted), '{}'),
         coalesce(array_agg(w.memory_id order by w.memory_id) filter (where w.cited), '{}'),
         coalesce(sum(w.tokens) filter (where w.inserted), 0),
         coalesce(sum(w.tokens) filter (where w.cited), 0)
    into v_new, v_newly_cited, v_tokens, v_cited_tokens
    from w;

  -- Counters: a new record is a retrieval and a citation or an ignore; a record turned cited
  -- moves its ignore to the citations (the counts still add up).
  insert into public.memory_usage as u
    (memory_id, owner_id, retrieval_count, citation_count, ignore_count, last_reported_at, last_cited_at)
  select k, v_owner, 1, case when k = any (v_newly_cited) then 1 else 0 end,
         case when k = any (v_newly_cited) then 0 else 1 end, p_now,
         case when k = any (v_newly_cited) then p_now end
    from unnest(v_new) k
  on conflict (memory_id) do update
     set retrieval_count = u.retrieval_count + 1,
         citation_count = u.citation_count + excluded.citation_count,
         ignore_count = u.ignore_count + excluded.ignore_count,
         last_reported_at = greatest(u.last_reported_at, excluded.last_reported_at),
         last_cited_at = greatest(u.last_cited_at, excluded.last_cited_at);
  update public.memory_usage u
     set citation_count = u.citation_count + 1, ignore_count = u.ignore_count - 1,
         last_reported_at = greatest(u.last_reported_at, p_now), last_cited_at = greatest(u.last_cited_at, p_now)
   where u.memory_id = any (v_newly_cited) and not (u.memory_id = any (v_new)) and u.owner_id = v_owner;

  with target as (
    select l.id,
           least(1.0::double precision,
             case when l.priority = 'highest' or l.pinned then l.strength
                  else public.memory_decayed_strength(l.base_strength, l.last_accessed_at, p_now, v_base) + v_step
             end) as reinforced
      from public.lock_retrieved_memories(
             jsonb_build_array(jsonb_build_object('at', p_now, 'ids', to_jsonb(v_newly_cited)))) l
  )
  update public.devai_memories m
     set strength = t.reinforced, base_strength = t.reinforced,
         last_accessed_at = greatest(m.last_accessed_at, p_now)
    from target t
   where m.id = t.id and m.owner_id = v_owner;

  predicted_session := exists (select from public.context_prefetch p where p.owner_id = v_owner and p.session_id = p_session_id);
  select count(distinct k)::int into v_hits
    from unnest(v_newly_cited) k
   where predicted_session
     and exists (select from public.context_prefetch p
                  where p.owner_id = v_owner and p.session_id = p_session_id and k = any (p.memory_ids));

  -- The tenant's totals, when the report counted something. Added by an UPDATE: a row proposed
  -- with a citation and no retrieval (a record turned cited) would fail the totals' checks.
  if cardinality(v_new) + cardinality(v_newly_cited) > 0 then
    insert into public.memory_usage_totals (owner_id, updated_at) values (v_owner, p_now)
    on conflict (owner_id) do nothing;
    update public.memory_usage_totals t
       set reports = t.reports + 1,
           retrieved = t.retrieved + cardinality(v_new),
           cited = t.cited + cardinality(v_newly_cited),
           cited_in_predicted_sessions = t.cited_in_predicted_sessions
                                         + case when predicted_session then cardinality(v_newly_cited) else 0 end,
           cited_prefetched = t.cited_prefetched + v_hits,
           injected_tokens = t.injected_tokens + v_tokens,
           cited_tokens = t.cited_tokens + v_cited_tokens,
           updated_at = p_now
     where t.owner_id = v_owner;
  end if;

  recorded := cardinality(v_new);
  cited := cardinality(v_newly_cited);
  unknown := coalesce((select array_agg(distinct x order by x) from unnest(coalesce(p_retrieved, '{}'::uuid[])) x
                        where not (x = any (v_known)) and not (x = any (v_inactive))), '{}');
  cited_prefetched := v_hits;
  already_recorded := coalesce((select array_agg(k order by k) from unnest(v_known) k where not (k = any (v_new))), '{}');
  inactive := v_inactive;
  return next;
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

