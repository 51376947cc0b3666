-- Decay's invalidations written in bulk (docs/operations.md#decay, "Why it is fast", 6).
--
-- What a night costs is mostly its invalidations: an invalidation is never a HOT update, and each
-- one ran three row triggers: touch_updated_at and close_fact_validity before it (plpgsql calls
-- that, for DECAY, only set updated_at), and record_memory_write after it (a plpgsql call that
-- copies the row, builds the history row and inserts it). On the 100k bench corpus's first night
-- (auto_explain of run_decay): about 90 µs per invalidated row in the UPDATE with its triggers,
-- 25-45 µs more in the change log. The bench corpus's first night on 1M memories invalidates 229k
-- rows at once (a year of idle time meeting the job): 81 s in the step form.
--
-- Now decay_page_range invalidates in one statement that also writes the history rows: the UPDATE
-- sets updated_at itself and returns the rows, and an INSERT in the same statement writes one
-- DECAY row per memory, the same row record_memory_write writes (the same columns, the same actor,
-- memory_private.history_snapshot for meta; a pgTAP test compares the two). The three triggers are
-- skipped for a statement run with the transaction-local setting memory.bulk = 'on' (a condition
-- in their WHEN clauses, so not even the call is made); nothing else sets it, and it counts only for
-- the job's roles (postgres, service_role): a tenant's session (authenticated) that sets it still
-- writes its history (a user-settable setting must not turn the audit trail off). The change log stays
-- per tenant and batch (memory_private.log_changes_in_bulk). On the 100k corpus's first night
-- (run_decay, one-shot): 3.5-4.5 s before, 2.9 s after.

-- 1. The triggers a bulk job writes around (same conditions as before, plus memory.bulk) ---------

drop trigger devai_memories_touch_updated_at on public.devai_memories;
create trigger devai_memories_touch_updated_at
  before update on public.devai_memories
  for each row
  when ((old.content is distinct from new.content or old.embedding_model is distinct from new.embedding_model
         or old.memory_type is distinct from new.memory_type or old.namespace is distinct from new.namespace
         or old.priority is distinct from new.priority or old.source is distinct from new.source
         or old.is_valid is distinct from new.is_valid or old.superseded_by is distinct from new.superseded_by
         or old.importance is distinct from new.importance or old.pinned is distinct from new.pinned
         or old.state is distinct from new.state or old.metadata is distinct from new.metadata)
        and (current_setting('memory.bulk', true) is distinct from 'on' or current_user not in ('postgres', 'service_role')))
  execute function memory_private.touch_updated_at();

drop trigger devai_memories_record_update on public.devai_memories;
create trigger devai_memories_record_update
  after update on public.devai_memories
  for each row
  when ((old.content is distinct from new.content or old.memory_type is distinct from new.memory_type
         or old.namespace is distinct from new.namespace or old.priority is distinct from new.priority
         or old.source is distinct from new.source or old.is_valid is distinct from new.is_valid
         or old.superseded_by is distinct from new.superseded_by or old.importance is distinct from new.importance
         or old.pinned is distinct from new.pinned or old.state is distinct from new.state
         or old.metadata is distinct from new.metadata)
        and (current_setting('memory.bulk', true) is distinct from 'on' or current_user not in ('postgres', 'service_role')))
  execute function memory_private.record_memory_write();

drop trigger devai_memories_close_validity on public.devai_memories;
create trigger devai_memories_close_validity
  before update of is_valid, superseded_by on public.devai_memories
  for each row
  when (current_setting('memory.bulk', true) is distinct from 'on' or current_user not in ('postgres', 'service_role'))
  execute function memory_private.close_fact_validity();

-- 2. Decay with its invalidations in bulk --------------------------------------------------------

-- Decays the active, valid memories stored in heap pages [p_first_page, p_first_page +
-- p_page_count) and invalidates those that fall below prune_threshold (DECAY history event).
-- Exempt: priority 'highest', pinned, raw episodes, soft-deleted and already invalid rows. Rows
-- whose strength would not change are not written. Two statements over a TID range scan, the unit
-- of batching:
--   1. rows that stay at or above the threshold: only strength changes, a HOT update (as in
--      20261124300400);
--   2. rows that fall below it: one statement sets strength, is_valid = false and updated_at, and
--      writes their DECAY history rows by the job's actor (cron:decay), with the row triggers
--      skipped (memory.bulk, see the top of this file); the validity of a decayed fact is not
--      closed (as close_fact_validity never did for DECAY). Their change log ('deleted') is written
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
  v_prev_bulk  text := current_setting('memory.bulk', true);
  v_actor      text := coalesce(nullif(v_prev_actor, ''), 'cron:decay');
  v_thread     text := coalesce(nullif(current_setting('memory.thread_id', true), ''), 'default');
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
  with changed as (
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
      from changed c
    returning 1
  )
  select array_agg((c.m).id), (select count(*) from audited) into v_ids, invalidated from changed c;
  perform set_config('memory.bulk', coalesce(v_prev_bulk, ''), true);
  invalidated := coalesce(cardinality(v_ids), 0);
  perform memory_private.log_changes_in_bulk(v_ids, 'deleted', 'DECAY');
  decayed := decayed + invalidated;
  perform set_config('memory.event', coalesce(v_prev_event, ''), true);
  perform set_config('memory.actor', coalesce(v_prev_actor, ''), true);
  return next;
end;
$$;
revoke all on function memory_private.decay_page_range(timestamptz, bigint, bigint) from public;
-- The job's roles write the history rows themselves now (record_memory_write, security definer, did).
grant execute on function memory_private.history_snapshot(public.devai_memories) to service_role;
grant execute on function memory_private.decay_page_range(timestamptz, bigint, bigint) to service_role;

