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
--     20261128000000, 20261128400000, 20261124800100 (the bulk triggers' role check),
--     20261124700200 (memory_feedback's EXECUTE left to anon), 20261128610000 (the extract marks'
--     key) and 20261128600000 (match_memories, passes_filters, hybrid_search and query_memories:
--     a deployment of 2026-11-27 12:52-13:35 had no match_memories of today's signature),
--     20261124800000 (memory_scope_size), and 20261128930000 (end_memory_sessions; folded into
--     20261128960000 since), 20261128870100 (prune_context_sessions and its index; folded into
--     20261128870000 since), 20261125760300 (the dedicated vector index's helpers): their final
--     text, restated.
--
-- Every definition below is the one a fresh install has (copied from supabase/schema.sql), so on a
-- fresh install this migration changes nothing and locks no table that requests write (the
-- triggers, the check constraint and the indexes are made again only where they differ).
-- tests/upgrade.test.ts checks both: on a fresh install (the migrations before this one, then
-- this one in a transaction) no function, trigger, constraint or index changes and no table lock
-- stronger than a read is taken; on an upgraded one, the schema is then a fresh install's.
-- Deployments made before 20261123000700 (main before 2026-11-23 14:20 UTC) are not covered:
-- docs/upgrading.md says what to do for them.

-- A lock this migration needs (only where an object differs: see each below) is waited for at most
-- 5 s: under load the push then fails, changing nothing, instead of stalling the requests queued
-- behind it; run the push again (docs/upgrading.md).
set local lock_timeout = '5s';

-- Stale overloads and a stale helper that only an upgraded database has (nothing calls them once
-- the functions below are restated).
drop function if exists memory_private.change_log_meta(public.devai_memories, text);
drop function if exists public.memory_cited_files(uuid, uuid, jsonb);
drop function if exists public.memory_exact_scan_limit(integer, uuid);
drop function if exists public.memory_exact_scan_limit(integer);
drop function if exists memory_search.keyword_postings(uuid, text[], tsquery[], integer, integer, timestamptz);
-- 20261127200000's first text gave vector_index_plan's argument a default, which create or replace
-- cannot take away: dropped and made again below (enqueue_vector_index_jobs, its only caller, is
-- plpgsql and finds it at run time).
drop function if exists memory_private.vector_index_plan(integer);
-- Retrieval's overloads of main between 2026-11-27 12:52 and 14:30 (20261128600000's first texts).
drop function if exists public.match_memories(extensions.vector, text, integer, double precision, uuid, text, text[], timestamptz, boolean, timestamptz, timestamptz, text[], text[], tsquery);
drop function if exists memory_search.passes_filters(tsvector, timestamptz, text, jsonb, tsquery, timestamptz, timestamptz, text[], text[]);
drop function if exists public.hybrid_search(text, extensions.vector, text[], integer, double precision, text, uuid, text, integer, text[], timestamptz, timestamptz, text[], text[], text[], double precision, double precision, timestamptz, text[], boolean, text);

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

-- Retrieval's filters and searches: main between 2026-11-27 12:52 and 14:30 had other signatures or
-- bodies (20261128600000's first texts); the earlier overloads are dropped above.
create or replace function memory_search.passes_filters(p_fts tsvector, p_created_at timestamp with time zone, p_memory_type text, p_metadata jsonb, p_pinned boolean, p_importance smallint, p_updated_at timestamp with time zone, p_exclude tsquery, p_after timestamp with time zone, p_before timestamp with time zone, p_types text[], p_categories text[], p_fields jsonb) RETURNS boolean
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path TO ''
    AS $$
begin
  -- A comparison with null (a memory without a category, under a categories filter) fails the
  -- filter, as it would in a WHERE clause.
  if not coalesce(
       (p_exclude is null or not (p_fts @@ p_exclude))
       and (p_after is null or p_created_at >= p_after)
       and (p_before is null or p_created_at < p_before)
       and (p_types is null or p_memory_type = any (p_types))
       -- A procedural memory's category is 'procedural' (as every search reports it).
       and (p_categories is null
            or (case when p_memory_type = 'procedural' then 'procedural' else p_metadata ->> 'category' end)
               = any (p_categories)),
       false) then
    return false;
  end if;
  return p_fields is null or coalesce(
    (p_fields ->> 'user_id' is null or p_metadata ->> 'user_id' = p_fields ->> 'user_id')
    and (p_fields ->> 'agent_id' is null or p_metadata ->> 'agent_id' = p_fields ->> 'agent_id')
    and (p_fields ->> 'run_id' is null or p_metadata ->> 'run_id' = p_fields ->> 'run_id')
    and (p_fields ->> 'actor_id' is null or p_metadata ->> 'actor_id' = p_fields ->> 'actor_id')
    and (p_fields ->> 'role' is null or p_metadata ->> 'role' = p_fields ->> 'role')
    and (p_fields ->> 'pinned' is null or p_pinned = (p_fields ->> 'pinned')::boolean)
    and (p_fields ->> 'importance_min' is null or p_importance >= (p_fields ->> 'importance_min')::integer)
    and (p_fields ->> 'importance_max' is null or p_importance <= (p_fields ->> 'importance_max')::integer)
    and (p_fields ->> 'updated_after' is null or p_updated_at >= (p_fields ->> 'updated_after')::timestamptz)
    and (p_fields ->> 'updated_before' is null or p_updated_at < (p_fields ->> 'updated_before')::timestamptz),
    false);
end;
$$;
revoke all on function memory_search.passes_filters(tsvector, timestamp with time zone, text, jsonb, boolean, smallint, timestamp with time zone, tsquery, timestamp with time zone, timestamp with time zone, text[], text[], jsonb) from public, anon, authenticated, service_role;
REVOKE ALL ON FUNCTION memory_search.passes_filters(p_fts tsvector, p_created_at timestamp with time zone, p_memory_type text, p_metadata jsonb, p_pinned boolean, p_importance smallint, p_updated_at timestamp with time zone, p_exclude tsquery, p_after timestamp with time zone, p_before timestamp with time zone, p_types text[], p_categories text[], p_fields jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION memory_search.passes_filters(p_fts tsvector, p_created_at timestamp with time zone, p_memory_type text, p_metadata jsonb, p_pinned boolean, p_importance smallint, p_updated_at timestamp with time zone, p_exclude tsquery, p_after timestamp with time zone, p_before timestamp with time zone, p_types text[], p_categories text[], p_fields jsonb) TO authenticated;
GRANT ALL ON FUNCTION memory_search.passes_filters(p_fts tsvector, p_created_at timestamp with time zone, p_memory_type text, p_metadata jsonb, p_pinned boolean, p_importance smallint, p_updated_at timestamp with time zone, p_exclude tsquery, p_after timestamp with time zone, p_before timestamp with time zone, p_types text[], p_categories text[], p_fields jsonb) TO service_role;

create or replace function public.match_memories(query_embedding extensions.vector, match_namespace text, match_count integer DEFAULT 15, similarity_threshold double precision DEFAULT 0.7, match_owner uuid DEFAULT auth.uid(), match_embedding_model text DEFAULT 'text-embedding-3-small'::text, match_namespaces text[] DEFAULT NULL::text[], as_of timestamp with time zone DEFAULT NULL::timestamp with time zone, with_relations boolean DEFAULT true, filter_after timestamp with time zone DEFAULT NULL::timestamp with time zone, filter_before timestamp with time zone DEFAULT NULL::timestamp with time zone, filter_memory_types text[] DEFAULT NULL::text[], filter_categories text[] DEFAULT NULL::text[], filter_exclude tsquery DEFAULT NULL::tsquery, filter_fields jsonb DEFAULT NULL::jsonb) RETURNS TABLE(id uuid, content text, similarity double precision, memory_type text, namespace text, strength double precision, priority text, importance smallint, pinned boolean, source text, metadata jsonb, session_id text, access_count integer, last_accessed_at timestamp with time zone, created_at timestamp with time zone, updated_at timestamp with time zone, max_relation_strength real)
    LANGUAGE plpgsql STABLE ROWS 20
    SET search_path TO ''
    SET "hnsw.iterative_scan" TO 'relaxed_order'
    SET "hnsw.ef_search" TO '100'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
declare
  v_bases     text[];
  v_uppers    text[];
  v_scopes    text[];
  v_exact_max integer;
  v_index     regclass;
  v_in_scope  integer;
  v_sort      text;
  v_in_window integer;
  v_from      timestamptz := coalesce(filter_after, '-infinity');
  v_until     timestamptz := coalesce(filter_before, 'infinity');
  -- The request's filters (time window, types, categories, exclusions) hold inside each path, so
  -- a strict filter gets its match_count nearest memories that pass it, not what passes among
  -- the nearest of all.
  v_filtered  boolean := filter_after is not null or filter_before is not null or filter_memory_types is not null
                         or filter_categories is not null or filter_exclude is not null or filter_fields is not null;
begin
  if match_count is null or match_count < 1 or match_count > 200 then
    raise exception 'match_count must be between 1 and 200, got %', match_count using errcode = '22023';
  end if;
  -- The scopes as namespace bases without the trailing '/', each once, none inside another (a
  -- base whose parent is searched too adds nothing, and would count its rows twice).
  with bases as (
    select distinct rtrim(s, '/') as base
      from unnest(coalesce(match_namespaces, '{}'::text[]) || match_namespace) as s
     where s is not null and rtrim(s, '/') <> ''
  )
  select coalesce(array_agg(b.base order by b.base), '{}') into v_bases
    from bases b
   where not exists (select from bases o where o.base <> b.base and (b.base || '/') ^@ (o.base || '/'));
  if cardinality(v_bases) = 0 then
    raise exception 'at least one namespace scope is required' using errcode = '22023';
  end if;
  -- Scopes match by path segment, never LIKE: base 'devai/project/task_forge' matches itself and
  -- 'devai/project/task_forge/...', never 'devai/project/taskxforge' nor '.../task_forge2'.
  select array_agg(b || '/') into v_scopes from unnest(v_bases) b;
  -- Each scope's byte range ends before base || '0' ('0' follows '/'), computed here so the index
  -- condition holds only values (see the top of this file).
  select array_agg(b || '0' order by o) into v_uppers from unnest(v_bases) with ordinality as u(b, o);
  v_index := public.memory_vector_index_of(match_owner);
  v_exact_max := public.memory_exact_scan_limit(match_count, v_index);

  -- As of an instant: what the tenant's memory held then (public.memory_at: recorded by then,
  -- validity not closed, valid and active after its last change then; its content then). Exact:
  -- the invalidated rows it may need are not in the HNSW index. Strength is not filtered (it is
  -- today's, not then's).
  if as_of is not null then
    return query
    with in_scope as materialized (
      select m.id, a.content, m.embedding operator(extensions.<=>) query_embedding as distance
        from public.devai_memories m
       cross join lateral public.memory_at(m, as_of) a
       where m.owner_id = match_owner
         and m.created_at <= as_of
         and (m.valid_until is null or m.valid_until > as_of)
         and m.source is distinct from 'conversation'
         and m.embedding_model = match_embedding_model
         and m.embedding is not null
         and (m.namespace || '/') ^@ any (v_scopes)
         and a.held
         and (not v_filtered or memory_search.passes_filters(m.fts, m.created_at, m.memory_type, m.metadata, m.pinned, m.importance, m.updated_at,
                                                             filter_exclude, filter_after, filter_before, filter_memory_types, filter_categories, filter_fields))
    ),
    nearest as (
      select s.id, s.content, s.distance from in_scope s order by s.distance, s.id limit match_count
    )
    select n.id, n.content, 1 - n.distance, m.memory_type, m.namespace, m.strength, m.priority,
           m.importance, m.pinned, m.source, m.metadata, m.session_id, m.access_count,
           m.last_accessed_at, m.created_at, m.updated_at,
           rs.strength
      from nearest n
      join public.devai_memories m on m.id = n.id
      left join memory_search.relation_strengths(match_owner, case when with_relations then array(select n2.id from nearest n2) end, as_of, v_scopes) rs
        on rs.id = n.id
     where 1 - n.distance > similarity_threshold
     order by n.distance, n.id;
    return;
  end if;

  select count(*) into v_in_scope
    from (select 1
            from unnest(v_bases, v_uppers) as b(base, upper)
           cross join lateral (
             select 1 from public.devai_memories m
              where m.owner_id = match_owner and m.is_valid and m.state = 'active'
                and m.namespace operator(pg_catalog.~>=~) b.base
                and m.namespace operator(pg_catalog.~<~) b.upper
                and (m.namespace = b.base or m.namespace ^@ (b.base || '/'))
              limit v_exact_max + 1) as hit
           limit v_exact_max + 1) as counted;

  -- Two statements, not one with both branches: a UNION ALL of the two paths, gated by
  -- v_in_scope, planned badly (693 ms p50 instead of 11). The projection they share is short.
  if v_in_scope <= v_exact_max then
    -- Small scope: compare every vector in it (exact, recall 1).
    return query
    -- One lookup per scope (a lateral subquery that offset 0 keeps from being flattened into a
    -- join): each scope's range is then an index condition. As a plain join, the generic plan
    -- read every row of the tenant and applied the ranges as a join filter (a 109-row scope of
    -- a 21k-row tenant: 33 ms instead of under 1; the bench's same-size check).
    with in_scope as materialized (
      select m.id, m.distance
        from unnest(v_bases, v_uppers) as b(base, upper)
       cross join lateral (
         select m.id, m.embedding operator(extensions.<=>) query_embedding as distance
           from public.devai_memories m
          where m.owner_id = match_owner and m.is_valid and m.state = 'active'
            and m.namespace operator(pg_catalog.~>=~) b.base
            and m.namespace operator(pg_catalog.~<~) b.upper
            and (m.namespace = b.base or m.namespace ^@ (b.base || '/'))
            and m.strength > 0.05
            and m.source is distinct from 'conversation'
            and m.embedding_model = match_embedding_model
            and m.embedding is not null
            and (not v_filtered or memory_search.passes_filters(m.fts, m.created_at, m.memory_type, m.metadata, m.pinned, m.importance, m.updated_at,
                                                                filter_exclude, filter_after, filter_before, filter_memory_types, filter_categories, filter_fields))
         offset 0) as m
    ),
    nearest as (
      select s.id, s.distance from in_scope s order by s.distance, s.id limit match_count
    )
    select n.id, m.content, 1 - n.distance, m.memory_type, m.namespace, m.strength, m.priority,
           m.importance, m.pinned, m.source, m.metadata, m.session_id, m.access_count,
           m.last_accessed_at, m.created_at, m.updated_at,
           rs.strength
      from nearest n
      join public.devai_memories m on m.id = n.id
      left join memory_search.relation_strengths(match_owner, case when with_relations then array(select n2.id from nearest n2) end, null, v_scopes) rs
        on rs.id = n.id
     where 1 - n.distance > similarity_threshold
     order by n.distance, n.id;
    return;
  end if;

  -- A large scope, but a time window few of the tenant's memories fall in (a `when` question's
  -- week): those are compared exactly, read by their (owner_id, created_at) range. The index walk
  -- would pass over most of the scope to find them (a week of a 21k-memory tenant: 25 ms for half
  -- the answer; an empty window, 66 ms for none).
  if filter_after is not null or filter_before is not null then
    select count(*) into v_in_window
      from (select 1 from public.devai_memories m
             where m.owner_id = match_owner and m.created_at >= v_from and m.created_at < v_until
             limit v_exact_max + 1) as counted;
  end if;
  if v_in_window <= v_exact_max then
    return query
    with nearest as materialized (
      select s.id, s.distance
        from (select m.id, m.embedding operator(extensions.<=>) query_embedding as distance
                from public.devai_memories m
               where m.owner_id = match_owner and m.created_at >= v_from and m.created_at < v_until
                 and m.is_valid and m.state = 'active'
                 and m.strength > 0.05
                 and m.source is distinct from 'conversation'
                 and m.embedding_model = match_embedding_model
                 and m.embedding is not null
                 and (m.namespace || '/') ^@ any (v_scopes)
                 and memory_search.passes_filters(m.fts, m.created_at, m.memory_type, m.metadata, m.pinned, m.importance,
                                                  m.updated_at, filter_exclude, filter_after, filter_before,
                                                  filter_memory_types, filter_categories, filter_fields)
              offset 0) as s
       order by s.distance, s.id
       limit match_count
    )
    select n.id, m.content, 1 - n.distance, m.memory_type, m.namespace, m.strength, m.priority,
           m.importance, m.pinned, m.source, m.metadata, m.session_id, m.access_count,
           m.last_accessed_at, m.created_at, m.updated_at,
           rs.strength
      from nearest n
      join public.devai_memories m on m.id = n.id
      left join memory_search.relation_strengths(match_owner, case when with_relations then array(select n2.id from nearest n2) end, null, v_scopes) rs
        on rs.id = n.id
     where 1 - n.distance > similarity_threshold
     order by n.distance, n.id;
    return;
  end if;

  -- Large scope: the HNSW index, filtered while it is walked (iterative scan, so selective filters
  -- keep recall). Sorting is switched off for this statement only, so the planner cannot fall
  -- back to sorting the whole scope; the rows found are re-sorted exactly below. With a filter
  -- of the request's own that few memories pass, the walk goes on until it has match_count of
  -- them or has read pgvector's hnsw.max_scan_tuples index entries (20,000; a filter nothing
  -- passes costs about 65 ms in a 100k-memory index). A bound of 2,000 was tried: 7 ms, but the
  -- entries of other tenants and dead rows count too, and it missed most of what a user's filter
  -- in a shared index should find.
  v_sort := current_setting('enable_sort');
  perform set_config('enable_sort', 'off', true);
  -- A tenant with its own index: the planner can use that partial index only in a plan made for
  -- this owner, so this statement is planned for this call (the function's SET clause restores
  -- plan_cache_mode when it returns).
  if v_index is distinct from to_regclass('public.devai_memories_embedding_hnsw') then
    perform set_config('plan_cache_mode', 'force_custom_plan', true);
  end if;
  return query
  with nearest as materialized (
    select m.id, m.embedding operator(extensions.<=>) query_embedding as distance
      from public.devai_memories m
     where m.owner_id = match_owner
       and m.is_valid
       and m.state = 'active'
       and m.strength > 0.05
       and m.source is distinct from 'conversation'
       and m.embedding_model = match_embedding_model
       and m.embedding is not null
       and (m.namespace || '/') ^@ any (v_scopes)
       and (not v_filtered or memory_search.passes_filters(m.fts, m.created_at, m.memory_type, m.metadata, m.pinned, m.importance, m.updated_at,
                                                           filter_exclude, filter_after, filter_before, filter_memory_types, filter_categories, filter_fields))
     order by m.embedding operator(extensions.<=>) query_embedding
     limit match_count
  )
  select n.id, m.content, 1 - n.distance, m.memory_type, m.namespace, m.strength, m.priority,
         m.importance, m.pinned, m.source, m.metadata, m.session_id, m.access_count,
         m.last_accessed_at, m.created_at, m.updated_at,
         rs.strength
    from nearest n
    join public.devai_memories m on m.id = n.id
    left join memory_search.relation_strengths(match_owner, case when with_relations then array(select n2.id from nearest n2) end, null, v_scopes) rs
      on rs.id = n.id
   where 1 - n.distance > similarity_threshold
   order by n.distance, n.id;
  perform set_config('enable_sort', v_sort, true);
end;
$$;
revoke all on function public.match_memories(extensions.vector, text, integer, double precision, uuid, text, text[], timestamp with time zone, boolean, timestamp with time zone, timestamp with time zone, text[], text[], tsquery, jsonb) from public, anon, authenticated, service_role;
REVOKE ALL ON FUNCTION public.match_memories(query_embedding extensions.vector, match_namespace text, match_count integer, similarity_threshold double precision, match_owner uuid, match_embedding_model text, match_namespaces text[], as_of timestamp with time zone, with_relations boolean, filter_after timestamp with time zone, filter_before timestamp with time zone, filter_memory_types text[], filter_categories text[], filter_exclude tsquery, filter_fields jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION public.match_memories(query_embedding extensions.vector, match_namespace text, match_count integer, similarity_threshold double precision, match_owner uuid, match_embedding_model text, match_namespaces text[], as_of timestamp with time zone, with_relations boolean, filter_after timestamp with time zone, filter_before timestamp with time zone, filter_memory_types text[], filter_categories text[], filter_exclude tsquery, filter_fields jsonb) TO authenticated;
GRANT ALL ON FUNCTION public.match_memories(query_embedding extensions.vector, match_namespace text, match_count integer, similarity_threshold double precision, match_owner uuid, match_embedding_model text, match_namespaces text[], as_of timestamp with time zone, with_relations boolean, filter_after timestamp with time zone, filter_before timestamp with time zone, filter_memory_types text[], filter_categories text[], filter_exclude tsquery, filter_fields jsonb) TO service_role;

create or replace function public.hybrid_search(query_text text, query_embedding extensions.vector DEFAULT NULL::extensions.vector, match_namespaces text[] DEFAULT NULL::text[], match_count integer DEFAULT 15, similarity_threshold double precision DEFAULT 0.7, match_embedding_model text DEFAULT NULL::text, match_owner uuid DEFAULT auth.uid(), search_mode text DEFAULT 'hybrid'::text, graph_depth integer DEFAULT 1, graph_edge_types text[] DEFAULT NULL::text[], filter_after timestamp with time zone DEFAULT NULL::timestamp with time zone, filter_before timestamp with time zone DEFAULT NULL::timestamp with time zone, filter_memory_types text[] DEFAULT NULL::text[], filter_categories text[] DEFAULT NULL::text[], prefer_memory_types text[] DEFAULT NULL::text[], recency_weight double precision DEFAULT 0, keyword_threshold double precision DEFAULT NULL::double precision, as_of timestamp with time zone DEFAULT NULL::timestamp with time zone, entity_terms text[] DEFAULT NULL::text[], graph_episodes boolean DEFAULT false, query_complexity text DEFAULT NULL::text, filter_fields jsonb DEFAULT NULL::jsonb) RETURNS TABLE(id uuid, content text, memory_type text, namespace text, strength double precision, priority text, importance smallint, pinned boolean, source text, metadata jsonb, session_id text, access_count integer, last_accessed_at timestamp with time zone, created_at timestamp with time zone, updated_at timestamp with time zone, max_relation_strength real, category text, similarity double precision, keyword_rank integer, keyword_score double precision, keyword_coverage double precision, vector_rank integer, graph_rank integer, graph_via uuid, graph_edge text, relevance double precision)
    LANGUAGE plpgsql STABLE ROWS 20
    SET search_path TO ''
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
#variable_conflict use_column
declare
  v_bases      text[];
  v_scopes     text[];
  v_k          double precision;
  v_w_kw       double precision := 0;
  v_w_vec      double precision := 0;
  v_w_graph    double precision := 0;
  v_w_recent   double precision := greatest(coalesce(recency_weight, 0), 0);
  v_max_terms  integer;
  v_df_cap     integer;
  v_min_cov    double precision;
  v_k1         double precision;
  v_b          double precision;
  v_seed_count integer;
  v_share      double precision;
  v_kw_share   double precision[] := '{}';
  v_vec_share  double precision[] := '{}';
  v_n          integer;
  v_terms_all  tsquery[];
  v_excludes   tsquery[];
  v_ids        uuid[];
  v_df         integer;
  v_terms_q    tsquery[] := '{}';
  v_terms_idf  double precision[] := '{}';
  v_exclude    tsquery;
  v_filtered   boolean;
  v_cand       uuid[] := '{}';
  v_dfs        integer[];
  v_idf_total  double precision := 0;
  v_pool       integer;
  v_vec_pool   integer;
  -- signal lists (parallel arrays, best first)
  v_kw_ids     uuid[] := '{}';
  v_kw_score   double precision[] := '{}';
  v_kw_cov     double precision[] := '{}';
  v_vec_ids    uuid[] := '{}';
  v_vec_sims   double precision[] := '{}';
  v_conf       double precision;
  v_best_cov   double precision;
  v_seeds      uuid[] := '{}';
  v_g_ids      uuid[] := '{}';
  v_g_weight   double precision[] := '{}';
  v_g_via      uuid[] := '{}';
  v_g_edge     text[] := '{}';
  v_types      text[] := coalesce(graph_edge_types, array['related_to', 'supersedes', 'derived_from', 'temporal', 'causal']);
begin
  if match_count is null or match_count < 1 or match_count > 200 then
    raise exception 'match_count must be between 1 and 200, got %', match_count using errcode = '22023';
  end if;
  if search_mode is null or search_mode not in ('hybrid', 'vector', 'keyword') then
    raise exception 'search_mode must be hybrid, vector or keyword, got %', search_mode using errcode = '22023';
  end if;
  if graph_depth is null or graph_depth < 0 or graph_depth > 4 then
    raise exception 'graph_depth must be between 0 and 4, got %', graph_depth using errcode = '22023';
  end if;
  if query_complexity is not null and query_complexity not in ('simple', 'complex') then
    raise exception 'query_complexity must be simple or complex, got %', query_complexity using errcode = '22023';
  end if;

  -- Scopes as in match_memories: bases without the trailing '/', each once, none inside another.
  with bases as (
    select distinct rtrim(s, '/') as base
      from unnest(coalesce(match_namespaces, '{}'::text[])) as s
     where s is not null and rtrim(s, '/') <> ''
  )
  select coalesce(array_agg(b.base order by b.base), '{}') into v_bases
    from bases b
   where not exists (select from bases o where o.base <> b.base and (b.base || '/') ^@ (o.base || '/'));
  if cardinality(v_bases) = 0 then
    raise exception 'at least one namespace scope is required' using errcode = '22023';
  end if;
  select array_agg(b || '/') into v_scopes from unnest(v_bases) b;

  -- Settings (one read) and weights.
  select max(s.value) filter (where s.name = 'rrf_k'),
         max(s.value) filter (where s.name = 'keyword_max_terms'),
         max(s.value) filter (where s.name = 'keyword_df_cap'),
         max(s.value) filter (where s.name = 'keyword_min_coverage'),
         max(s.value) filter (where s.name = 'bm25_k1'),
         max(s.value) filter (where s.name = 'bm25_b'),
         max(s.value) filter (where s.name = 'graph_seed_count'),
         max(s.value) filter (where s.name = case when query_complexity = 'complex' then 'fusion_score_share_complex'
                                                    else 'fusion_score_share' end)
    into v_k, v_max_terms, v_df_cap, v_conf, v_k1, v_b, v_seed_count, v_share
    from public.memory_settings s
   where s.name in ('rrf_k', 'keyword_max_terms', 'keyword_df_cap', 'keyword_min_coverage', 'bm25_k1', 'bm25_b',
                    'graph_seed_count', 'fusion_score_share', 'fusion_score_share_complex');
  v_share := least(1, greatest(0, coalesce(v_share, 0)));
  v_min_cov := coalesce(keyword_threshold, v_conf);
  select w.keyword, w.vector, w.graph into v_w_kw, v_w_vec, v_w_graph
    from public.memory_search_weights w
   where w.embedding_model in (coalesce(match_embedding_model, '*'), '*')
   order by (w.embedding_model = '*')
   limit 1;
  v_w_kw := coalesce(v_w_kw, 1); v_w_vec := coalesce(v_w_vec, 1); v_w_graph := coalesce(v_w_graph, 0.5);
  if search_mode = 'vector' then v_w_kw := 0; v_w_graph := 0; v_w_recent := 0; end if;
  if search_mode = 'keyword' then v_w_vec := 0; v_w_graph := 0; v_w_recent := 0; end if;
  -- Without hops the graph signal is only the lookup of the names a who/what question asks about.
  if graph_depth = 0 and cardinality(coalesce(entity_terms, '{}')) = 0 then v_w_graph := 0; end if;
  if query_embedding is null or match_embedding_model is null then v_w_vec := 0; end if;
  v_pool := greatest(match_count * 3, 30);
  -- The vector list is only as deep as the answer (at least 20): in a big scope each further
  -- neighbour costs HNSW work under the filters, and a deep vector list adds little to the fusion.
  v_vec_pool := greatest(match_count, 20);

  -- The query's terms, and its exclusions (-word, -"a phrase"): a memory matching an exclusion is
  -- left out whichever signal finds it (the keyword, vector and graph lists alike). Without the
  -- keyword signal, the terms are read only when the text has an exclusion (reading them costs
  -- about as much as a small scope's vector search).
  if v_w_kw > 0 or query_text ~ '(^|\s)-("|[[:alpha:]][^\s"])' then
    select coalesce(array_agg(t.query order by t.ord) filter (where t.kind <> 'exclude'), '{}'),
           coalesce(array_agg(t.query order by t.ord) filter (where t.kind = 'exclude'), '{}')
      into v_terms_all, v_excludes
      from public.memory_keyword_terms(query_text, v_max_terms) with ordinality as t(term, kind, query, ord);
    select string_agg(q::text, ' | ')::tsquery into v_exclude from unnest(v_excludes) q;
  end if;
  v_filtered := filter_after is not null or filter_before is not null or filter_memory_types is not null
                or filter_categories is not null or v_exclude is not null or filter_fields is not null;

  -- Keyword signal. Each term's matches in scope, counted up to the cap (its document frequency);
  -- rare terms bring their matches in as candidates.
  if v_w_kw > 0 then
    -- The corpus size for idf, at least 1,000: a young tenant's few memories say little about how
    -- common a word is (with 3 memories, a word in one of them would look as common as "the").
    -- The scope is counted only to keyword_df_cap * 5 + 1: below 1,000 (the default cap, 25,
    -- counts to 126) the count cannot change the figure, and is not made.
    v_n := case when v_df_cap * 5 + 1 <= 1000 then 1000
                else greatest(public.memory_scope_size(match_owner, v_bases, v_df_cap * 5), 1000) end;
    -- Document frequencies (capped) and candidates, through the index (memory_search.keyword_postings).
    select p.term_df, p.candidates into v_dfs, v_cand
      from memory_search.keyword_postings(match_owner, v_scopes, v_terms_all, v_df_cap, v_pool * 2, as_of, v_exclude,
                                          filter_after, filter_before, filter_memory_types, filter_categories,
                                          filter_fields) p;
    for i in 1 .. coalesce(cardinality(v_terms_all), 0) loop
      v_df := coalesce(v_dfs[i], v_df_cap + 1);
      -- A term no memory has still counts in the best possible score (coverage's denominator):
      -- a memory that matches the common words of a question but not its rare ones is no answer.
      v_idf_total := v_idf_total + ln(1 + (greatest(v_n, v_df) - v_df + 0.5) / (v_df + 0.5));
      continue when v_df = 0;
      v_terms_q := v_terms_q || v_terms_all[i];
      v_terms_idf := v_terms_idf || ln(1 + (greatest(v_n, v_df) - v_df + 0.5) / (v_df + 0.5));
    end loop;

    -- BM25 over the candidates: sum of matched terms' idf, saturated and length-normalised
    -- (memories are a sentence or two, so a term's frequency in one is almost always 1).
    if coalesce(cardinality(v_cand), 0) > 0 and v_idf_total > 0 then
      with cand as (
        select distinct c.id from unnest(v_cand) c(id)
      ),
      matched as (
        select m.id, length(m.fts)::double precision as dl,
               (select coalesce(sum(t.idf), 0)
                  from unnest(v_terms_q, v_terms_idf) as t(q, idf)
                 where m.fts @@ t.q) as idf_sum
          from cand c
          cross join lateral (select m.* from public.devai_memories m where m.id = c.id offset 0) m
         where m.owner_id = match_owner
           and (as_of is not null or (m.is_valid and m.state = 'active' and m.strength > 0.05))
           and m.source is distinct from 'conversation'
           and (m.namespace || '/') ^@ any (v_scopes)
           and (not v_filtered or memory_search.passes_filters(m.fts, m.created_at, m.memory_type, m.metadata, m.pinned, m.importance, m.updated_at,
                                                               v_exclude, filter_after, filter_before, filter_memory_types, filter_categories, filter_fields))
      ),
      scored as (
        select x.id,
               x.idf_sum * (v_k1 + 1)
                 / (1 + v_k1 * (1 - v_b + v_b * x.dl / greatest((select avg(y.dl) from matched y), 1))) as score
          from matched x
      ),
      ranked as (
        select s.id, s.score, least(1, s.score / (v_idf_total * (v_k1 + 1) / (1 + v_k1))) as coverage
          from scored s
         where s.score > 0
         order by s.score desc, s.id
         limit v_pool
      )
      select coalesce(array_agg(r.id order by r.score desc, r.id), '{}'),
             coalesce(array_agg(r.score order by r.score desc, r.id), '{}'),
             coalesce(array_agg(r.coverage order by r.score desc, r.id), '{}')
        into v_kw_ids, v_kw_score, v_kw_cov
        from ranked r;
    end if;
  end if;

  -- Vector signal: match_memories over the same scopes (exact or HNSW by scope size), the filters
  -- applied while it searches, down to half the threshold (companions of an answer, see below).
  if v_w_vec > 0 then
    select coalesce(array_agg(v.id order by v.similarity desc, v.id), '{}'),
           coalesce(array_agg(v.similarity order by v.similarity desc, v.id), '{}')
      into v_vec_ids, v_vec_sims
      from public.match_memories(
             query_embedding, v_bases[1], v_vec_pool, similarity_threshold / 2, match_owner, match_embedding_model,
             v_bases[2:], as_of, with_relations => false, filter_after => filter_after, filter_before => filter_before,
             filter_memory_types => filter_memory_types, filter_categories => filter_categories,
             filter_exclude => v_exclude, filter_fields => filter_fields) v;
  end if;

  -- Does the query have an answer at all? Only when its best memory reaches a floor: keyword
  -- coverage keyword_threshold, or cosine similarity_threshold. Then memories reaching half those
  -- floors come with it (a multi-part answer's other parts match less of the question).
  v_best_cov := coalesce((select max(c) from unnest(v_kw_cov) c), 0);
  -- The answer to a question of many terms is usually spread over several memories, none
  -- matching most of it: past five terms, the floor is what five of them would need.
  v_min_cov := v_min_cov * least(1, 5.0 / greatest(cardinality(v_terms_all), 1));
  if not ((cardinality(v_kw_ids) > 0 and v_best_cov >= v_min_cov)
          or (cardinality(v_vec_ids) > 0 and v_vec_sims[1] > similarity_threshold)) then
    return;
  end if;
  -- A keyword list whose best match covers little of the query is mostly common words: it counts
  -- less, from nothing at a third of keyword_min_coverage to its full weight at it.
  if search_mode = 'hybrid' and v_conf > 0 then
    v_w_kw := v_w_kw * least(1, greatest(0, (v_best_cov - v_conf / 3) / (v_conf * 2 / 3)));
  end if;

  -- Each memory's share of the keyword and vector lists (1 for a list's first, parallel to the
  -- lists): its reciprocal rank (rrf_k + 1) / (rrf_k + rank), blended with its score as a share of
  -- the list's best by fusion_score_share (fusion_score_share_complex for a complex question: by
  -- rank alone, a memory answering one part of it, that one list ranks 3rd and the other does not
  -- hold, loses to memories both rank 10th-30th; docs/retrieval.md#fusion). Ranks are competition
  -- ranks: memories a signal scores alike get the same share.
  select coalesce(array_agg((1 - v_share) * (v_k + 1) / (v_k + x.rnk) + v_share * x.score / v_kw_score[1]
                            order by x.ord), '{}')
    into v_kw_share
    from (select y.score, y.ord, rank() over (order by y.score desc) as rnk
            from unnest(v_kw_score) with ordinality as y(score, ord)) x;
  select coalesce(array_agg((1 - v_share) * (v_k + 1) / (v_k + x.rnk)
                            + v_share * case when v_vec_sims[1] > 0 then greatest(x.sim, 0) / v_vec_sims[1] else 0 end
                            order by x.ord), '{}')
    into v_vec_share
    from (select y.sim, y.ord, rank() over (order by y.sim desc) as rnk
            from unnest(v_vec_sims) with ordinality as y(sim, ord)) x;

  -- Graph signal: from the best memories that pass on their own, hop over relations.
  if v_w_graph > 0 then
    select coalesce(array_agg(s.id order by s.fused desc, s.id), '{}') into v_seeds
      from (select u.id, sum(u.f) as fused
              from (select k.id, v_w_kw * k.sh as f
                      from unnest(v_kw_ids, v_kw_cov, v_kw_share) as k(id, cov, sh)
                     where k.cov >= v_min_cov / 2
                    union all
                    select v.id, v_w_vec * v.sh
                      from unnest(v_vec_ids, v_vec_share) as v(id, sh)) u
             group by u.id
             order by sum(u.f) desc, u.id
             limit v_seed_count) s;
    -- public.memory_graph_neighbours: bounded BFS over typed edges valid then, inside the scopes,
    -- both directions; entity lookup for who/what questions. Raw episodes only when asked for,
    -- at half weight.
    with reached as (
      select n.id, n.via, n.edge_type as edge, n.weight as w, false as lookup
        from public.memory_graph_neighbours(v_seeds, v_types, greatest(graph_depth, 1), least(v_pool, 500), as_of,
                                            v_bases, 'both') n
       where graph_depth > 0
      union all
      select e.id, e.entity_id, 'entity', e.weight, true
        from public.memory_entity_lookup(entity_terms, least(v_pool, 500), as_of, v_bases, match_owner) e
       where cardinality(coalesce(entity_terms, '{}')) > 0
      union all
      -- One hop through the entities the best hits name (a file, a package, an error code): the
      -- other memories naming them, weighted down by how common the entity is. Entities named by
      -- more than keyword_df_cap memories say little and are not followed. An edge of type
      -- 'entity': a graph_edge_types list that does not name it leaves the hop out (why/when
      -- questions follow only the edges their answer lives on; docs/retrieval.md#graph).
      select l2.memory_id, l1.memory_id, 'entity',
             0.5 * l1.confidence * l2.confidence / ln(2 + e.mention_count), false
        from public.memory_entity_links l1
        join public.memory_entities e on e.id = l1.entity_id and e.mention_count <= v_df_cap
        join public.memory_entity_links l2 on l2.entity_id = l1.entity_id and l2.memory_id <> l1.memory_id
        cross join lateral (select m2 from public.devai_memories m2 where m2.id = l2.memory_id offset 0) v2
       where graph_depth > 0
         and (graph_edge_types is null or 'entity' = any (graph_edge_types))
         and l1.memory_id = any (v_seeds)
         and public.memory_graph_visible(v2.m2, as_of, v_scopes)
    ),
    best as (
      select distinct on (r.id) r.id, r.via, r.edge,
             r.w * case when m.source = 'conversation' then 0.5 else 1 end as w
        from reached r
        cross join lateral (select m.* from public.devai_memories m where m.id = r.id offset 0) m
       -- A hop back to a best hit adds nothing; a name the question asks about counts for a best
       -- hit too (the lookup is a direct match, not a hop from it).
       where (r.lookup or not (r.id = any (v_seeds)))
         and (graph_episodes or m.source is distinct from 'conversation')
         and (as_of is not null or m.strength > 0.05) -- faded: out of every signal
         and (not v_filtered or memory_search.passes_filters(m.fts, m.created_at, m.memory_type, m.metadata, m.pinned, m.importance, m.updated_at,
                                                             v_exclude, filter_after, filter_before, filter_memory_types, filter_categories, filter_fields))
       order by r.id, r.w desc, r.via
    ),
    top as (
      select b.* from best b order by b.w desc, b.id limit v_pool
    )
    select coalesce(array_agg(t.id order by t.w desc, t.id), '{}'),
           coalesce(array_agg(t.w order by t.w desc, t.id), '{}'),
           coalesce(array_agg(t.via order by t.w desc, t.id), '{}'),
           coalesce(array_agg(t.edge order by t.w desc, t.id), '{}')
      into v_g_ids, v_g_weight, v_g_via, v_g_edge
      from top t;
  end if;

  -- Fusion: weighted shares of each list (keyword and vector: rank blended with score, above;
  -- graph and recency: reciprocal rank), normalised by what a memory first in every list that
  -- found anything would get (so a query with no keyword hit is not capped by the keyword
  -- weight), times 1.25 for a preferred type (capped at 1). A pinned single-signal mode ranks by
  -- that signal's own score instead.
  return query
  with kw as (
    select k.id, (rank() over (order by k.score desc))::integer as rnk, k.score, k.cov, k.sh
      from unnest(v_kw_ids, v_kw_score, v_kw_cov, v_kw_share) as k(id, score, cov, sh)
  ),
  vec as (
    select v.id, (rank() over (order by v.sim desc))::integer as rnk, v.sh
      from unnest(v_vec_ids, v_vec_sims, v_vec_share) as v(id, sim, sh)
  ),
  gr as (
    select g.id, (rank() over (order by g.w desc))::integer as rnk, g.via, g.edge
      from unnest(v_g_ids, v_g_weight, v_g_via, v_g_edge) as g(id, w, via, edge)
  ),
  candidates as (
    select u.id from (select kw.id from kw where kw.cov >= v_min_cov / 2
                      union select vec.id from vec
                      union select gr.id from gr) u
  ),
  recent as materialized (
    -- Only when recency counts ('when' questions), and once: not a plan per candidate.
    select c.id, row_number() over (order by m.created_at desc, c.id)::integer as rnk
      from candidates c
      cross join lateral (select m.created_at from public.devai_memories m where m.id = c.id offset 0) m
     where v_w_recent > 0
  ),
  fused as (
    select c.id, kw.rnk as kw_rnk, kw.score as kw_score, kw.cov as kw_cov, vec.rnk as vec_rnk,
           gr.rnk as g_rnk, gr.via as g_via, gr.edge as g_edge,
           (coalesce(v_w_kw * kw.sh, 0) + coalesce(v_w_vec * vec.sh, 0)
             + coalesce(v_w_graph * (v_k + 1) / (v_k + gr.rnk), 0) + coalesce(v_w_recent * (v_k + 1) / (v_k + rc.rnk), 0))
           / (case when cardinality(v_kw_ids) > 0 then v_w_kw else 0 end
              + case when cardinality(v_vec_ids) > 0 then v_w_vec else 0 end
              + case when cardinality(v_g_ids) > 0 then v_w_graph else 0 end
              + v_w_recent) as rel
      from candidates c
      left join kw on kw.id = c.id
      left join vec on vec.id = c.id
      left join gr on gr.id = c.id
      left join recent rc on rc.id = c.id
  ),
  final as (
    select f.*, m.strength as m_strength, m.created_at as m_created,
           -- A single signal keeps its own score (vector: cosine; keyword: coverage): nothing is fused.
           least(1, case search_mode when 'vector' then coalesce(vs.sim, 0)
                                     when 'keyword' then coalesce(f.kw_cov, 0)
                                     else f.rel end
                    * case when m.memory_type = any (coalesce(prefer_memory_types, '{}')) then 1.25 else 1 end) as relv
      from fused f
      cross join lateral (select m.strength, m.created_at, m.memory_type
                            from public.devai_memories m where m.id = f.id offset 0) m
      left join (select v.id, v.sim from unnest(v_vec_ids, v_vec_sims) as v(id, sim)) vs on vs.id = f.id
  ),
  top as (
    select x.* from final x order by x.relv * x.m_strength desc, x.m_created desc, x.id limit match_count
  )
  select m.id, case when as_of is null then m.content else (select a.content from public.memory_at(m.mrow, as_of) a) end,
         m.memory_type, m.namespace, m.strength, m.priority, m.importance, m.pinned,
         m.source, m.metadata, m.session_id, m.access_count, m.last_accessed_at, m.created_at, m.updated_at,
         rs.strength,
         case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end,
         -- Cosine similarity for every returned memory (the vector list has most of them already).
         coalesce((select v.sim from unnest(v_vec_ids, v_vec_sims) as v(id, sim) where v.id = m.id),
                  case when query_embedding is not null and m.embedding is not null
                            and m.embedding_model = match_embedding_model
                       then 1 - (m.embedding operator(extensions.<=>) query_embedding) end),
         t.kw_rnk, t.kw_score, t.kw_cov, t.vec_rnk, t.g_rnk, t.g_via, t.g_edge, t.relv
    from top t
    cross join lateral (select m.*, m as mrow from public.devai_memories m where m.id = t.id offset 0) m
    left join memory_search.relation_strengths(match_owner, array(select t2.id from top t2), as_of, v_scopes) rs
      on rs.id = t.id
   order by t.relv * t.m_strength desc, t.m_created desc, t.id;
end;
$$;
revoke all on function public.hybrid_search(text, extensions.vector, text[], integer, double precision, text, uuid, text, integer, text[], timestamp with time zone, timestamp with time zone, text[], text[], text[], double precision, double precision, timestamp with time zone, text[], boolean, text, jsonb) from public, anon, authenticated, service_role;
REVOKE ALL ON FUNCTION public.hybrid_search(query_text text, query_embedding extensions.vector, match_namespaces text[], match_count integer, similarity_threshold double precision, match_embedding_model text, match_owner uuid, search_mode text, graph_depth integer, graph_edge_types text[], filter_after timestamp with time zone, filter_before timestamp with time zone, filter_memory_types text[], filter_categories text[], prefer_memory_types text[], recency_weight double precision, keyword_threshold double precision, as_of timestamp with time zone, entity_terms text[], graph_episodes boolean, query_complexity text, filter_fields jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION public.hybrid_search(query_text text, query_embedding extensions.vector, match_namespaces text[], match_count integer, similarity_threshold double precision, match_embedding_model text, match_owner uuid, search_mode text, graph_depth integer, graph_edge_types text[], filter_after timestamp with time zone, filter_before timestamp with time zone, filter_memory_types text[], filter_categories text[], prefer_memory_types text[], recency_weight double precision, keyword_threshold double precision, as_of timestamp with time zone, entity_terms text[], graph_episodes boolean, query_complexity text, filter_fields jsonb) TO authenticated;
GRANT ALL ON FUNCTION public.hybrid_search(query_text text, query_embedding extensions.vector, match_namespaces text[], match_count integer, similarity_threshold double precision, match_embedding_model text, match_owner uuid, search_mode text, graph_depth integer, graph_edge_types text[], filter_after timestamp with time zone, filter_before timestamp with time zone, filter_memory_types text[], filter_categories text[], prefer_memory_types text[], recency_weight double precision, keyword_threshold double precision, as_of timestamp with time zone, entity_terms text[], graph_episodes boolean, query_complexity text, filter_fields jsonb) TO service_role;

create or replace function public.query_memories(query_text text, query_embedding extensions.vector, match_namespaces text[], match_agent text, match_categories text[], match_count integer DEFAULT 5, similarity_threshold double precision DEFAULT 0.7, match_embedding_model text DEFAULT 'text-embedding-3-small'::text, match_owner uuid DEFAULT auth.uid(), filter_user_id text DEFAULT NULL::text, filter_agent_id text DEFAULT NULL::text, filter_run_id text DEFAULT NULL::text, filter_actor_id text DEFAULT NULL::text, filter_role text DEFAULT NULL::text, filter_pinned boolean DEFAULT NULL::boolean, filter_importance_min integer DEFAULT NULL::integer, filter_importance_max integer DEFAULT NULL::integer, filter_updated_after timestamp with time zone DEFAULT NULL::timestamp with time zone, filter_updated_before timestamp with time zone DEFAULT NULL::timestamp with time zone, search_mode text DEFAULT 'hybrid'::text, graph_depth integer DEFAULT 1, filter_after timestamp with time zone DEFAULT NULL::timestamp with time zone, filter_before timestamp with time zone DEFAULT NULL::timestamp with time zone, keyword_threshold double precision DEFAULT NULL::double precision, as_of timestamp with time zone DEFAULT NULL::timestamp with time zone, query_complexity text DEFAULT NULL::text, graph_edge_types text[] DEFAULT NULL::text[], prefer_memory_types text[] DEFAULT NULL::text[], recency_weight double precision DEFAULT 0, entity_terms text[] DEFAULT NULL::text[], graph_episodes boolean DEFAULT false) RETURNS TABLE(id uuid, content text, similarity double precision, memory_type text, namespace text, category text, category_context text, strength double precision, priority text, importance smallint, pinned boolean, source text, metadata jsonb, session_id text, access_count integer, last_accessed_at timestamp with time zone, created_at timestamp with time zone, updated_at timestamp with time zone, max_relation_strength real, keyword_rank integer, keyword_score double precision, keyword_coverage double precision, vector_rank integer, graph_rank integer, graph_via uuid, graph_edge text, relevance double precision)
    LANGUAGE plpgsql STABLE ROWS 20
    SET search_path TO ''
    SET plan_cache_mode TO 'force_custom_plan'
    AS $$
#variable_conflict use_column
declare
  v_categories text[];
  v_all        text[];
  v_pool       integer;
  v_scopes     text[];
  v_exclude    tsquery;
  -- The field filters, for the search to apply as it searches (each list, and the context-all
  -- memories): applied after it, a filter on one user of a shared project found what passed
  -- among the best 20 (4 x match_count) of every user's memories, often nothing.
  v_fields     jsonb := nullif(jsonb_strip_nulls(jsonb_build_object(
                   'user_id', filter_user_id, 'agent_id', filter_agent_id, 'run_id', filter_run_id,
                   'actor_id', filter_actor_id, 'role', filter_role, 'pinned', filter_pinned,
                   'importance_min', filter_importance_min, 'importance_max', filter_importance_max,
                   'updated_after', filter_updated_after, 'updated_before', filter_updated_before)), '{}'::jsonb);
begin
  if match_count is null or match_count < 1 or match_count > 200 then
    raise exception 'match_count must be between 1 and 200, got %', match_count using errcode = '22023';
  end if;
  -- Only categories both requested and allowed for the agent; nothing allowed, nothing returned.
  select coalesce(array_agg(a.category), '{}'),
         coalesce(array_agg(a.category) filter (where c.context = 'all'), '{}')
    into v_categories, v_all
    from public.memory_agent_allowlists a
    join public.memory_categories c on c.name = a.category
   where a.agent = match_agent
     and a.category = any (coalesce(match_categories, '{}'::text[]));
  if cardinality(v_categories) = 0 then
    return;
  end if;
  select coalesce(array_agg(rtrim(s, '/') || '/'), '{}') into v_scopes
    from unnest(coalesce(match_namespaces, '{}'::text[])) as s
   where s is not null and rtrim(s, '/') <> '';
  if query_text ~ '(^|\s)-("|[[:alpha:]][^\s"])' then
    select string_agg(t.query::text, ' | ')::tsquery into v_exclude
      from public.memory_keyword_terms(query_text) t where t.kind = 'exclude';
  end if;
  -- Per-category caps apply after the search: look further than match_count.
  v_pool := least(match_count * 4, 200);

  return query
  with found as (
    select h.*
      from public.hybrid_search(
             query_text => query_text, query_embedding => query_embedding, match_namespaces => match_namespaces,
             match_count => v_pool, similarity_threshold => similarity_threshold,
             match_embedding_model => match_embedding_model, match_owner => match_owner, search_mode => search_mode,
             graph_depth => graph_depth, filter_after => filter_after, filter_before => filter_before,
             filter_categories => v_categories, keyword_threshold => keyword_threshold, as_of => as_of,
             query_complexity => query_complexity, graph_edge_types => graph_edge_types,
             prefer_memory_types => prefer_memory_types, recency_weight => recency_weight,
             entity_terms => entity_terms, graph_episodes => graph_episodes, filter_fields => v_fields) h
  ),
  everything as (
    -- context 'all' categories: their memories regardless of the query (most important first).
    select m.id, 0::double precision as relevance
      from public.devai_memories m
     where cardinality(v_all) > 0
       and m.owner_id = match_owner
       and m.source is distinct from 'conversation'
       and (case when as_of is null then m.is_valid and m.state = 'active' and m.strength > 0.05
                 else m.created_at <= as_of and (select a.held from public.memory_at(m, as_of) a) end)
       and (m.namespace || '/') ^@ any (v_scopes)
       -- Their categories; the time window, the exclusions and the field filters hold for them as for
       -- what the search found.
       and memory_search.passes_filters(m.fts, m.created_at, m.memory_type, m.metadata, m.pinned, m.importance,
                                        m.updated_at, v_exclude, filter_after, filter_before, null, v_all, v_fields)
       and not exists (select 1 from found f where f.id = m.id)
     order by m.importance desc, m.updated_at desc, m.id
     limit match_count
  ),
  candidates as (
    select f.id, f.relevance, f.similarity, f.keyword_rank, f.keyword_score, f.keyword_coverage, f.vector_rank,
           f.graph_rank, f.graph_via, f.graph_edge
      from found f
    union all
    select e.id, e.relevance, null, null, null, null, null, null, null, null from everything e
  ),
  eligible as (
    select c.*, m.strength as m_strength, m.created_at as m_created,
           case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end as cat
      from candidates c
      cross join lateral (select m.* from public.devai_memories m where m.id = c.id offset 0) m
  ),
  capped as (
    select e.*, cfg.context as cat_context, cfg.rag_length,
           row_number() over (partition by e.cat order by e.relevance * e.m_strength desc, e.m_created desc, e.id) as rank_in_category
      from eligible e
      join public.memory_categories cfg on cfg.name = e.cat
  ),
  top as (
    select k.* from capped k
     where k.rag_length is null or k.rank_in_category <= k.rag_length
     order by k.relevance * k.m_strength desc, k.m_created desc, k.id
     limit match_count
  )
  select m.id, case when as_of is null then m.content else (select a.content from public.memory_at(m.mrow, as_of) a) end,
         t.similarity, m.memory_type, m.namespace, t.cat, t.cat_context,
         m.strength, m.priority, m.importance, m.pinned, m.source, m.metadata, m.session_id,
         m.access_count, m.last_accessed_at, m.created_at, m.updated_at,
         rs.strength,
         t.keyword_rank, t.keyword_score, t.keyword_coverage, t.vector_rank, t.graph_rank, t.graph_via, t.graph_edge,
         t.relevance
    from top t
    cross join lateral (select m.*, m as mrow from public.devai_memories m where m.id = t.id offset 0) m
    left join memory_search.relation_strengths(match_owner, array(select t2.id from top t2), as_of, v_scopes) rs
      on rs.id = t.id
   order by t.relevance * t.m_strength desc, t.m_created desc, t.id;
end;
$$;
revoke all on function public.query_memories(text, extensions.vector, text[], text, text[], integer, double precision, text, uuid, text, text, text, text, text, boolean, integer, integer, timestamp with time zone, timestamp with time zone, text, integer, timestamp with time zone, timestamp with time zone, double precision, timestamp with time zone, text, text[], text[], double precision, text[], boolean) from public, anon, authenticated, service_role;
REVOKE ALL ON FUNCTION public.query_memories(query_text text, query_embedding extensions.vector, match_namespaces text[], match_agent text, match_categories text[], match_count integer, similarity_threshold double precision, match_embedding_model text, match_owner uuid, filter_user_id text, filter_agent_id text, filter_run_id text, filter_actor_id text, filter_role text, filter_pinned boolean, filter_importance_min integer, filter_importance_max integer, filter_updated_after timestamp with time zone, filter_updated_before timestamp with time zone, search_mode text, graph_depth integer, filter_after timestamp with time zone, filter_before timestamp with time zone, keyword_threshold double precision, as_of timestamp with time zone, query_complexity text, graph_edge_types text[], prefer_memory_types text[], recency_weight double precision, entity_terms text[], graph_episodes boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION public.query_memories(query_text text, query_embedding extensions.vector, match_namespaces text[], match_agent text, match_categories text[], match_count integer, similarity_threshold double precision, match_embedding_model text, match_owner uuid, filter_user_id text, filter_agent_id text, filter_run_id text, filter_actor_id text, filter_role text, filter_pinned boolean, filter_importance_min integer, filter_importance_max integer, filter_updated_after timestamp with time zone, filter_updated_before timestamp with time zone, search_mode text, graph_depth integer, filter_after timestamp with time zone, filter_before timestamp with time zone, keyword_threshold double precision, as_of timestamp with time zone, query_complexity text, graph_edge_types text[], prefer_memory_types text[], recency_weight double precision, entity_terms text[], graph_episodes boolean) TO authenticated;
GRANT ALL ON FUNCTION public.query_memories(query_text text, query_embedding extensions.vector, match_namespaces text[], match_agent text, match_categories text[], match_count integer, similarity_threshold double precision, match_embedding_model text, match_owner uuid, filter_user_id text, filter_agent_id text, filter_run_id text, filter_actor_id text, filter_role text, filter_pinned boolean, filter_importance_min integer, filter_importance_max integer, filter_updated_after timestamp with time zone, filter_updated_before timestamp with time zone, search_mode text, graph_depth integer, filter_after timestamp with time zone, filter_before timestamp with time zone, keyword_threshold double precision, as_of timestamp with time zone, query_complexity text, graph_edge_types text[], prefer_memory_types text[], recency_weight double precision, entity_terms text[], graph_episodes boolean) TO service_role;

-- memory_scope_size: main as of 2026-11-23 18:46 had another body (20261124800000's first text).
create or replace function public.memory_scope_size(p_owner uuid, p_bases text[], p_cap integer) RETURNS integer
    LANGUAGE plpgsql STABLE
    SET search_path TO ''
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
begin
  return (
    select count(*)::integer
      from (select 1
              from unnest(p_bases, array(select x || '0' from unnest(p_bases) with ordinality as u(x, o) order by o))
                   as b(base, upper)
             cross join lateral (
               select 1 from public.devai_memories m
                where m.owner_id = p_owner and m.is_valid and m.state = 'active'
                  and m.namespace operator(pg_catalog.~>=~) b.base
                  and m.namespace operator(pg_catalog.~<~) b.upper
                  and (m.namespace = b.base or m.namespace ^@ (b.base || '/'))
                limit p_cap + 1) as hit
             limit p_cap + 1) as counted);
end;
$$;
revoke all on function public.memory_scope_size(uuid, text[], integer) from public, anon, authenticated, service_role;
REVOKE ALL ON FUNCTION public.memory_scope_size(p_owner uuid, p_bases text[], p_cap integer) FROM PUBLIC;
GRANT ALL ON FUNCTION public.memory_scope_size(p_owner uuid, p_bases text[], p_cap integer) TO authenticated;
GRANT ALL ON FUNCTION public.memory_scope_size(p_owner uuid, p_bases text[], p_cap integer) TO service_role;

-- memory_private.end_memory_sessions: main as of 2026-11-27 22:52-22:58 had 20261128930000's text (since folded into 20261128960000).
create or replace function memory_private.end_memory_sessions(p_ids uuid[], p_reason text, p_now timestamp with time zone DEFAULT now()) RETURNS TABLE(id uuid, session_id text, job_id uuid, ended_now boolean)
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $$
declare
  v_owner uuid := (select auth.uid());
  v_ended uuid[];
begin
  if p_reason is null or p_reason not in ('explicit', 'new_session', 'idle') then
    raise exception 'p_reason must be explicit, new_session or idle, got %', p_reason using errcode = '22023';
  end if;
  -- ended_at is never before the session's last episode. It was p_now, the caller's transaction
  -- start: an end whose transaction began before a batch of the session (or that waited for the
  -- session's row while a batch held it: an explicit end, or a new session of the thread ending
  -- the earlier one) ended it before the episodes the batch committed; so did a batch's `at` ahead
  -- of the server's clock (up to five minutes of skew are accepted). This UPDATE takes the row
  -- lock, and one that waited re-reads the row the batch committed (READ COMMITTED re-evaluates
  -- the SET on the newest version): the end covers every episode stored before it, by the lock.
  -- A batch after the end finds ended_at set under the same lock (409 session_ended).
  with ended as (
    update public.memory_sessions s
       set ended_at = greatest(p_now, s.last_event_at), end_reason = p_reason
     where s.id = any (p_ids) and s.ended_at is null and (v_owner is null or s.owner_id = v_owner)
    returning s.id
  )
  select coalesce(array_agg(e.id), '{}') into v_ended from ended e;

  insert into public.memory_jobs (owner_id, kind, payload, idempotency_key)
  select s.owner_id, 'consolidate', jsonb_build_object('session_id', s.session_id), 'consolidate:' || s.session_id
    from public.memory_sessions s
   where s.id = any (p_ids) and s.ended_at is not null and s.consolidation_job_id is null
     and (v_owner is null or s.owner_id = v_owner)
   order by s.id
  on conflict (owner_id, kind, idempotency_key) do nothing;

  update public.memory_sessions s
     set consolidation_job_id = j.id
    from public.memory_jobs j
   where s.id = any (p_ids) and s.ended_at is not null and s.consolidation_job_id is null
     and (v_owner is null or s.owner_id = v_owner)
     and j.owner_id = s.owner_id and j.kind = 'consolidate' and j.idempotency_key = 'consolidate:' || s.session_id;

  return query
  select s.id, s.session_id, s.consolidation_job_id, s.id = any (v_ended)
    from public.memory_sessions s
   where s.id = any (p_ids) and (v_owner is null or s.owner_id = v_owner)
   order by s.id;
end;
$$;
revoke all on function memory_private.end_memory_sessions(uuid[], text, timestamp with time zone) from public, anon, authenticated, service_role;
REVOKE ALL ON FUNCTION memory_private.end_memory_sessions(p_ids uuid[], p_reason text, p_now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION memory_private.end_memory_sessions(p_ids uuid[], p_reason text, p_now timestamp with time zone) TO service_role;

-- prune_context_sessions: main as of 2026-11-27 20:40 had 20261128870100's text (since folded into 20261128870000).
create or replace function memory_private.prune_context_sessions(p_now timestamp with time zone DEFAULT now()) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $$
declare
  v_cutoff     timestamptz := p_now - make_interval(secs => public.memory_setting('context_session_retention_hours')::double precision * 3600);
  v_prefetch   bigint;
  v_injections bigint;
  v_usage      bigint;
begin
  delete from public.context_prefetch where computed_at < v_cutoff;
  get diagnostics v_prefetch = row_count;
  delete from public.context_injections where injected_at < v_cutoff;
  get diagnostics v_injections = row_count;
  delete from public.memory_usage_sessions where reported_at < v_cutoff;
  get diagnostics v_usage = row_count;
  return jsonb_build_object('prefetch', v_prefetch, 'injections', v_injections, 'usage_sessions', v_usage);
end;
$$;
revoke all on function memory_private.prune_context_sessions(timestamp with time zone) from public, anon, authenticated, service_role;
REVOKE ALL ON FUNCTION memory_private.prune_context_sessions(p_now timestamp with time zone) FROM PUBLIC;

-- The index prune_context_sessions deletes by (20261128870000's final text).
-- (create index if not exists would lock the table against writes even where the index exists.)
do $$
begin
  if to_regclass('public.memory_usage_sessions_reported_at') is null then
    create index memory_usage_sessions_reported_at on public.memory_usage_sessions (reported_at);
  end if;
end;
$$;

-- The dedicated vector index's helpers: main as of 2026-11-24 09:58 had 20261125760300's first text (another name, the same version).
create or replace function public.memory_vector_index_of(p_owner uuid) RETURNS regclass
    LANGUAGE plpgsql STABLE
    SET search_path TO ''
    AS $$
begin
  return coalesce((select i.indexrelid::regclass
                     from pg_catalog.pg_index i
                    where i.indexrelid = to_regclass('public.devai_memories_hnsw_owner_' || replace(p_owner::text, '-', ''))
                      and i.indisvalid),
                  to_regclass('public.devai_memories_embedding_hnsw'));
end;
$$;
revoke all on function public.memory_vector_index_of(uuid) from public, anon, authenticated, service_role;
REVOKE ALL ON FUNCTION public.memory_vector_index_of(p_owner uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION public.memory_vector_index_of(p_owner uuid) TO authenticated;
GRANT ALL ON FUNCTION public.memory_vector_index_of(p_owner uuid) TO service_role;

create or replace function public.memory_dedicated_vector_index_sql(p_owner uuid, p_drop boolean DEFAULT false) RETURNS text
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO ''
    AS $$
declare
  v_name text := 'devai_memories_hnsw_owner_' || replace(p_owner::text, '-', '');
begin
  if p_owner is null then
    raise exception 'a tenant id is required' using errcode = '22023';
  end if;
  if p_drop then
    return format('drop index concurrently if exists public.%I', v_name);
  end if;
  return format('create index concurrently if not exists %I on public.devai_memories '
                || 'using hnsw (embedding extensions.vector_cosine_ops) with (m = 16, ef_construction = 64) '
                || 'where owner_id = %L::uuid and is_valid and state = ''active'' '
                || 'and source is distinct from ''conversation''', v_name, p_owner);
end;
$$;
revoke all on function public.memory_dedicated_vector_index_sql(uuid, boolean) from public, anon, authenticated, service_role;
REVOKE ALL ON FUNCTION public.memory_dedicated_vector_index_sql(p_owner uuid, p_drop boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION public.memory_dedicated_vector_index_sql(p_owner uuid, p_drop boolean) TO service_role;

-- The bulk-update triggers skip their per-row work only for the owner roles (20261124800100's
-- final text: in its first text any session that set memory.bulk skipped them), and job_keep_days
-- is at least 1 day (20261128620000's final text; its first allowed 0, which deleted a finished job
-- at once). Each is made again only where its definition differs from a fresh install's: creating
-- a trigger locks devai_memories against every write, and a check constraint locks memory_settings
-- (which memory_setting() reads on almost every request) against every read, until this
-- migration commits. A fresh install takes neither lock. Where both differ, memory_settings is
-- locked before devai_memories, the order the service takes them in (a request reads a setting,
-- then writes a memory; so does memory_private.decay_page_range): the other order deadlocked with
-- such a request.
do $$
declare
  v_close text := 'CREATE TRIGGER devai_memories_close_validity BEFORE UPDATE OF is_valid, superseded_by ON public.devai_memories FOR EACH ROW WHEN (((current_setting(''memory.bulk''::text, true) IS DISTINCT FROM ''on''::text) OR (CURRENT_USER <> ALL (ARRAY[''postgres''::name, ''service_role''::name])))) EXECUTE FUNCTION memory_private.close_fact_validity()';
  v_touch text := 'CREATE TRIGGER devai_memories_touch_updated_at BEFORE UPDATE ON public.devai_memories FOR EACH ROW WHEN ((((old.content IS DISTINCT FROM new.content) OR (old.embedding_model IS DISTINCT FROM new.embedding_model) OR (old.memory_type IS DISTINCT FROM new.memory_type) OR (old.namespace IS DISTINCT FROM new.namespace) OR (old.priority IS DISTINCT FROM new.priority) OR (old.source IS DISTINCT FROM new.source) OR (old.is_valid IS DISTINCT FROM new.is_valid) OR (old.superseded_by IS DISTINCT FROM new.superseded_by) OR (old.importance IS DISTINCT FROM new.importance) OR (old.pinned IS DISTINCT FROM new.pinned) OR (old.state IS DISTINCT FROM new.state) OR (old.metadata IS DISTINCT FROM new.metadata)) AND ((current_setting(''memory.bulk''::text, true) IS DISTINCT FROM ''on''::text) OR (CURRENT_USER <> ALL (ARRAY[''postgres''::name, ''service_role''::name]))))) EXECUTE FUNCTION memory_private.touch_updated_at()';
  v_check text := 'CHECK (((name <> ''job_keep_days''::text) OR (value >= (1)::numeric)))';
  v_close_differs boolean;
  v_touch_differs boolean;
  v_check_differs boolean;
begin
  -- The catalogs are read without a lock on either table.
  select pg_catalog.pg_get_triggerdef(t.oid) is distinct from v_close into v_close_differs
    from (select) x left join pg_catalog.pg_trigger t
      on t.tgrelid = 'public.devai_memories'::regclass and t.tgname = 'devai_memories_close_validity';
  select pg_catalog.pg_get_triggerdef(t.oid) is distinct from v_touch into v_touch_differs
    from (select) x left join pg_catalog.pg_trigger t
      on t.tgrelid = 'public.devai_memories'::regclass and t.tgname = 'devai_memories_touch_updated_at';
  select pg_catalog.pg_get_constraintdef(c.oid) is distinct from v_check into v_check_differs
    from (select) x left join pg_catalog.pg_constraint c
      on c.conrelid = 'public.memory_settings'::regclass and c.conname = 'memory_settings_job_keep_days_range';
  if v_check_differs then
    lock table public.memory_settings in access exclusive mode;
  end if;
  if v_close_differs or v_touch_differs then
    lock table public.devai_memories in share row exclusive mode;
  end if;
  if v_check_differs then
    alter table public.memory_settings drop constraint if exists memory_settings_job_keep_days_range;
    alter table public.memory_settings
      add constraint memory_settings_job_keep_days_range check (name <> 'job_keep_days' or value >= 1);
  end if;
  if v_close_differs then
    create or replace trigger devai_memories_close_validity BEFORE UPDATE OF is_valid, superseded_by ON public.devai_memories FOR EACH ROW WHEN (((current_setting('memory.bulk'::text, true) IS DISTINCT FROM 'on'::text) OR (CURRENT_USER <> ALL (ARRAY['postgres'::name, 'service_role'::name])))) EXECUTE FUNCTION memory_private.close_fact_validity();
  end if;
  if v_touch_differs then
    create or replace trigger devai_memories_touch_updated_at BEFORE UPDATE ON public.devai_memories FOR EACH ROW WHEN ((((old.content IS DISTINCT FROM new.content) OR (old.embedding_model IS DISTINCT FROM new.embedding_model) OR (old.memory_type IS DISTINCT FROM new.memory_type) OR (old.namespace IS DISTINCT FROM new.namespace) OR (old.priority IS DISTINCT FROM new.priority) OR (old.source IS DISTINCT FROM new.source) OR (old.is_valid IS DISTINCT FROM new.is_valid) OR (old.superseded_by IS DISTINCT FROM new.superseded_by) OR (old.importance IS DISTINCT FROM new.importance) OR (old.pinned IS DISTINCT FROM new.pinned) OR (old.state IS DISTINCT FROM new.state) OR (old.metadata IS DISTINCT FROM new.metadata)) AND ((current_setting('memory.bulk'::text, true) IS DISTINCT FROM 'on'::text) OR (CURRENT_USER <> ALL (ARRAY['postgres'::name, 'service_role'::name]))))) EXECUTE FUNCTION memory_private.touch_updated_at();
  end if;
end;
$$;

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

-- Extract marks are keyed by (job_id, position) (20261128610000's final text); its first text had
-- no primary key and an index on job_id alone. A duplicate mark (possible without the key) says
-- the same as the one kept.
do $$
begin
  if not exists (select from pg_catalog.pg_constraint
                  where conrelid = 'public.memory_extract_marks'::regclass and contype = 'p') then
    delete from public.memory_extract_marks m
     using public.memory_extract_marks d
     where d.job_id = m.job_id and d.position = m.position and d.ctid < m.ctid;
    alter table public.memory_extract_marks
      add constraint memory_extract_marks_pkey primary key (job_id, position);
  end if;
end;
$$;
drop index if exists public.memory_extract_marks_by_job;
