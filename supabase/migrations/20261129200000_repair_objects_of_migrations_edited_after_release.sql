-- Repairs a deployment upgraded from an older commit of main. Some migrations were edited after
-- they had landed on main (within the session that wrote them, before it ended), and
-- `supabase db push` never applies a migration twice: a database that applied the first text
-- kept it, and the upgrade left it with objects that differ from what a fresh install makes.
-- Measured by upgrading from every distinct migration state of main's history and diffing
-- pg_dump --schema-only against a fresh install (docs/upgrading.md#what-an-upgrade-repairs):
--
--   * 20261128921000 as first released had no memory_private.require_the_service, which
--     20261128990000 calls: after the upgrade POST memory-extract and memory/consolidate answered
--     500 ("function memory_private.require_the_service(unknown) does not exist"), and
--     record_memory_usage was still callable by a tenant through the Data API;
--   * 20261123000700 first took a whole row in memory_private.change_log_meta: later migrations
--     call the five-argument form, so correct and forget answered 500 after the upgrade;
--   * 20261128925000 (the agent-token cap trigger's early return for another user's row),
--     20261128960000 (enqueue_job's retry, the fair key's start), 20261125760200 (a second
--     memory_cited_files, EXECUTE left to PUBLIC, so to anon), 20261125760300 (the exact-scan limit
--     by index), 20261128600000 (keyword_postings' filters), 20261128620000 (job_keep_days >= 1,
--     extract jobs outside the finished-jobs index), 20261127100000 / 20261127200000,
--     20261128000000, 20261128400000, 20261124800100 (the bulk triggers' role check) and
--     20261124700200 (memory_feedback's EXECUTE left to anon): their final text, restated.
--
-- Every definition below is the one a fresh install has (copied from supabase/schema.sql), so on a
-- fresh install this migration changes nothing; tests/upgrade.test.ts checks both.
-- Deployments made before 20261123000700 (main before 2026-11-23 14:20 UTC) are not covered:
-- docs/upgrading.md says what to do for them.

-- Stale overloads and a stale helper that only an upgraded database has (nothing calls them once
-- the functions below are restated).
drop function if exists memory_private.change_log_meta(public.devai_memories, text);
drop function if exists public.memory_cited_files(uuid, uuid, jsonb);
drop function if exists public.memory_exact_scan_limit(integer, uuid);
drop function if exists memory_search.keyword_postings(uuid, text[], tsquery[], integer, integer, timestamptz);
-- 20261127200000's first text gave vector_index_plan's argument a default, which create or replace
-- cannot take away: dropped and made again below (enqueue_vector_index_jobs, its only caller, is
-- plpgsql and finds it at run time).
drop function if exists memory_private.vector_index_plan(integer);

-- memory_private.require_the_service: 20261128921000 as released first had no such function; 20261128990000 calls it
create or replace function memory_private.require_the_service(p_function text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO ''
    AS $$
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
REVOKE ALL ON FUNCTION memory_private.require_the_service(p_function text) FROM PUBLIC;

create or replace function public.record_memory_usage(p_session_id text, p_retrieved uuid[], p_cited uuid[], p_tokens integer[], p_now timestamp with time zone DEFAULT now()) RETURNS TABLE(recorded integer, cited integer, unknown uuid[], cited_prefetched integer, predicted_session boolean, already_recorded uuid[], inactive uuid[])
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO ''
    AS $$
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
revoke all on function public.record_memory_usage(text, uuid[], uuid[], integer[], timestamp with time zone) from public, anon, authenticated, service_role;
REVOKE ALL ON FUNCTION public.record_memory_usage(p_session_id text, p_retrieved uuid[], p_cited uuid[], p_tokens integer[], p_now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION public.record_memory_usage(p_session_id text, p_retrieved uuid[], p_cited uuid[], p_tokens integer[], p_now timestamp with time zone) TO service_role;
GRANT ALL ON FUNCTION public.record_memory_usage(p_session_id text, p_retrieved uuid[], p_cited uuid[], p_tokens integer[], p_now timestamp with time zone) TO authenticated;

create or replace function memory_private.enforce_agent_token_limit() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO ''
    AS $$
declare
  v_active bigint;
begin
  -- A row that is revoked or expired already (service_role restoring a list) takes no place.
  if new.revoked_at is not null or new.expires_at <= pg_catalog.now() then
    return new;
  end if;
  -- A tenant's row for another user: the insert policy refuses it after this trigger (RLS checks
  -- come after BEFORE triggers), so neither count nor lock nor delete that user's tokens.
  if pg_catalog.current_setting('role', true) = 'authenticated'
     and new.owner_id is distinct from (select auth.uid()) then
    return new;
  end if;
  perform pg_catalog.pg_advisory_xact_lock(
    pg_catalog.hashtextextended('public.memory_agent_tokens ' || new.owner_id::text, 0));
  select count(*) into v_active
    from public.memory_agent_tokens t
   where t.owner_id = new.owner_id
     and t.revoked_at is null
     and (t.expires_at is null or t.expires_at > pg_catalog.now());
  if v_active >= public.memory_setting('agent_tokens_max_active') then
    raise exception 'the user already holds % active agent tokens, the most allowed (agent_tokens_max_active)', v_active
      using errcode = 'check_violation', constraint = 'memory_agent_tokens_active_limit',
            hint = 'revoke one (POST memory/agent-tokens/{id}/revoke) before issuing another';
  end if;
  -- The user's stopped tokens past the 50 newest, in the list's order (memory_agent_tokens_owner).
  delete from public.memory_agent_tokens d
   where d.id in (
     select t.id from public.memory_agent_tokens t
      where t.owner_id = new.owner_id
        and (t.revoked_at is not null or t.expires_at <= pg_catalog.now())
      order by t.created_at desc, t.id
      offset 50);
  return new;
end;
$$;
revoke all on function memory_private.enforce_agent_token_limit() from public, anon, authenticated, service_role;
REVOKE ALL ON FUNCTION memory_private.enforce_agent_token_limit() FROM PUBLIC;

create or replace function memory_private.assign_job_fair_key() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO ''
    AS $$
declare
  v_last timestamptz;
  v_head timestamptz;
begin
  select j.fair_key into v_last
    from public.memory_jobs j
   where j.owner_id = new.owner_id and j.status = 'queued' and j.run_after <= now()
   order by j.fair_key desc
   limit 1;
  if new.run_after > now() then
    v_head := new.run_after;
  else
    -- memory_jobs_fair_claimable, as the claim reads it: jobs backing off are skipped in the index.
    select j.fair_key into v_head
      from public.memory_jobs j
     where j.status = 'queued' and j.run_after <= now()
     order by j.fair_key
     limit 1;
    v_head := least(now(), coalesce(v_head, now()));
  end if;
  new.fair_key := greatest(v_head,
                           v_last + make_interval(secs => public.memory_setting('job_fair_step_seconds')::double precision));
  return new;
end;
$$;
revoke all on function memory_private.assign_job_fair_key() from public, anon, authenticated, service_role;
REVOKE ALL ON FUNCTION memory_private.assign_job_fair_key() FROM PUBLIC;

create or replace function memory_private.enqueue_job(p_owner uuid, p_kind text, p_idempotency_key text, p_payload jsonb DEFAULT '{}'::jsonb, p_max_attempts integer DEFAULT 5) RETURNS TABLE(id uuid, status text, deduplicated boolean)
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $$
#variable_conflict use_column
declare
  v_tenant uuid := (select auth.uid());
begin
  if p_owner is null then
    raise exception 'p_owner required' using errcode = '22023';
  end if;
  if v_tenant is not null and p_owner <> v_tenant then
    raise exception 'a tenant queues its own jobs only' using errcode = '42501';
  end if;
  if v_tenant is not null and p_kind = 'vector_index' then
    raise exception 'vector_index jobs are queued by devai-vector-indexes only' using errcode = '42501';
  end if;
  -- The job that holds the key can be deleted (an operator clearing old jobs) between the insert
  -- that met it and the read: then the insert is tried again, and queues the job.
  for attempt in 1 .. 3 loop
    return query
    insert into public.memory_jobs as j (owner_id, kind, payload, idempotency_key, max_attempts)
    values (p_owner, p_kind, coalesce(p_payload, '{}'), p_idempotency_key, coalesce(p_max_attempts, 5))
    on conflict (owner_id, kind, idempotency_key) do nothing
    returning j.id, j.status, false;
    if found then
      return;
    end if;
    return query
    select j.id, j.status, true
      from public.memory_jobs j
     where j.owner_id = p_owner and j.kind = p_kind and j.idempotency_key = p_idempotency_key;
    if found then
      return;
    end if;
  end loop;
end;
$$;
revoke all on function memory_private.enqueue_job(uuid, text, text, jsonb, integer) from public, anon, authenticated, service_role;
REVOKE ALL ON FUNCTION memory_private.enqueue_job(p_owner uuid, p_kind text, p_idempotency_key text, p_payload jsonb, p_max_attempts integer) FROM PUBLIC;
GRANT ALL ON FUNCTION memory_private.enqueue_job(p_owner uuid, p_kind text, p_idempotency_key text, p_payload jsonb, p_max_attempts integer) TO service_role;

create or replace function memory_private.change_log_meta(p_memory_type text, p_namespace text, p_importance smallint, p_metadata jsonb, p_history_event text) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    SET search_path TO ''
    AS $$
  select jsonb_build_object('memory_type', p_memory_type, 'namespace', p_namespace,
                            'importance', p_importance, 'category', p_metadata ->> 'category',
                            'history_event', p_history_event)
$$;

SET default_tablespace = '';

SET default_table_access_method = heap;
revoke all on function memory_private.change_log_meta(text, text, smallint, jsonb, text) from public, anon, authenticated, service_role;
REVOKE ALL ON FUNCTION memory_private.change_log_meta(p_memory_type text, p_namespace text, p_importance smallint, p_metadata jsonb, p_history_event text) FROM PUBLIC;
GRANT ALL ON FUNCTION memory_private.change_log_meta(p_memory_type text, p_namespace text, p_importance smallint, p_metadata jsonb, p_history_event text) TO service_role;

create or replace function memory_private.log_changes_in_bulk(p_ids uuid[], p_change text, p_history_event text) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $$
declare
  v_thread text := coalesce(nullif(current_setting('memory.thread_id', true), ''), 'default');
  v_logged bigint;
begin
  if coalesce(cardinality(p_ids), 0) = 0 then
    return 0;
  end if;
  with changed as (
    select m.id, m.owner_id, m.content, m.memory_type, m.namespace, m.importance, m.metadata
      from public.devai_memories m where m.id = any (p_ids)
  ),
  per_owner as (
    select c.owner_id, count(*) as n from changed c group by c.owner_id
  ),
  bumped as (
    insert into public.memory_thread_revisions as r (owner_id, thread_id, revision)
    select p.owner_id, v_thread, p.n from per_owner p order by p.owner_id
    on conflict (owner_id, thread_id)
    do update set revision = r.revision + excluded.revision, updated_at = now()
    returning r.owner_id, r.revision
  ),
  logged as (
    insert into public.memory_change_log (owner_id, thread_id, revision, memory_id, event, summary, meta)
    select c.owner_id, v_thread,
           b.revision - p.n + row_number() over (partition by c.owner_id order by c.id),
           c.id, p_change, left(c.content, 200),
           memory_private.change_log_meta(c.memory_type, c.namespace, c.importance, c.metadata, p_history_event)
      from changed c
      join per_owner p on p.owner_id = c.owner_id
      join bumped b on b.owner_id = c.owner_id
    returning 1
  )
  select count(*) into v_logged from logged;
  return v_logged;
end;
$$;
revoke all on function memory_private.log_changes_in_bulk(uuid[], text, text) from public, anon, authenticated, service_role;
REVOKE ALL ON FUNCTION memory_private.log_changes_in_bulk(p_ids uuid[], p_change text, p_history_event text) FROM PUBLIC;
GRANT ALL ON FUNCTION memory_private.log_changes_in_bulk(p_ids uuid[], p_change text, p_history_event text) TO service_role;

create or replace function memory_private.refresh_keyword_common_terms() RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO ''
    AS $$
declare
  v_min     double precision;
  v_rows    double precision;
  v_added   integer;
  v_removed integer;
  v_changed integer;
begin
  v_min := public.memory_setting('keyword_common_estimate_factor') * public.memory_setting('keyword_df_cap');
  -- The memories the index holds, which the frequencies are shares of: counted (not when the
  -- factor is 0: the table is emptied), because the index's pg_class.reltuples is the whole
  -- table's after a VACUUM (a GIN index reports the heap's live rows, partial or not).
  if v_min > 0 then
    select count(*) into v_rows
      from public.devai_memories m
     where m.is_valid and m.state = 'active' and m.source is distinct from 'conversation';
  end if;
  with estimated as (
    select e.term, (e.freq * v_rows)::integer as estimated_rows
      from pg_catalog.pg_stats s
     cross join lateral unnest(s.most_common_elems::text::text[], s.most_common_elem_freqs) as e(term, freq)
     where s.schemaname = 'public' and s.tablename = 'devai_memories_fts_scoped'
       and v_min > 0 and v_rows > 0
       and e.term is not null and e.freq * v_rows >= v_min
  ),
  removed as (
    delete from memory_private.keyword_common_terms t
     where not exists (select from estimated e where e.term = t.term)
    returning 1
  ),
  upserted as (
    insert into memory_private.keyword_common_terms as t (term, estimated_rows)
    select e.term, e.estimated_rows from estimated e
    on conflict (term) do update set estimated_rows = excluded.estimated_rows
     where t.estimated_rows is distinct from excluded.estimated_rows
    returning (xmax = 0) as added
  )
  select (select count(*) from removed), count(*) filter (where u.added), count(*) filter (where not u.added)
    into v_removed, v_added, v_changed
    from upserted u;
  return jsonb_build_object('terms', (select count(*) from memory_private.keyword_common_terms),
                            'added', v_added, 'removed', v_removed, 'changed', v_changed);
end;
$$;
COMMENT ON FUNCTION memory_private.refresh_keyword_common_terms() IS 'Copies the keyword terms the statistics estimate as common (keyword_common_estimate_factor x keyword_df_cap memories of a scope) into memory_private.keyword_common_terms; pg_cron every 15 minutes (devai-keyword-statistics).';
revoke all on function memory_private.refresh_keyword_common_terms() from public, anon, authenticated, service_role;
REVOKE ALL ON FUNCTION memory_private.refresh_keyword_common_terms() FROM PUBLIC;
GRANT ALL ON FUNCTION memory_private.refresh_keyword_common_terms() TO service_role;

create or replace function memory_private.vector_index_plan(p_min_rows integer) RETURNS TABLE(owner_id uuid, action text)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO ''
    AS $_$
declare
  -- The threshold: the caller's (the queueing reads the setting; a job carries what it was queued with).
  v_min integer := p_min_rows;
begin
  if coalesce(v_min, 0) <= 0 then
    return;
  end if;
  return query
  with sized as (
    -- What the shared HNSW index holds, per tenant (its predicate).
    select m.owner_id, count(*) as n
      from public.devai_memories m
     where m.is_valid and m.state = 'active' and m.source is distinct from 'conversation'
     group by m.owner_id
  ),
  wanted as (
    select z.owner_id, z.n, z.n >= v_min and z.n <= (select sum(a.n) from sized a) / 2 as qualifies
      from sized z
  ),
  indexed as (
    -- The tenants' own indexes, their state and their tenants (from the names).
    select i.indisvalid as valid,
           exists (select from pg_catalog.pg_stat_progress_create_index p where p.index_relid = c.oid) as building,
           regexp_replace(substr(c.relname, length('devai_memories_hnsw_owner_') + 1),
                          '^(.{8})(.{4})(.{4})(.{4})(.{12})$', '\1-\2-\3-\4-\5')::uuid as owner_id
      from pg_catalog.pg_class c
      join pg_catalog.pg_index i on i.indexrelid = c.oid
     where i.indrelid = 'public.devai_memories'::regclass
       and c.relname ~ '^devai_memories_hnsw_owner_[0-9a-f]{32}$'
  )
  select w.owner_id, 'build'::text
    from wanted w
   where w.qualifies
     and not exists (select from indexed x where x.owner_id = w.owner_id and x.valid)
  union all
  -- Under half the threshold; or invalid (a failed build), not being built and not to be rebuilt.
  select x.owner_id, 'drop'::text
    from indexed x
    left join wanted w on w.owner_id = x.owner_id
   where coalesce(w.n, 0) < v_min / 2
      or (not x.valid and not x.building and not coalesce(w.qualifies, false));
end;
$_$;
revoke all on function memory_private.vector_index_plan(integer) from public, anon, authenticated, service_role;
REVOKE ALL ON FUNCTION memory_private.vector_index_plan(p_min_rows integer) FROM PUBLIC;
GRANT ALL ON FUNCTION memory_private.vector_index_plan(p_min_rows integer) TO service_role;

create or replace function memory_private.enqueue_vector_index_jobs(p_now timestamp with time zone DEFAULT now(), p_min_rows integer DEFAULT NULL::integer) RETURNS jsonb
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO ''
    AS $$
declare
  -- p_min_rows: the threshold for this call (tests, the bench); null reads the setting.
  v_min   integer := coalesce(p_min_rows, public.memory_setting('dedicated_vector_index_min_rows')::integer);
  v_day   text := to_char(p_now at time zone 'UTC', 'YYYY-MM-DD');
  v_build integer;
  v_drop  integer;
begin
  if coalesce(v_min, 0) <= 0 then
    return jsonb_build_object('build', 0, 'drop', 0, 'off', true);
  end if;
  -- The threshold goes with the job: the worker checks the plan again with it.
  with queued as (
    insert into public.memory_jobs (owner_id, kind, payload, idempotency_key)
    select p.owner_id, 'vector_index', jsonb_build_object('action', p.action, 'min_rows', v_min),
           'vector_index:' || p.action || ':' || v_day
      from memory_private.vector_index_plan(v_min) p
    on conflict (owner_id, kind, idempotency_key) do nothing
    returning payload ->> 'action' as action
  )
  select count(*) filter (where q.action = 'build'), count(*) filter (where q.action = 'drop')
    into v_build, v_drop
    from queued q;
  return jsonb_build_object('build', v_build, 'drop', v_drop);
end;
$$;
COMMENT ON FUNCTION memory_private.enqueue_vector_index_jobs(p_now timestamp with time zone, p_min_rows integer) IS 'Queues a vector_index job for each row of memory_private.vector_index_plan (a build for each tenant with dedicated_vector_index_min_rows active memories or more, at most half of them all, without a valid index of its own; a drop for each tenant index whose tenant has fewer than half of that, or that a failed build left invalid); one per tenant, action and day. pg_cron hourly (devai-vector-indexes).';
revoke all on function memory_private.enqueue_vector_index_jobs(timestamp with time zone, integer) from public, anon, authenticated, service_role;
REVOKE ALL ON FUNCTION memory_private.enqueue_vector_index_jobs(p_now timestamp with time zone, p_min_rows integer) FROM PUBLIC;
GRANT ALL ON FUNCTION memory_private.enqueue_vector_index_jobs(p_now timestamp with time zone, p_min_rows integer) TO service_role;

create or replace function public.record_retrievals(p_items jsonb) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $$
declare
  v_count      integer := 0;
  v_decay_base double precision;
  v_step       double precision;
  v_log_weight double precision;
  v_log_scale  double precision;
  v_memory     record;
  v_at         timestamptz;
  v_strength   double precision;
  v_base       double precision;
  v_accesses   integer;
  v_last       timestamptz;
  -- what the UPDATE writes, one element per memory
  v_ids        uuid[] := '{}';
  v_new_count  integer[] := '{}';
  v_new_last   timestamptz[] := '{}';
  v_new_str    double precision[] := '{}';
  v_items      jsonb;
begin
  if jsonb_typeof(p_items) is distinct from 'array' then
    raise exception 'record_retrievals takes a jsonb array of searches' using errcode = '22023';
  end if;
  v_decay_base := public.memory_setting('decay_base')::double precision;
  v_step := public.memory_setting('reinforce_step')::double precision;
  v_log_weight := public.memory_setting('reinforce_log_weight')::double precision;
  v_log_scale := public.memory_setting('reinforce_log_scale')::double precision;

  -- Each search's event first, under the search's id when it has one; then the searches to apply:
  -- those without an id, and those whose event is new (one already there was written by this
  -- batch's earlier try, whose commit's reply was lost).
  with written as (
    insert into public.memory_events (id, owner_id, thread_id, node, op, status, category, sim, meta, ts)
    select coalesce((i.v ->> 'id')::uuid, gen_random_uuid()), auth.uid(), i.v ->> 'thread_id', 'context',
           'search', 'ok', i.v ->> 'category', (i.v ->> 'sim')::real, coalesce(i.v -> 'meta', '{}'),
           coalesce((i.v ->> 'at')::timestamptz, now())
      from jsonb_array_elements(p_items) with ordinality as i(v, ord)
     where i.v ? 'meta' or jsonb_typeof(i.v -> 'id') = 'string'
     order by i.ord
    on conflict (id) do nothing
    returning id
  )
  select coalesce(jsonb_agg(i.v order by i.ord), '[]') into v_items
    from (select j.v, j.ord, row_number() over (partition by (j.v ->> 'id')::uuid order by j.ord) as nth
            from jsonb_array_elements(p_items) with ordinality as j(v, ord)) i
   where i.v ->> 'id' is null
      or (i.nth = 1 and (i.v ->> 'id')::uuid in (select w.id from written w)); -- a repeated id: once

  -- Each memory once, with the instants of the searches that used it in the batch's order, read
  -- and locked in one statement, each by its id (public.lock_retrieved_memories).
  for v_memory in select * from public.lock_retrieved_memories(v_items)
  loop
    v_strength := v_memory.strength;
    v_base := v_memory.base_strength;
    v_accesses := v_memory.access_count;
    v_last := v_memory.last_accessed_at;
    -- One access per search that used the memory, in turn.
    foreach v_at in array v_memory.ats loop
      v_strength := public.memory_reinforced_strength(v_strength, v_base, v_accesses, v_last, v_at,
                                                      v_memory.priority = 'highest' or v_memory.pinned,
                                                      v_decay_base, v_step, v_log_weight, v_log_scale);
      v_base := v_strength;
      v_accesses := v_accesses + 1;
      v_last := greatest(v_last, v_at);
      v_count := v_count + 1;
    end loop;
    v_ids := v_ids || v_memory.id;
    v_new_count := v_new_count || v_accesses;
    v_new_last := v_new_last || v_last;
    v_new_str := v_new_str || v_strength;
  end loop;

  -- One row version per memory, all in one statement (each row is locked above), each found by its
  -- id (memory_search.reinforcement_rows).
  update public.devai_memories m
     set access_count = u.access_count, last_accessed_at = u.last_accessed_at,
         strength = u.strength, base_strength = u.strength
    from memory_search.reinforcement_rows(v_ids, v_new_count, v_new_last, v_new_str) u
   where m.id = u.id;

  return v_count;
end;
$$;
revoke all on function public.record_retrievals(jsonb) from public, anon, authenticated, service_role;
REVOKE ALL ON FUNCTION public.record_retrievals(p_items jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION public.record_retrievals(p_items jsonb) TO authenticated;
GRANT ALL ON FUNCTION public.record_retrievals(p_items jsonb) TO service_role;

create or replace function public.reinforce_memories(ids uuid[], p_now timestamp with time zone DEFAULT now()) RETURNS TABLE(id uuid, strength double precision, access_count integer, last_accessed_at timestamp with time zone)
    LANGUAGE plpgsql ROWS 20
    SET search_path TO ''
    AS $$
#variable_conflict use_column
begin
  return query
  with cfg as materialized ( -- once (inlined, the settings were read again for every memory)
    select public.memory_setting('decay_base')::double precision as decay_base,
           public.memory_setting('reinforce_step')::double precision as step,
           public.memory_setting('reinforce_log_weight')::double precision as log_weight,
           public.memory_setting('reinforce_log_scale')::double precision as log_scale
  ),
  target as (
    select l.id,
           public.memory_reinforced_strength(l.strength, l.base_strength, l.access_count, l.last_accessed_at,
                                             reinforce_memories.p_now, l.priority = 'highest' or l.pinned,
                                             cfg.decay_base, cfg.step, cfg.log_weight, cfg.log_scale) as reinforced
      from public.lock_retrieved_memories(jsonb_build_array(jsonb_build_object(
             'at', reinforce_memories.p_now, 'ids', coalesce(to_jsonb(reinforce_memories.ids), '[]'::jsonb)))) l
     cross join cfg
  )
  update public.devai_memories m
     set access_count = m.access_count + 1,
         last_accessed_at = greatest(m.last_accessed_at, reinforce_memories.p_now),
         strength = t.reinforced,
         base_strength = t.reinforced
    from target t
   where m.id = t.id
  returning m.id, m.strength, m.access_count, m.last_accessed_at;
end;
$$;
revoke all on function public.reinforce_memories(uuid[], timestamp with time zone) from public, anon, authenticated, service_role;
REVOKE ALL ON FUNCTION public.reinforce_memories(ids uuid[], p_now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION public.reinforce_memories(ids uuid[], p_now timestamp with time zone) TO authenticated;
GRANT ALL ON FUNCTION public.reinforce_memories(ids uuid[], p_now timestamp with time zone) TO service_role;

create or replace function public.memory_exact_scan_limit(p_match_count integer, p_index regclass DEFAULT to_regclass('public.devai_memories_embedding_hnsw'::text)) RETURNS integer
    LANGUAGE plpgsql STABLE
    SET search_path TO ''
    AS $$
begin
  return greatest(
    public.memory_setting('exact_scan_max_rows')::integer,
    floor(sqrt(public.memory_setting('exact_scan_cost_ratio') * greatest(p_match_count, 1)
               * coalesce((select greatest(c.reltuples, 0) from pg_catalog.pg_class c
                            where c.oid = p_index), 0)))::integer);
end;
$$;
revoke all on function public.memory_exact_scan_limit(integer, regclass) from public, anon, authenticated, service_role;
REVOKE ALL ON FUNCTION public.memory_exact_scan_limit(p_match_count integer, p_index regclass) FROM PUBLIC;
GRANT ALL ON FUNCTION public.memory_exact_scan_limit(p_match_count integer, p_index regclass) TO authenticated;
GRANT ALL ON FUNCTION public.memory_exact_scan_limit(p_match_count integer, p_index regclass) TO service_role;

create or replace function public.memory_cited_files(p_ids uuid[], p_owner uuid) RETURNS TABLE(memory_id uuid, files text[])
    LANGUAGE plpgsql STABLE ROWS 20
    SET search_path TO ''
    AS $$
begin
  return query
  select c.id, array_agg(distinct c.path order by c.path)
    -- Each id probes its rows by key (an id = any (ids) beside the owner let the planner read
    -- the tenant's whole owner index instead: 2 ms a call for the bench's biggest tenant).
    from (select l.memory_id as id, regexp_replace(e.canonical_name, '^(\./)+', '') as path
            from (select distinct u.id from unnest(p_ids) as u(id)) i
            join public.memory_entity_links l on l.memory_id = i.id and l.owner_id = p_owner
            join public.memory_entities e on e.id = l.entity_id and e.entity_type = 'file'
          union all
          select m.id, regexp_replace(x, '^(\./)+', '')
            from (select distinct u.id from unnest(p_ids) as u(id)) i
            cross join lateral (select m.id, m.metadata from public.devai_memories m
                                 where m.id = i.id and m.owner_id = p_owner offset 0) m
           cross join lateral jsonb_array_elements_text(
                  case when jsonb_typeof(m.metadata -> 'files') = 'array' then m.metadata -> 'files'
                       else '[]'::jsonb end) as x) c
   group by c.id;
end;
$$;
revoke all on function public.memory_cited_files(uuid[], uuid) from public, anon, authenticated, service_role;
REVOKE ALL ON FUNCTION public.memory_cited_files(p_ids uuid[], p_owner uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION public.memory_cited_files(p_ids uuid[], p_owner uuid) TO authenticated;
GRANT ALL ON FUNCTION public.memory_cited_files(p_ids uuid[], p_owner uuid) TO service_role;

create or replace function public.memory_feedback(p_ids uuid[], p_namespaces text[], p_owner uuid DEFAULT auth.uid()) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET search_path TO ''
    AS $$
declare
  v_scopes text[] := public.context_scope_prefixes(p_namespaces);
begin
  return (
  select coalesce(jsonb_agg(jsonb_build_object(
           'id', m.id, 'cited_files', coalesce(f.files, '{}'),
           'citation_count', coalesce(u.citation_count, 0), 'ignore_count', coalesce(u.ignore_count, 0))), '[]')
    from (select distinct x.id from unnest(p_ids) as x(id)) i
    cross join lateral (select m.* from public.devai_memories m where m.id = i.id offset 0) m
    left join public.memory_usage u on u.memory_id = m.id
    left join public.memory_cited_files(p_ids, p_owner) f on f.memory_id = m.id
   where m.owner_id = p_owner and m.is_valid and m.state = 'active' and m.strength > 0.05
     and m.source is distinct from 'conversation'
     and (m.namespace || '/') ^@ any (v_scopes));
end;
$$;
revoke all on function public.memory_feedback(uuid[], text[], uuid) from public, anon, authenticated, service_role;
REVOKE ALL ON FUNCTION public.memory_feedback(p_ids uuid[], p_namespaces text[], p_owner uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION public.memory_feedback(p_ids uuid[], p_namespaces text[], p_owner uuid) TO authenticated;
GRANT ALL ON FUNCTION public.memory_feedback(p_ids uuid[], p_namespaces text[], p_owner uuid) TO service_role;

create or replace function memory_search.keyword_postings(p_owner uuid, p_scopes text[], p_terms tsquery[], p_df_cap integer, p_max_candidates integer, p_as_of timestamp with time zone DEFAULT NULL::timestamp with time zone, p_exclude tsquery DEFAULT NULL::tsquery, p_after timestamp with time zone DEFAULT NULL::timestamp with time zone, p_before timestamp with time zone DEFAULT NULL::timestamp with time zone, p_types text[] DEFAULT NULL::text[], p_categories text[] DEFAULT NULL::text[], p_fields jsonb DEFAULT NULL::jsonb, OUT term_df integer[], OUT candidates uuid[]) RETURNS record
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO ''
    SET plan_cache_mode TO 'force_generic_plan'
    AS $_$
declare
  -- The request's filters: the candidates taken when every term is common pass them (the rare
  -- terms' matches are all taken, and filtered by the caller).
  v_filtered boolean := p_exclude is not null or p_after is not null or p_before is not null or p_types is not null
                        or p_categories is not null or p_fields is not null;
  v_keys   text[];
  v_scoped boolean;
  v_ids    uuid[];
  v_rare   text[] := '{}';
  v_q      tsquery;
  v_sq     tsquery;
  v_order  integer[];
  v_live   tsquery[];
  v_above  boolean;
  v_whole  boolean;
  v_factor numeric;
  v_lexemes text[];
  v_common text[] := '{}';
begin
  term_df := '{}';
  candidates := '{}';
  if not memory_search.caller_reads_owner(p_owner) then
    return;
  end if;
  -- Whole scopes (or deeper ones) are looked up by their keys in fts_scoped. A scope above them
  -- (the tenant's whole memory, 'devai', or every project, 'devai/project') is looked up by the
  -- keys of the namespaces it holds, found by walking the tenant's namespace index from one
  -- distinct namespace to the next (one index probe each; at most 256 namespaces); past that, or
  -- as of an instant, the tenant's rows are scanned.
  -- Per scope, once: above the keyed ones, or a whole keyed scope. The statistics used below are
  -- per key, so they stand for a request only when no scope asked is below its key's
  -- (devai/project/p/ci under devai/project/p).
  select bool_or(x.above), bool_and(x.above or memory_private.keyword_scope(x.base) = x.base)
    into v_above, v_whole
    from (select rtrim(s, '/') as base,
                 split_part(rtrim(s, '/'), '/', 2) = ''
                 or (split_part(rtrim(s, '/'), '/', 2) = 'project' and split_part(rtrim(s, '/'), '/', 3) = '') as above
            from unnest(p_scopes) s) x;
  v_scoped := p_as_of is null and not coalesce(v_above, false);
  if v_scoped then
    select array_agg(distinct memory_private.keyword_scope_key(p_owner, memory_private.keyword_scope(rtrim(s, '/'))))
      into v_keys from unnest(p_scopes) s;
  elsif p_as_of is null then
    with recursive walk (ns, n) as (
      (select m.namespace, 1 from public.devai_memories m
        where m.owner_id = p_owner and m.is_valid and m.state = 'active'
        order by m.namespace using operator(pg_catalog.~<~) limit 1)
      union all
      select (select m.namespace from public.devai_memories m
               where m.owner_id = p_owner and m.is_valid and m.state = 'active'
                 and m.namespace operator(pg_catalog.~>~) w.ns
               order by m.namespace using operator(pg_catalog.~<~) limit 1),
             w.n + 1
        from walk w
       where w.ns is not null and w.n <= 256
    )
    select coalesce(array_agg(distinct memory_private.keyword_scope_key(p_owner, memory_private.keyword_scope(w.ns)))
                      filter (where (w.ns || '/') ^@ any (p_scopes)), '{}'),
           not bool_or(w.n > 256 and w.ns is not null)
      into v_keys, v_scoped
      from walk w
     where w.ns is not null;
    v_scoped := coalesce(v_scoped, true);
  end if;

  -- A one-word term the statistics estimate in keyword_common_estimate_factor x the cap of one of
  -- these scopes' memories or more (memory_private.keyword_common_terms) is common without being
  -- counted: counting it builds a bitmap of all its matches to learn only that there are more than
  -- the cap. Only for whole scopes: the statistics are per scope key.
  if v_scoped and v_whole then
    v_factor := public.memory_setting('keyword_common_estimate_factor');
    if v_factor > 0 then
      -- Each one-word term's lexeme (null for a phrase or a prefix), then one primary-key probe per
      -- lexeme and key ('<key>:<lexeme>'; a key has no ':').
      select array_agg(replace(m[1], '''''', '''') order by t.i) into v_lexemes
        from unnest(p_terms) with ordinality t(q, i)
        left join lateral regexp_match(t.q::text, '^''((?:[^'']|'''')*)''$') m on true;
      select coalesce(array_agg(distinct substr(c.term, strpos(c.term, ':') + 1)), '{}') into v_common
        from memory_private.keyword_common_terms c
       where c.term = any (array(select k.key || ':' || l.lexeme
                                   from unnest(v_lexemes) l(lexeme) cross join unnest(v_keys) k(key)
                                  where l.lexeme is not null))
         and c.estimated_rows >= v_factor * p_df_cap;
    end if;
  end if;

  for i in 1 .. coalesce(cardinality(p_terms), 0) loop
    v_q := p_terms[i];
    if v_lexemes[i] = any (v_common) then
      term_df := term_df || (p_df_cap + 1);
      v_rare := v_rare || ''::text;
      continue;
    end if;
    if v_scoped then
      v_sq := memory_search.scoped_query(v_q, v_keys);
      select array_agg(x.id) into v_ids
        from (select m.id from public.devai_memories m
               where pg_catalog.strip(m.fts_scoped) @@ v_sq
                 and m.is_valid and m.state = 'active' and m.source is distinct from 'conversation'
                 -- The key pins the tenant already; this re-check (against a key collision) is
                 -- written so the planner cannot add the tenant's whole owner index to the lookup.
                 and m.owner_id::text = p_owner::text
                 and (m.namespace || '/') ^@ any (p_scopes)
                 and m.fts @@ v_q
               limit p_df_cap + 1) x;
    else
      select array_agg(x.id) into v_ids
        from (select m.id from public.devai_memories m
               where m.owner_id = p_owner
                 and (case when p_as_of is null then m.is_valid and m.state = 'active'
                           else m.created_at <= p_as_of and (m.valid_until is null or m.valid_until > p_as_of)
                                and (select a.held from public.memory_at(m, p_as_of) a) end)
                 and m.source is distinct from 'conversation'
                 and m.fts @@ v_q
                 and (m.namespace || '/') ^@ any (p_scopes)
               limit p_df_cap + 1) x;
    end if;
    term_df := term_df || coalesce(cardinality(v_ids), 0);
    v_rare := v_rare || case when coalesce(cardinality(v_ids), 0) between 1 and p_df_cap then array_to_string(v_ids, ' ') else '' end;
  end loop;

  -- Rarest terms first bring their matches in.
  select coalesce(array_agg(o.i order by term_df[o.i], o.i), '{}') into v_order
    from generate_subscripts(term_df, 1) o(i)
   where term_df[o.i] between 1 and p_df_cap;
  for i in 1 .. cardinality(v_order) loop
    exit when cardinality(candidates) >= p_max_candidates;
    candidates := candidates || string_to_array(v_rare[v_order[i]], ' ')::uuid[];
  end loop;
  if cardinality(v_order) > 0 then
    -- With a filter, the rare terms' matches may all fail it (a rare word of the question only
    -- older memories hold, under a window): then the common terms' memories that pass it are the
    -- candidates, below, as if the rare terms matched nothing.
    if not v_filtered or exists (
         select from public.devai_memories m
          where m.id = any (candidates)
            and memory_search.passes_filters(m.fts, m.created_at, m.memory_type, m.metadata, m.pinned, m.importance,
                                             m.updated_at, p_exclude, p_after, p_before, p_types, p_categories,
                                             p_fields)) then
      return;
    end if;
    candidates := '{}';
  end if;

  -- Every term that matches is common (or, under a filter, every rare term's matches fail it): the
  -- memories matching all the common ones.
  select coalesce(array_agg(q order by i), '{}') into v_live
    from unnest(p_terms) with ordinality t(q, i) where term_df[t.i] > p_df_cap;
  if cardinality(v_live) = 0 then
    return;
  end if;
  -- The memories matching all of them (and the request's filters), at most the cap. Not those
  -- matching any of them: a
  -- common word's matches, taken in no particular order, are noise, and finding them cost a
  -- bitmap of every memory holding any of the words (the vector signal covers what the words
  -- alone do not pin down).
  v_q := (select string_agg('(' || q::text || ')', ' & ')::tsquery from unnest(v_live) q);
  if v_scoped then
    v_sq := memory_search.scoped_query(v_q, v_keys);
    select coalesce(array_agg(x.id), '{}') into candidates
      from (select m.id from public.devai_memories m
             where pg_catalog.strip(m.fts_scoped) @@ v_sq
               and m.is_valid and m.state = 'active' and m.source is distinct from 'conversation'
               and m.owner_id::text = p_owner::text
               and (m.namespace || '/') ^@ any (p_scopes)
               and m.fts @@ v_q
               and (not v_filtered or memory_search.passes_filters(m.fts, m.created_at, m.memory_type, m.metadata, m.pinned,
                                                                   m.importance, m.updated_at, p_exclude, p_after, p_before,
                                                                   p_types, p_categories, p_fields))
             limit p_df_cap) x;
  else
    select coalesce(array_agg(x.id), '{}') into candidates
      from (select m.id from public.devai_memories m
             where m.owner_id = p_owner
               and (case when p_as_of is null then m.is_valid and m.state = 'active'
                         else m.created_at <= p_as_of and (select a.held from public.memory_at(m, p_as_of) a) end)
               and m.source is distinct from 'conversation'
               and m.fts @@ v_q
               and (m.namespace || '/') ^@ any (p_scopes)
               and (not v_filtered or memory_search.passes_filters(m.fts, m.created_at, m.memory_type, m.metadata, m.pinned,
                                                                   m.importance, m.updated_at, p_exclude, p_after, p_before,
                                                                   p_types, p_categories, p_fields))
             limit p_df_cap) x;
  end if;
end;
$_$;
revoke all on function memory_search.keyword_postings(uuid, text[], tsquery[], integer, integer, timestamp with time zone, tsquery, timestamp with time zone, timestamp with time zone, text[], text[], jsonb) from public, anon, authenticated, service_role;
REVOKE ALL ON FUNCTION memory_search.keyword_postings(p_owner uuid, p_scopes text[], p_terms tsquery[], p_df_cap integer, p_max_candidates integer, p_as_of timestamp with time zone, p_exclude tsquery, p_after timestamp with time zone, p_before timestamp with time zone, p_types text[], p_categories text[], p_fields jsonb, OUT term_df integer[], OUT candidates uuid[]) FROM PUBLIC;
GRANT ALL ON FUNCTION memory_search.keyword_postings(p_owner uuid, p_scopes text[], p_terms tsquery[], p_df_cap integer, p_max_candidates integer, p_as_of timestamp with time zone, p_exclude tsquery, p_after timestamp with time zone, p_before timestamp with time zone, p_types text[], p_categories text[], p_fields jsonb, OUT term_df integer[], OUT candidates uuid[]) TO authenticated;
GRANT ALL ON FUNCTION memory_search.keyword_postings(p_owner uuid, p_scopes text[], p_terms tsquery[], p_df_cap integer, p_max_candidates integer, p_as_of timestamp with time zone, p_exclude tsquery, p_after timestamp with time zone, p_before timestamp with time zone, p_types text[], p_categories text[], p_fields jsonb, OUT term_df integer[], OUT candidates uuid[]) TO service_role;

-- The bulk-update triggers skip their per-row work only for the owner roles (20261124800100's
-- final text): in its first text any session that set memory.bulk skipped them.
create or replace trigger devai_memories_close_validity BEFORE UPDATE OF is_valid, superseded_by ON public.devai_memories FOR EACH ROW WHEN (((current_setting('memory.bulk'::text, true) IS DISTINCT FROM 'on'::text) OR (CURRENT_USER <> ALL (ARRAY['postgres'::name, 'service_role'::name])))) EXECUTE FUNCTION memory_private.close_fact_validity();
create or replace trigger devai_memories_touch_updated_at BEFORE UPDATE ON public.devai_memories FOR EACH ROW WHEN ((((old.content IS DISTINCT FROM new.content) OR (old.embedding_model IS DISTINCT FROM new.embedding_model) OR (old.memory_type IS DISTINCT FROM new.memory_type) OR (old.namespace IS DISTINCT FROM new.namespace) OR (old.priority IS DISTINCT FROM new.priority) OR (old.source IS DISTINCT FROM new.source) OR (old.is_valid IS DISTINCT FROM new.is_valid) OR (old.superseded_by IS DISTINCT FROM new.superseded_by) OR (old.importance IS DISTINCT FROM new.importance) OR (old.pinned IS DISTINCT FROM new.pinned) OR (old.state IS DISTINCT FROM new.state) OR (old.metadata IS DISTINCT FROM new.metadata)) AND ((current_setting('memory.bulk'::text, true) IS DISTINCT FROM 'on'::text) OR (CURRENT_USER <> ALL (ARRAY['postgres'::name, 'service_role'::name]))))) EXECUTE FUNCTION memory_private.touch_updated_at();

-- job_keep_days is at least 1 day (20261128620000's final text; its first allowed 0, which
-- deleted a finished job at once).
alter table public.memory_settings drop constraint if exists memory_settings_job_keep_days_range;
alter table public.memory_settings
  add constraint memory_settings_job_keep_days_range check (name <> 'job_keep_days' or value >= 1);

-- The finished-jobs index leaves extract jobs out, as the prune that reads it does
-- (20261128620000's final text); rebuilt only where it differs (a build over memory_jobs' finished
-- rows, under this migration's lock on the table).
do $$
begin
  if pg_catalog.pg_get_indexdef('public.memory_jobs_finished'::regclass)
     is distinct from 'CREATE INDEX memory_jobs_finished ON public.memory_jobs USING btree (finished_at) WHERE ((status = ANY (ARRAY[''done''::text, ''dead''::text])) AND (kind <> ''extract''::text))' then
    drop index public.memory_jobs_finished;
    create index memory_jobs_finished on public.memory_jobs (finished_at)
      where status in ('done', 'dead') and kind <> 'extract';
  end if;
end;
$$;
