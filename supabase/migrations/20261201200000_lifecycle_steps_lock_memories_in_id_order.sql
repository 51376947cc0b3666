-- The nightly decay and TTL lock the memories a call changes in id order, before changing any, as
-- every request does: no deadlock between a step and a write locking two memories
-- (docs/operations.md#lock-order).
--
-- A call's batches (apply_page_ranges: up to 5 ranges of heap pages in one transaction, or the
-- whole table in the one-shot forms) locked each memory as its UPDATE reached it, in heap order,
-- and held it to commit; a request that locks two memories (a correction to a text another live
-- memory says, a contradiction's resolve: lockMemories, in id order) could hold the one with the
-- lower id while waiting for the other, which the step had locked in an earlier batch (or earlier
-- in the same page range), while the step waited for the first: Postgres broke the cycle by rolling
-- the request back (40P01, answered 409 `conflict`; tests/lifecycle_step_lock_order.test.ts). Now
-- apply_page_ranges first locks every memory its ranges will change (lock_lifecycle_targets, one
-- SELECT ... ORDER BY id FOR NO KEY UPDATE over the call's pages), then runs the batches as before:
-- two lockers that both take memories in id order cannot wait for each other in a cycle, and the
-- revision rows still come last (20261130200000). SKIP LOCKED would not do: a memory skipped would
-- be decayed by no call, and the step form would no longer equal the one-shot run.
--
-- lock_lifecycle_targets selects the rows decay_page_range and ttl_page_range change with their
-- own conditions, restated beside each other here; a pgTAP test (99_lifecycle_targets_locked)
-- checks that it locks what the batches then change, for both jobs. A memory that a write commits
-- into those conditions between the lock and its batch (a rare row: pinned off, importance
-- lowered in that moment) is still locked by the batch's UPDATE, in heap order.

-- Locks, in id order, the memories apply_page_ranges' p_job ('decay' or 'ttl') will change with
-- clock p_now in heap pages [p_first_page, p_end_page): for decay, those whose strength changes
-- or that fall below prune_threshold (decay_page_range's two statements); for TTL, those it
-- soft-deletes (ttl_page_range). Returns how many it locked.
create function memory_private.lock_lifecycle_targets(
  p_job text,
  p_now timestamptz,
  p_first_page bigint,
  p_end_page bigint
)
returns bigint
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
  v_from tid := format('(%s,0)', p_first_page)::tid;
  v_to   tid := format('(%s,0)', p_end_page)::tid;
  v_n    bigint;
begin
  if p_job = 'decay' then
    declare
      v_base     double precision := public.memory_setting('decay_base')::double precision;
      v_prune    double precision := public.memory_setting('prune_threshold')::double precision;
      v_max_days double precision := case when v_base >= 1 then 0 else floor(-300 / ln(v_base)) end;
    begin
      select count(*) into v_n from (
        select m.id
          from public.devai_memories m
         where m.ctid >= v_from and m.ctid < v_to
           and m.is_valid
           and m.state = 'active'
           and m.priority <> 'highest'
           and not m.pinned
           and m.source is distinct from 'conversation'
           and (m.base_strength * power(v_base, least(v_max_days,
                  greatest(0::double precision, floor(date_part('epoch', p_now - m.last_accessed_at) / 86400)))) < v_prune
                or m.strength is distinct from m.base_strength * power(v_base, least(v_max_days,
                  greatest(0::double precision, floor(date_part('epoch', p_now - m.last_accessed_at) / 86400)))))
         order by m.id
           for no key update of m
      ) t;
    end;
  elsif p_job = 'ttl' then
    declare
      v_idle  interval := make_interval(secs => public.memory_setting('ttl_idle_days')::double precision * 86400);
      v_below numeric := public.memory_setting('ttl_importance_below');
    begin
      select count(*) into v_n from (
        select m.id
          from public.devai_memories m
         where m.ctid >= v_from and m.ctid < v_to
           and m.state = 'active'
           and not m.pinned
           and m.priority <> 'highest'
           and m.source is distinct from 'user_stated'
           and m.importance < v_below
           and m.last_accessed_at < p_now - v_idle
         order by m.id
           for no key update of m
      ) t;
    end;
  else
    raise exception 'unknown lifecycle job "%" (decay or ttl)', p_job using errcode = '22023';
  end if;
  return v_n;
end;
$$;
revoke all on function memory_private.lock_lifecycle_targets(text, timestamptz, bigint, bigint) from public;
grant execute on function memory_private.lock_lifecycle_targets(text, timestamptz, bigint, bigint) to service_role;

-- apply_page_ranges as in 20261130200000, but for its first statement: the call's targets locked
-- in id order.
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
  -- First: every memory the call's batches will change, locked in id order (see the top of this file).
  perform memory_private.lock_lifecycle_targets(p_job, p_now, p_first_page,
    case when p_max_batches is null then p_end_page
         else least(p_end_page, p_first_page + v_step * p_max_batches) end);
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
