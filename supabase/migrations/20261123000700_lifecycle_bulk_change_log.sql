-- Lighter writes for the nightly jobs, same results.
--
-- 1. The change log and thread revisions of a batch are written per tenant, not per row. The
--    history trigger bumped the tenant's thread revision row once per DECAY / TTL change, so one
--    transaction updated the same row once per change of that tenant: a HOT chain as long as the
--    tenant's changes, walked by every later bump (and by the change log's foreign-key check).
--    That is quadratic: on a 1M-memory TTL catch-up night (136k soft-deletes over 100 tenants, so
--    ~1,360 bumps of each tenant's row in one transaction) a profile showed heap_hot_search_buffer
--    and buffer lookups on top, and the run took 215 s. Now decay_page_range and ttl_page_range set
--    memory.change_log = 'bulk' for their UPDATE: record_memory_write still writes every history
--    row, but leaves the change log to the job, which after the UPDATE bumps each tenant's
--    revision once by the number of its changes and writes their change-log rows with consecutive
--    revisions (memory_private.log_changes_in_bulk). The same rows as before; within one batch a
--    tenant's revisions now follow memory-id order instead of heap order. The setting is only a
--    writer's promise to log the change itself: a tenant that set it would only leave its own
--    changes out of its own delta header, never out of the history.
-- 2. decay_page_range no longer switches to session_replication_role = replica for the rows that
--    only change strength. What made those updates slow was not the triggers but the stored
--    generated columns Postgres recomputed on every update of a table with a BEFORE ROW UPDATE
--    trigger, replica or not (fixed in 20261123000600); measured on the 1M benchmark after that
--    fix, the replica switch no longer changed the time. Without it the job behaves the same for
--    every role: no superuser or supautils privilege is tried.

-- The meta of a change-log row: what the delta header shows about the memory, and the history
-- event behind the change. Called by record_memory_write and log_changes_in_bulk, so both write
-- the same shape. Takes the fields, not the row: a whole row as a value would read the
-- embedding out of TOAST for nothing.
create or replace function memory_private.change_log_meta(
  p_memory_type text, p_namespace text, p_importance smallint, p_metadata jsonb, p_history_event text)
returns jsonb
language sql
immutable
set search_path = ''
as $$
  select jsonb_build_object('memory_type', p_memory_type, 'namespace', p_namespace,
                            'importance', p_importance, 'category', p_metadata ->> 'category',
                            'history_event', p_history_event)
$$;
revoke all on function memory_private.change_log_meta(text, text, smallint, jsonb, text) from public;
grant execute on function memory_private.change_log_meta(text, text, smallint, jsonb, text) to service_role;

-- Writes memory_history and memory_change_log for every insert, meaningful update and delete of a
-- memory, as in 20261122000300, with one addition: when the writer has set memory.change_log =
-- 'bulk' (transaction-local, the lifecycle jobs around one UPDATE), the change log and the thread
-- revision are left to that writer (memory_private.log_changes_in_bulk); the history row is
-- written all the same. Event inference (memory.event may refine it, never invent one):
--   insert → ADD; physical delete → PURGE;
--   active → soft_deleted → DELETE (TTL when memory.event = 'TTL');
--   soft_deleted → active, or invalid → valid → RESTORE;
--   valid → invalid → DELETE (DECAY when memory.event = 'DECAY'; MERGE when superseded);
--   superseded_by newly set → MERGE; anything else → UPDATE (MERGE when memory.event = 'MERGE').
create or replace function memory_private.record_memory_write()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
declare
  v_hint   text := upper(coalesce(nullif(current_setting('memory.event', true), ''), ''));
  v_thread text := coalesce(nullif(current_setting('memory.thread_id', true), ''), 'default');
  v_actor  text := memory_private.current_actor();
  v_event  text;
  v_change text;
  v_row    public.devai_memories;
  v_rev    bigint;
begin
  if tg_op = 'INSERT' then
    v_row := new; v_event := 'ADD'; v_change := 'created';
  elsif tg_op = 'DELETE' then
    v_row := old; v_event := 'PURGE'; v_change := null;
  else
    v_row := new;
    if old.state = 'active' and new.state = 'soft_deleted' then
      v_event := case when v_hint = 'TTL' then 'TTL' else 'DELETE' end; v_change := 'soft_deleted';
    elsif old.state = 'soft_deleted' and new.state = 'active' then
      v_event := 'RESTORE'; v_change := 'restored';
    elsif old.is_valid and not new.is_valid then
      v_event := case when v_hint = 'DECAY' then 'DECAY'
                      when new.superseded_by is not null or v_hint = 'MERGE' then 'MERGE'
                      else 'DELETE' end;
      v_change := case when v_event = 'MERGE' then 'merged' else 'deleted' end;
    elsif not old.is_valid and new.is_valid then
      v_event := 'RESTORE'; v_change := 'restored';
    elsif new.superseded_by is not null and old.superseded_by is distinct from new.superseded_by then
      v_event := 'MERGE'; v_change := 'merged';
    else
      v_event := case when v_hint = 'MERGE' then 'MERGE' else 'UPDATE' end;
      v_change := case when v_event = 'MERGE' then 'merged' else 'updated' end;
    end if;
  end if;

  insert into public.memory_history (owner_id, memory_id, event, old_ref, new_ref, actor, old_content, new_content, meta)
  values (
    v_row.owner_id, v_row.id, v_event,
    case when tg_op = 'INSERT' then null else old.id end,
    case when tg_op = 'DELETE' then null when tg_op = 'UPDATE' and new.superseded_by is not null then new.superseded_by else new.id end,
    v_actor,
    case when tg_op = 'INSERT' then null else old.content end,
    case when tg_op = 'DELETE' then null else new.content end,
    memory_private.history_snapshot(v_row) || jsonb_build_object('thread_id', v_thread)
  );

  if v_change is not null and current_setting('memory.change_log', true) is distinct from 'bulk' then
    v_rev := memory_private.bump_thread_revision(v_row.owner_id, v_thread);
    insert into public.memory_change_log (owner_id, thread_id, revision, memory_id, event, summary, meta)
    values (v_row.owner_id, v_thread, v_rev, v_row.id, v_change, left(v_row.content, 200),
            memory_private.change_log_meta(v_row.memory_type, v_row.namespace, v_row.importance, v_row.metadata, v_event));
  end if;
  return null;
end;
$$;
revoke all on function memory_private.record_memory_write() from public;


-- The change log of one bulk change (a lifecycle batch): for the memories p_ids, as they are now,
-- bumps each tenant's thread revision (memory.thread_id, default 'default') once by its number
-- of changes, locking the tenants' revision rows in owner_id order, and writes one change-log row
-- per memory with consecutive revisions after the previous one (ordered by memory id), event
-- p_change ('deleted', 'soft_deleted') and history event p_history_event in meta. Returns the
-- number of rows logged. Called by decay_page_range and ttl_page_range after their UPDATE, which
-- ran with memory.change_log = 'bulk'.
create or replace function memory_private.log_changes_in_bulk(p_ids uuid[], p_change text, p_history_event text)
returns bigint
language plpgsql
volatile
security invoker
set search_path = ''
as $$
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
revoke all on function memory_private.log_changes_in_bulk(uuid[], text, text) from public;
grant execute on function memory_private.log_changes_in_bulk(uuid[], text, text) to service_role;

-- Decays the active, valid memories stored in heap pages [p_first_page, p_first_page +
-- p_page_count) and invalidates those that fall below prune_threshold (DECAY history event).
-- Exempt: priority 'highest', pinned, soft-deleted and already invalid rows. Rows whose strength
-- would not change are not written. Two UPDATEs over a TID range scan, the unit of batching:
--   1. rows that stay at or above the threshold: only strength changes. No trigger does anything
--      for such a change (the WHEN clauses of the audit and updated_at triggers are false, the
--      content trigger is for content only) and strength is in no index, so with the table's
--      free page room (fillfactor 50) it is a HOT update that writes no index entry.
--   2. rows that fall below the threshold: strength and is_valid = false, so the history records
--      DECAY (memory.event) by cron:decay (memory.actor); their change log ('deleted') is written
--      per tenant by log_changes_in_bulk.
-- Called by apply_page_ranges (for run_decay and run_decay_step).
create or replace function memory_private.decay_page_range(
  p_now timestamptz,
  p_first_page bigint,
  p_page_count bigint
)
returns table (decayed bigint, invalidated bigint)
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
  v_base       double precision := public.memory_setting('decay_base')::double precision;
  v_prune      double precision := public.memory_setting('prune_threshold')::double precision;
  v_max_days   double precision := case when v_base >= 1 then 0 else floor(-300 / ln(v_base)) end;
  v_from       tid := format('(%s,0)', p_first_page)::tid;
  v_to         tid := format('(%s,0)', p_first_page + p_page_count)::tid;
  v_prev_event text := current_setting('memory.event', true);
  v_prev_actor text := current_setting('memory.actor', true);
  v_prev_log   text := current_setting('memory.change_log', true);
  v_ids        uuid[];
begin
  -- The expression below is public.memory_decayed_strength(base_strength, last_accessed_at,
  -- p_now, decay_base), written out so the planner evaluates it inline (a function with a SET
  -- clause is never inlined).

  -- 1. strength-only changes
  update public.devai_memories m
     set strength = m.base_strength * power(v_base, least(v_max_days,
           greatest(0::double precision, floor(date_part('epoch', p_now - m.last_accessed_at) / 86400))))
   where m.ctid >= v_from and m.ctid < v_to
     and m.is_valid
     and m.state = 'active'
     and m.priority <> 'highest'
     and not m.pinned
     and m.base_strength * power(v_base, least(v_max_days,
           greatest(0::double precision, floor(date_part('epoch', p_now - m.last_accessed_at) / 86400)))) >= v_prune
     and m.strength is distinct from m.base_strength * power(v_base, least(v_max_days,
           greatest(0::double precision, floor(date_part('epoch', p_now - m.last_accessed_at) / 86400))));
  get diagnostics decayed = row_count;

  -- 2. invalidations, audited: a history row each (trigger), the change log per tenant (below)
  perform set_config('memory.event', 'DECAY', true);
  perform set_config('memory.actor', coalesce(nullif(v_prev_actor, ''), 'cron:decay'), true);
  perform set_config('memory.change_log', 'bulk', true);
  with changed as (
  update public.devai_memories m
     set strength = m.base_strength * power(v_base, least(v_max_days,
           greatest(0::double precision, floor(date_part('epoch', p_now - m.last_accessed_at) / 86400)))),
         is_valid = false
   where m.ctid >= v_from and m.ctid < v_to
     and m.is_valid
     and m.state = 'active'
     and m.priority <> 'highest'
     and not m.pinned
     and m.base_strength * power(v_base, least(v_max_days,
           greatest(0::double precision, floor(date_part('epoch', p_now - m.last_accessed_at) / 86400)))) < v_prune
  returning m.id
  )
  select array_agg(c.id) into v_ids from changed c;
  perform set_config('memory.change_log', coalesce(v_prev_log, ''), true);
  invalidated := coalesce(cardinality(v_ids), 0);
  perform memory_private.log_changes_in_bulk(v_ids, 'deleted', 'DECAY');
  decayed := decayed + invalidated;
  perform set_config('memory.event', coalesce(v_prev_event, ''), true);
  perform set_config('memory.actor', coalesce(v_prev_actor, ''), true);
  return next;
end;
$$;
revoke all on function memory_private.decay_page_range(timestamptz, bigint, bigint) from public;
grant execute on function memory_private.decay_page_range(timestamptz, bigint, bigint) to service_role;

-- TTL soft-delete (seed 001 §7) of the memories stored in heap pages [p_first_page,
-- p_first_page + p_page_count): the active memories last accessed MORE than ttl_idle_days ago
-- (days of 86,400 s) whose importance is strictly below ttl_importance_below, except pinned
-- ones, priority 'highest' and source 'user_stated' (what the user said is never forgotten by a
-- timer). Valid or not: decay invalidates an idle memory after ~59 days, TTL then retires it.
-- Sets state = 'soft_deleted', purge_at = p_now + purge_grace_days; the trigger records a TTL
-- history event by cron:ttl; the 'soft_deleted' change-log entries (the delta header shows each
-- once) are written per tenant by log_changes_in_bulk. One UPDATE over a TID range scan, the
-- unit of batching. Called by apply_page_ranges (for run_ttl and run_ttl_step).
create or replace function memory_private.ttl_page_range(
  p_now timestamptz,
  p_first_page bigint,
  p_page_count bigint
)
returns table (soft_deleted bigint)
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
  v_idle       interval := make_interval(secs => public.memory_setting('ttl_idle_days')::double precision * 86400);
  v_grace      interval := make_interval(secs => public.memory_setting('purge_grace_days')::double precision * 86400);
  v_below      numeric := public.memory_setting('ttl_importance_below');
  v_prev_event text := current_setting('memory.event', true);
  v_prev_actor text := current_setting('memory.actor', true);
  v_prev_log   text := current_setting('memory.change_log', true);
  v_ids        uuid[];
begin
  perform set_config('memory.event', 'TTL', true);
  perform set_config('memory.actor', coalesce(nullif(v_prev_actor, ''), 'cron:ttl'), true);
  perform set_config('memory.change_log', 'bulk', true);
  with changed as (
    update public.devai_memories m
       set state = 'soft_deleted',
           purge_at = p_now + v_grace
     where m.ctid >= format('(%s,0)', p_first_page)::tid
       and m.ctid < format('(%s,0)', p_first_page + p_page_count)::tid
       and m.state = 'active'
       and not m.pinned
       and m.priority <> 'highest'
       and m.source is distinct from 'user_stated'
       and m.importance < v_below
       and m.last_accessed_at < p_now - v_idle
    returning m.id
  )
  select array_agg(c.id) into v_ids from changed c;
  perform set_config('memory.change_log', coalesce(v_prev_log, ''), true);
  soft_deleted := coalesce(cardinality(v_ids), 0);
  perform memory_private.log_changes_in_bulk(v_ids, 'soft_deleted', 'TTL');
  perform set_config('memory.event', coalesce(v_prev_event, ''), true);
  perform set_config('memory.actor', coalesce(v_prev_actor, ''), true);
  return next;
end;
$$;
revoke all on function memory_private.ttl_page_range(timestamptz, bigint, bigint) from public;
grant execute on function memory_private.ttl_page_range(timestamptz, bigint, bigint) to service_role;
