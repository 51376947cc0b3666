-- Decay and TTL take their tenants' thread revision rows after every memory they lock: no
-- deadlock between a step call and a tenant's write (docs/operations.md#lock-order).
--
-- A step call (run_decay_step, run_ttl_step: up to 5 batches in one transaction) bumped the
-- revision rows (public.memory_thread_revisions) of the tenants a batch changed right after that
-- batch (log_changes_in_bulk in decay_page_range and ttl_page_range) and held them to commit,
-- while its later batches went on locking memories. A tenant's write that had locked a memory in
-- a later batch's pages and then committed (its change-log rows get their revisions at commit,
-- 20261129300000, from the row the step held) waited for the step, and the step waited for that
-- memory: Postgres broke the cycle by rolling the write back (40P01, answered 409 `conflict`;
-- tests/lifecycle_step_revision_order.test.ts). Now the page ranges only return the ids they
-- changed, and apply_page_ranges writes the change log of the whole call once, after its last
-- batch (log_changes_in_bulk: each tenant's revision bumped once by its number of changes, the
-- rows locked in owner_id order). So a call locks memory rows while its batches run and its
-- revision rows last, as every other writer does: a write waiting for one of its memories holds
-- no revision row the step wants before its own commit, and the step then holds its revision rows
-- only for its progress update and its commit.
--
-- The change log is the same set of rows, one per change, consecutive revisions per tenant; within
-- one call a tenant's revisions now follow memory-id order over the whole call (before: batch by
-- batch, in memory-id order within each). Readers saw nothing of a call before its commit, so what
-- they see is unchanged. The one-shot forms (run_decay, run_ttl) share apply_page_ranges and so log
-- once at the end of their single transaction too.
--
-- Not per row through the commit-time trigger (change-log rows with revision 0): each row would
-- bump its tenant's revision row once more in the same transaction, the quadratic chain of
-- versions 20261123000700 removed.

-- decay_page_range and ttl_page_range return the ids they changed (a new output column), so
-- they are dropped and made again; apply_page_ranges is their only caller.
drop function memory_private.decay_page_range(timestamptz, bigint, bigint);
drop function memory_private.ttl_page_range(timestamptz, bigint, bigint);

-- Decays the active, valid memories stored in heap pages [p_first_page, p_first_page +
-- p_page_count) and invalidates those that fall below prune_threshold (DECAY history event).
-- Exempt: priority 'highest', pinned, raw episodes, soft-deleted and already invalid rows. Rows
-- whose strength would not change are not written. Two statements over a TID range scan, the unit
-- of batching:
--   1. rows that stay at or above the threshold: only strength changes, a HOT update;
--   2. rows that fall below it: one statement sets strength, is_valid = false and updated_at, and
--      writes their DECAY history rows by the job's actor (cron:decay), with the row triggers
--      skipped (memory.bulk, 20261124800300).
-- Returns the counts and `changed`, the ids invalidated: their change log ('deleted') is the
-- caller's to write, after its last batch (apply_page_ranges; see the top of this file).
-- Called by apply_page_ranges (for run_decay and run_decay_step).
create function memory_private.decay_page_range(
  p_now timestamptz,
  p_first_page bigint,
  p_page_count bigint
)
returns table (decayed bigint, invalidated bigint, changed uuid[])
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
  v_prev_bulk  text := current_setting('memory.bulk', true);
  v_actor      text := coalesce(nullif(v_prev_actor, ''), 'cron:decay');
  v_thread     text := coalesce(nullif(current_setting('memory.thread_id', true), ''), 'default');
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
     and m.source is distinct from 'conversation'
     and m.base_strength * power(v_base, least(v_max_days,
           greatest(0::double precision, floor(date_part('epoch', p_now - m.last_accessed_at) / 86400)))) >= v_prune
     and m.strength is distinct from m.base_strength * power(v_base, least(v_max_days,
           greatest(0::double precision, floor(date_part('epoch', p_now - m.last_accessed_at) / 86400))));
  get diagnostics decayed = row_count;

  -- 2. invalidations and their history rows, in one statement
  perform set_config('memory.event', 'DECAY', true);
  perform set_config('memory.actor', v_actor, true);
  perform set_config('memory.bulk', 'on', true);
  with invalidated_rows as (
    update public.devai_memories m
       set strength = m.base_strength * power(v_base, least(v_max_days,
             greatest(0::double precision, floor(date_part('epoch', p_now - m.last_accessed_at) / 86400)))),
           is_valid = false,
           updated_at = now()
     where m.ctid >= v_from and m.ctid < v_to
       and m.is_valid
       and m.state = 'active'
       and m.priority <> 'highest'
       and not m.pinned
       and m.source is distinct from 'conversation'
       and m.base_strength * power(v_base, least(v_max_days,
             greatest(0::double precision, floor(date_part('epoch', p_now - m.last_accessed_at) / 86400)))) < v_prune
    returning m
  ),
  audited as (
    insert into public.memory_history (owner_id, memory_id, event, old_ref, new_ref, actor, old_content, new_content, meta)
    select (c.m).owner_id, (c.m).id, 'DECAY', (c.m).id, coalesce((c.m).superseded_by, (c.m).id), v_actor,
           (c.m).content, (c.m).content, memory_private.history_snapshot(c.m) || jsonb_build_object('thread_id', v_thread)
      from invalidated_rows c
    returning 1
  )
  select coalesce(array_agg((c.m).id), '{}'), (select count(*) from audited) into changed, invalidated
    from invalidated_rows c;
  perform set_config('memory.bulk', coalesce(v_prev_bulk, ''), true);
  invalidated := cardinality(changed);
  decayed := decayed + invalidated;
  perform set_config('memory.event', coalesce(v_prev_event, ''), true);
  perform set_config('memory.actor', coalesce(v_prev_actor, ''), true);
  return next;
end;
$$;
revoke all on function memory_private.decay_page_range(timestamptz, bigint, bigint) from public;
grant execute on function memory_private.decay_page_range(timestamptz, bigint, bigint) to service_role;

-- TTL soft-delete of the memories stored in heap pages [p_first_page, p_first_page +
-- p_page_count): the active memories last accessed MORE than ttl_idle_days ago (days of 86,400 s)
-- whose importance is strictly below ttl_importance_below, except pinned ones, priority 'highest'
-- and source 'user_stated' (what the user said is never forgotten by a timer). Valid or not.
-- Sets state = 'soft_deleted', purge_at = p_now + purge_grace_days; the trigger records a TTL
-- history event by cron:ttl (memory.change_log = 'bulk' leaves the change log out). One UPDATE
-- over a TID range scan, the unit of batching. Returns the count and `changed`, the ids
-- soft-deleted: their change log ('soft_deleted') is the caller's to write, after its last batch
-- (apply_page_ranges; see the top of this file). Called by apply_page_ranges (for run_ttl and
-- run_ttl_step).
create function memory_private.ttl_page_range(
  p_now timestamptz,
  p_first_page bigint,
  p_page_count bigint
)
returns table (soft_deleted bigint, changed uuid[])
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
begin
  perform set_config('memory.event', 'TTL', true);
  perform set_config('memory.actor', coalesce(nullif(v_prev_actor, ''), 'cron:ttl'), true);
  perform set_config('memory.change_log', 'bulk', true);
  with retired as (
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
  select coalesce(array_agg(r.id), '{}') into changed from retired r;
  perform set_config('memory.change_log', coalesce(v_prev_log, ''), true);
  soft_deleted := cardinality(changed);
  perform set_config('memory.event', coalesce(v_prev_event, ''), true);
  perform set_config('memory.actor', coalesce(v_prev_actor, ''), true);
  return next;
end;
$$;
revoke all on function memory_private.ttl_page_range(timestamptz, bigint, bigint) from public;
grant execute on function memory_private.ttl_page_range(timestamptz, bigint, bigint) to service_role;

-- The walk both forms of decay and TTL share: applies p_job ('decay': decay_page_range over
-- ranges of decay_batch_pages heap pages; 'ttl': ttl_page_range over ttl_batch_pages) with clock
-- p_now to consecutive ranges from heap page p_first_page, until p_end_page is reached or
-- p_max_batches ranges are done (null: no limit), then writes the change log of every range at
-- once (log_changes_in_bulk: 'deleted' for DECAY, 'soft_deleted' for TTL), so the tenants'
-- revision rows are taken after the last memory lock (see the top of this file). Returns the
-- counts summed ({"decayed", "invalidated"} or {"soft_deleted"}), "batches", and "next_page",
-- the first page not done. Called by run_decay and run_ttl (the whole table) and
-- run_lifecycle_step (a few ranges a call).
create or replace function memory_private.apply_page_ranges(
  p_job text,
  p_now timestamptz,
  p_first_page bigint,
  p_end_page bigint,
  p_max_batches integer
)
returns jsonb
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
  v_step    bigint;
  v_next    bigint := p_first_page;
  v_batches integer := 0;
  v_counts  jsonb := case p_job when 'decay' then '{"decayed": 0, "invalidated": 0}'::jsonb
                                else '{"soft_deleted": 0}'::jsonb end;
  v_batch   jsonb;
  v_ids     uuid[];
  v_changed uuid[] := '{}';
  v_id      uuid;
begin
  if p_job is null or p_job not in ('decay', 'ttl') then
    raise exception 'unknown lifecycle job "%" (decay or ttl)', p_job using errcode = '22023';
  end if;
  v_step := public.memory_setting(p_job || '_batch_pages')::bigint;
  while v_next < p_end_page and (p_max_batches is null or v_batches < p_max_batches) loop
    if p_job = 'decay' then
      select jsonb_build_object('decayed', r.decayed, 'invalidated', r.invalidated), r.changed into v_batch, v_ids
        from memory_private.decay_page_range(p_now, v_next, v_step) r;
    else
      select jsonb_build_object('soft_deleted', r.soft_deleted), r.changed into v_batch, v_ids
        from memory_private.ttl_page_range(p_now, v_next, v_step) r;
    end if;
    -- Appended in place: `v_changed || v_ids` copied the whole list every batch, quadratic for a
    -- one-shot run of many small batches (60k invalidations in 1-page batches: 28.8 s -> 20.3 s).
    foreach v_id in array coalesce(v_ids, '{}') loop
      v_changed := array_append(v_changed, v_id);
    end loop;
    v_counts := memory_private.add_counts(v_counts, v_batch);
    v_next := least(v_next + v_step, p_end_page);
    v_batches := v_batches + 1;
  end loop;
  -- Last: the revision rows, after every memory this walk locked.
  if p_job = 'decay' then
    perform memory_private.log_changes_in_bulk(v_changed, 'deleted', 'DECAY');
  else
    perform memory_private.log_changes_in_bulk(v_changed, 'soft_deleted', 'TTL');
  end if;
  return v_counts || jsonb_build_object('batches', v_batches, 'next_page', v_next);
end;
$$;
revoke all on function memory_private.apply_page_ranges(text, timestamptz, bigint, bigint, integer) from public;
grant execute on function memory_private.apply_page_ranges(text, timestamptz, bigint, bigint, integer) to service_role;
