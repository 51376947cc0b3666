-- Lifecycle, layer 5 (functions): decay, access reinforcement, TTL soft-delete, restore, purge and
-- the stale job-lease sweeper. Each maintenance job is a function that can be run by hand
-- (`select memory_private.run_decay();`), takes the clock as a parameter (p_now) so tests can
-- shift time, and returns what it changed as jsonb. Thresholds come from public.memory_settings.
-- History rows are written by the triggers of 20261122000300: the jobs only name the event
-- (memory.event = DECAY | TTL) and the actor (memory.actor = cron:decay | cron:ttl | cron:purge).
-- Schedules: 20261122001200_lifecycle_schedules.sql. Operations guide: docs/operations.md.
--
-- Two forms of each nightly job. The one-shot form (run_decay, run_ttl, run_purge: run by hand,
-- and by the time-shift tests) does the whole job in the caller's transaction. The step form
-- (run_decay_step, run_ttl_step, run_purge_step: what pg_cron calls, every minute of the job's
-- window) does at most p_batches batches per call, each call its own short transaction, and
-- records where the run stands in memory_private.lifecycle_runs; decay and TTL keep one clock for
-- the whole run, so the steps of one night give exactly what one run_decay/run_ttl with that
-- clock gives.
--
-- Locking: every job is set-based and walks the table in bounded batches (heap page ranges for
-- decay and TTL, at most purge_batch_size rows per DELETE). The row locks a batch takes, and the
-- per-tenant thread revision row the history trigger bumps for every invalidation or
-- soft-delete, are held until the transaction commits. A function cannot COMMIT between batches
-- (a procedure could, but Postgres forbids COMMIT in a procedure that has a SET search_path
-- clause, and the advisors require that clause), so the one-shot forms hold them for the whole
-- job (up to a minute on 1M memories) and a write for a tenant the job touched waits that long;
-- the step forms hold them for one call. Retrieval never waits on either: reads are MVCC, and
-- public.reinforce_memories skips rows locked by a running job (FOR UPDATE SKIP LOCKED).

-- One lifecycle threshold from public.memory_settings; raises if the setting is missing rather
-- than guessing a default. Called by the lifecycle functions below (as the job's role or as the
-- signed-in user: the settings are readable by authenticated).
create or replace function public.memory_setting(p_name text)
returns numeric
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
  v_value numeric;
begin
  select s.value into v_value from public.memory_settings s where s.name = p_name;
  if not found then
    raise exception 'memory setting "%" is missing from public.memory_settings', p_name using errcode = 'P0002';
  end if;
  return v_value;
end;
$$;
revoke all on function public.memory_setting(text) from public, anon;
grant execute on function public.memory_setting(text) to authenticated, service_role;

-- The decay formula, in one place: strength = base_strength * decay_base ^ d, where d is the
-- number of FULL days (86,400 s) since the last access, d = floor((now - last_accessed_at) / 1 day),
-- never negative. It depends only on the state at the last access, never on the previous value
-- of strength, so applying it twice, late, or after a missed day gives the same value: it does
-- not compound (the seed's `strength *= 0.95 ^ days` does: 0.95^6 after three days). Whole days
-- make a second run on the same day a no-op (no row changes, no write). d is capped where
-- decay_base ^ d would underflow float8 (Postgres raises on underflow); the value there is
-- below 1e-130, i.e. zero. Callers apply the exemptions (priority 'highest' and pinned never
-- decay). Called by reinforce_memories and restore_memory; run_decay inlines the same
-- expression for speed (a test checks they agree).
create or replace function public.memory_decayed_strength(
  p_base_strength double precision,
  p_last_accessed_at timestamptz,
  p_now timestamptz,
  p_decay_base double precision
)
returns double precision
language sql
immutable
parallel safe
security invoker
set search_path = ''
as $$
  select p_base_strength * power(p_decay_base, least(
    greatest(0::double precision, floor(date_part('epoch', p_now - p_last_accessed_at) / 86400)),
    case when p_decay_base >= 1 then 0::double precision else floor(-300 / ln(p_decay_base)) end))
$$;
revoke all on function public.memory_decayed_strength(double precision, timestamptz, timestamptz, double precision) from public, anon;
grant execute on function public.memory_decayed_strength(double precision, timestamptz, timestamptz, double precision)
  to authenticated, service_role;

-- Decays the active, valid memories stored in heap pages [p_first_page, p_first_page +
-- p_page_count) and invalidates those that fall below prune_threshold (DECAY history event).
-- Exempt: priority 'highest', pinned, soft-deleted and already invalid rows. Rows whose strength
-- would not change are not written. Two UPDATEs over a TID range scan, the unit of batching:
--   1. rows that stay at or above the threshold: only strength changes. No trigger on
--      devai_memories does anything for such a change (the audit and updated_at triggers' WHEN
--      clauses are false, no foreign-key column changes), yet a BEFORE ROW trigger makes Postgres
--      lock and WAL-log every row before updating it: 8x slower (measured, docs/operations.md).
--      So this pass runs with session_replication_role = replica (triggers skipped) where the
--      role may set it (superuser; Supabase's postgres role via supautils), else normally.
--   2. rows that fall below the threshold: strength and is_valid = false, triggers on, so the
--      history records DECAY (memory.event) by cron:decay (memory.actor).
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
  v_prev_srr   text := current_setting('session_replication_role');
  v_skip_trg   boolean := false;
begin
  -- The expression below is public.memory_decayed_strength(base_strength, last_accessed_at,
  -- p_now, decay_base), written out so the planner evaluates it inline (a function with a SET
  -- clause is never inlined).

  -- 1. strength-only changes
  begin
    perform set_config('session_replication_role', 'replica', true);
    v_skip_trg := true;
  exception when insufficient_privilege then
    null; -- not allowed to skip triggers: same result, slower
  end;
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
  if v_skip_trg then
    perform set_config('session_replication_role', v_prev_srr, true);
  end if;

  -- 2. invalidations, audited
  perform set_config('memory.event', 'DECAY', true);
  perform set_config('memory.actor', coalesce(nullif(v_prev_actor, ''), 'cron:decay'), true);
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
           greatest(0::double precision, floor(date_part('epoch', p_now - m.last_accessed_at) / 86400)))) < v_prune;
  get diagnostics invalidated = row_count;
  decayed := decayed + invalidated;
  perform set_config('memory.event', coalesce(v_prev_event, ''), true);
  perform set_config('memory.actor', coalesce(v_prev_actor, ''), true);
  return next;
end;
$$;
revoke all on function memory_private.decay_page_range(timestamptz, bigint, bigint) from public;
grant execute on function memory_private.decay_page_range(timestamptz, bigint, bigint) to service_role;

-- Access reinforcement, called by retrieval (memory-retrieve) for the memories it injected, as
-- the signed-in user (security invoker: RLS limits it to the caller's memories). For each valid,
-- active memory in `ids`:
--   decayed       = strength for priority 'highest' / pinned (they never decay), else
--                   memory_decayed_strength(base_strength, last_accessed_at, p_now, decay_base)
--   access_count  = access_count + 1
--   boost         = reinforce_step + reinforce_log_weight * ln(1 + access_count / reinforce_log_scale)
--                 = 0.1 + 0.05 * ln(1 + access_count / 20) with the default settings
--                   (the flat step restores strength meaningfully; the log term is seed 003's
--                   access-frequency bonus: +0.0024 at 1 access, +0.035 at 20, +0.08 at 100)
--   strength = base_strength = least(1.0, decayed + boost); last_accessed_at = p_now
-- so decay restarts from the reinforced value (decay counts days since this access).
-- Rows locked by a running job are skipped (SKIP LOCKED), so retrieval never waits on the nightly
-- jobs; ids of other tenants, invalid or soft-deleted memories are ignored. Returns the updated rows.
create or replace function public.reinforce_memories(ids uuid[], p_now timestamptz default now())
returns table (id uuid, strength double precision, access_count integer, last_accessed_at timestamptz)
language sql
volatile
security invoker
set search_path = ''
as $$
  with cfg as (
    select public.memory_setting('decay_base')::double precision as decay_base,
           public.memory_setting('reinforce_step')::double precision as step,
           public.memory_setting('reinforce_log_weight')::double precision as log_weight,
           public.memory_setting('reinforce_log_scale')::double precision as log_scale
  ),
  target as (
    select m.id,
           least(1.0::double precision,
             case when m.priority = 'highest' or m.pinned then m.strength
                  else public.memory_decayed_strength(m.base_strength, m.last_accessed_at, reinforce_memories.p_now, cfg.decay_base)
             end
             + cfg.step + cfg.log_weight * ln(1 + (m.access_count + 1) / cfg.log_scale)) as reinforced
      from public.devai_memories m
     cross join cfg
     where m.id = any (reinforce_memories.ids)
       and m.is_valid
       and m.state = 'active'
     order by m.id
       for update of m skip locked
  )
  update public.devai_memories m
     set access_count = m.access_count + 1,
         last_accessed_at = greatest(m.last_accessed_at, reinforce_memories.p_now),
         strength = t.reinforced,
         base_strength = t.reinforced
    from target t
   where m.id = t.id
  returning m.id, m.strength, m.access_count, m.last_accessed_at
$$;
revoke all on function public.reinforce_memories(uuid[], timestamptz) from public, anon;
grant execute on function public.reinforce_memories(uuid[], timestamptz) to authenticated, service_role;

-- TTL soft-delete (seed 001 §7) of the memories stored in heap pages [p_first_page,
-- p_first_page + p_page_count): the active memories last accessed MORE than ttl_idle_days ago
-- (days of 86,400 s) whose importance is strictly below ttl_importance_below, except pinned
-- ones, priority 'highest' and source 'user_stated' (what the user said is never forgotten by a
-- timer). Valid or not: decay invalidates an idle memory after ~59 days, TTL then retires it.
-- Sets state = 'soft_deleted', purge_at = p_now + purge_grace_days; the trigger records a TTL
-- history event by cron:ttl and a 'soft_deleted' change-log entry (the delta header shows it
-- once). One UPDATE over a TID range scan, the unit of batching. Called by apply_page_ranges (for
-- run_ttl and run_ttl_step).
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
begin
  perform set_config('memory.event', 'TTL', true);
  perform set_config('memory.actor', coalesce(nullif(v_prev_actor, ''), 'cron:ttl'), true);
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
    returning 1
  )
  select count(*) into soft_deleted from changed;
  perform set_config('memory.event', coalesce(v_prev_event, ''), true);
  perform set_config('memory.actor', coalesce(v_prev_actor, ''), true);
  return next;
end;
$$;
revoke all on function memory_private.ttl_page_range(timestamptz, bigint, bigint) from public;
grant execute on function memory_private.ttl_page_range(timestamptz, bigint, bigint) to service_role;

-- Adds two jsonb objects of counts key by key ({"a": 1} + {"a": 2, "b": 1} = {"a": 3, "b": 1}).
-- Called by apply_page_ranges and run_lifecycle_step to sum the counts of batches and of a run.
create or replace function memory_private.add_counts(p_a jsonb, p_b jsonb)
returns jsonb
language sql
immutable
security invoker
set search_path = ''
as $$
  select coalesce(jsonb_object_agg(k, coalesce((p_a ->> k)::bigint, 0) + coalesce((p_b ->> k)::bigint, 0)), '{}'::jsonb)
    from jsonb_object_keys(coalesce(p_a, '{}'::jsonb) || coalesce(p_b, '{}'::jsonb)) as k
$$;
revoke all on function memory_private.add_counts(jsonb, jsonb) from public;
grant execute on function memory_private.add_counts(jsonb, jsonb) to service_role;

-- Heap pages of public.devai_memories now: the end of a page-range walk. Called by run_decay,
-- run_ttl and run_lifecycle_step (when a run starts).
create or replace function memory_private.memory_heap_pages()
returns bigint
language sql
volatile
security invoker
set search_path = ''
as $$
  select pg_catalog.pg_relation_size('public.devai_memories'::regclass) / current_setting('block_size')::bigint
$$;
revoke all on function memory_private.memory_heap_pages() from public;
grant execute on function memory_private.memory_heap_pages() to service_role;

-- The walk both forms of decay and TTL share: applies p_job ('decay': decay_page_range over
-- ranges of decay_batch_pages heap pages; 'ttl': ttl_page_range over ttl_batch_pages) with clock
-- p_now to consecutive ranges from heap page p_first_page, until p_end_page is reached or
-- p_max_batches ranges are done (null: no limit). Returns the counts summed ({"decayed",
-- "invalidated"} or {"soft_deleted"}), "batches", and "next_page", the first page not done.
-- Called by run_decay and run_ttl (the whole table) and run_lifecycle_step (a few ranges a call).
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
begin
  if p_job is null or p_job not in ('decay', 'ttl') then
    raise exception 'unknown lifecycle job "%" (decay or ttl)', p_job using errcode = '22023';
  end if;
  v_step := public.memory_setting(p_job || '_batch_pages')::bigint;
  while v_next < p_end_page and (p_max_batches is null or v_batches < p_max_batches) loop
    if p_job = 'decay' then
      select jsonb_build_object('decayed', r.decayed, 'invalidated', r.invalidated) into v_batch
        from memory_private.decay_page_range(p_now, v_next, v_step) r;
    else
      select jsonb_build_object('soft_deleted', r.soft_deleted) into v_batch
        from memory_private.ttl_page_range(p_now, v_next, v_step) r;
    end if;
    v_counts := memory_private.add_counts(v_counts, v_batch);
    v_next := least(v_next + v_step, p_end_page);
    v_batches := v_batches + 1;
  end loop;
  return v_counts || jsonb_build_object('batches', v_batches, 'next_page', v_next);
end;
$$;
revoke all on function memory_private.apply_page_ranges(text, timestamptz, bigint, bigint, integer) from public;
grant execute on function memory_private.apply_page_ranges(text, timestamptz, bigint, bigint, integer) to service_role;

-- Decay in one go, the one-shot form of the nightly decay (pg_cron runs run_decay_step): walks
-- devai_memories in ranges of decay_batch_pages heap pages and applies decay_page_range to each,
-- all in the caller's transaction. Idempotent: the result depends only on p_now, so a re-run, a
-- late run or a run after a missed day leaves the same strengths as one run on time. Returns
-- {"decayed", "invalidated", "batches", "pages"}. Run by hand: select memory_private.run_decay();
-- (or with a shifted clock: run_decay(now() + interval '3 days')).
create or replace function memory_private.run_decay(p_now timestamptz default now())
returns jsonb
language sql
volatile
security invoker
set search_path = ''
as $$
  select memory_private.apply_page_ranges('decay', p_now, 0, t.pages, null) - 'next_page' || jsonb_build_object('pages', t.pages)
    from (select memory_private.memory_heap_pages() as pages) t
$$;
revoke all on function memory_private.run_decay(timestamptz) from public;
grant execute on function memory_private.run_decay(timestamptz) to service_role;

-- TTL in one go, the one-shot form of the nightly TTL soft-delete (pg_cron runs run_ttl_step):
-- walks devai_memories in ranges of ttl_batch_pages heap pages and applies ttl_page_range to
-- each, all in the caller's transaction. Re-running it with the same p_now changes nothing.
-- Returns {"soft_deleted", "batches"}. Run by hand: select memory_private.run_ttl();
create or replace function memory_private.run_ttl(p_now timestamptz default now())
returns jsonb
language sql
volatile
security invoker
set search_path = ''
as $$
  select memory_private.apply_page_ranges('ttl', p_now, 0, memory_private.memory_heap_pages(), null) - 'next_page'
$$;
revoke all on function memory_private.run_ttl(timestamptz) from public;
grant execute on function memory_private.run_ttl(timestamptz) to service_role;

-- One step of a resumable page-range job, p_job 'decay' (decay_page_range, decay_batch_pages) or
-- 'ttl' (ttl_page_range, ttl_batch_pages), with its run recorded in memory_private.lifecycle_runs:
--   * an unfinished run is continued with ITS clock (p_now of the call that started it), so every
--     batch of one night uses the same clock and the steps together equal one run_decay(clock) /
--     run_ttl(clock) (the page ranges are the same: total_pages is fixed when the run starts);
--   * else a new run starts, with clock = p_now, only when the last run's clock is at least
--     step_new_run_after_hours (20) before p_now: one run per night however often it is called;
--     otherwise the call is a cheap no-op ('idle') that writes nothing;
--   * at most p_batches page ranges are processed, then the progress is saved (the run is
--     finished when next_page reaches total_pages).
-- A run that does not finish in its window goes on at the next night's first call, still with
-- its own clock (the same result one night late: rows accessed since then have d = 0 and are not
-- touched); once it is done, the next call starts tonight's run. An error rolls the whole call
-- back, progress included, so the next call retries the same pages.
-- One caller at a time per job: the call holds a transaction-level advisory lock on the job, and
-- a second caller meanwhile gets 'busy' at once instead of waiting or processing pages twice.
-- Returns {"job", "action": started | continued | idle | busy, "batches", the counts of this
-- call, "run": the job's row and "finished"}. Called by run_decay_step and run_ttl_step.
create or replace function memory_private.run_lifecycle_step(p_job text, p_batches integer, p_now timestamptz)
returns jsonb
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
  v_run     memory_private.lifecycle_runs;
  v_gap     interval := make_interval(secs => public.memory_setting('step_new_run_after_hours')::double precision * 3600);
  v_action  text;
  v_locked  boolean;
  v_done    jsonb := case p_job when 'decay' then '{"decayed": 0, "invalidated": 0, "batches": 0}'::jsonb
                                else '{"soft_deleted": 0, "batches": 0}'::jsonb end;
begin
  if p_job is null or p_job not in ('decay', 'ttl') then
    raise exception 'unknown lifecycle job "%" (decay or ttl)', p_job using errcode = '22023';
  end if;
  if p_batches is null or p_batches < 1 then
    raise exception 'p_batches must be at least 1, got %', p_batches using errcode = '22023';
  end if;
  if p_now is null then
    raise exception 'p_now must not be null' using errcode = '22023';
  end if;

  -- Lock first, then read: the row is read with a snapshot taken after the previous holder
  -- committed (read committed), never a stale one.
  v_locked := pg_catalog.pg_try_advisory_xact_lock(pg_catalog.hashtextextended('memory_private.run_lifecycle_step ' || p_job, 0));
  select * into v_run from memory_private.lifecycle_runs r where r.job = p_job;
  if not v_locked then
    v_action := 'busy';
  elsif v_run.job is not null and v_run.finished_at is null then
    v_action := 'continued';
  elsif v_run.job is not null and p_now < v_run.clock + v_gap then
    v_action := 'idle';
  else
    v_action := 'started';
    insert into memory_private.lifecycle_runs as r (job, clock, next_page, total_pages)
    values (p_job, p_now, 0, memory_private.memory_heap_pages())
    on conflict (job) do update
      set clock = excluded.clock, next_page = 0, total_pages = excluded.total_pages, batches = 0, steps = 0,
          totals = '{}'::jsonb, started_at = clock_timestamp(), updated_at = clock_timestamp(), finished_at = null
    returning * into v_run;
  end if;

  if v_action in ('started', 'continued') then
    v_done := memory_private.apply_page_ranges(p_job, v_run.clock, v_run.next_page, v_run.total_pages, p_batches);
    update memory_private.lifecycle_runs r
       set next_page = (v_done ->> 'next_page')::bigint,
           batches = r.batches + (v_done ->> 'batches')::integer,
           steps = r.steps + 1,
           totals = memory_private.add_counts(r.totals, v_done - 'batches' - 'next_page'),
           updated_at = clock_timestamp(),
           finished_at = case when (v_done ->> 'next_page')::bigint >= r.total_pages then clock_timestamp() end
     where r.job = p_job
    returning * into v_run;
  end if;

  return jsonb_build_object('job', p_job, 'action', v_action) || (v_done - 'next_page')
         || jsonb_build_object('run', to_jsonb(v_run) || jsonb_build_object('finished', v_run.finished_at is not null));
end;
$$;
revoke all on function memory_private.run_lifecycle_step(text, integer, timestamptz) from public;
grant execute on function memory_private.run_lifecycle_step(text, integer, timestamptz) to service_role;

-- The nightly decay job, step form (pg_cron 'devai-memory-decay', every minute 03:00-03:59 UTC):
-- continues tonight's decay run, or starts one with clock p_now when the last run started at
-- least step_new_run_after_hours ago, and decays at most p_batches ranges of decay_batch_pages
-- heap pages in this call's transaction (see run_lifecycle_step). On the 1M-memory benchmark a
-- night is 34 calls of 5 x 1000 pages, the longest 2.1 s (docs/operations.md). Returns {"job",
-- "action", "batches", "decayed", "invalidated", "run"}. Run by hand: select memory_private.run_decay_step();
create or replace function memory_private.run_decay_step(p_batches integer default 5, p_now timestamptz default now())
returns jsonb
language sql
volatile
security invoker
set search_path = ''
as $$
  select memory_private.run_lifecycle_step('decay', p_batches, p_now)
$$;
revoke all on function memory_private.run_decay_step(integer, timestamptz) from public;
grant execute on function memory_private.run_decay_step(integer, timestamptz) to service_role;

-- The nightly TTL job, step form (pg_cron 'devai-memory-ttl', every minute 04:00-04:59 UTC):
-- like run_decay_step, with ttl_page_range over ranges of ttl_batch_pages heap pages. Returns
-- {"job", "action", "batches", "soft_deleted", "run"}. Run by hand: select memory_private.run_ttl_step();
create or replace function memory_private.run_ttl_step(p_batches integer default 5, p_now timestamptz default now())
returns jsonb
language sql
volatile
security invoker
set search_path = ''
as $$
  select memory_private.run_lifecycle_step('ttl', p_batches, p_now)
$$;
revoke all on function memory_private.run_ttl_step(integer, timestamptz) from public;
grant execute on function memory_private.run_ttl_step(integer, timestamptz) to service_role;

-- Restores a forgotten memory (the `memory` API's restore route calls it: one restore semantics),
-- as the signed-in user
-- (security invoker: RLS applies). Soft-deleted → active (purge_at cleared); an invalidated
-- memory that no other memory superseded becomes valid again. Restoring counts as an access:
-- last_accessed_at = p_now and strength = base_strength = greatest(decayed strength,
-- restore_strength), so the next decay or TTL run does not take it away again at once. The
-- trigger records RESTORE in the history and 'restored' in the change log. Returns the memory
-- (unchanged if there was nothing to restore); no row if the id is unknown or not the caller's.
create or replace function public.restore_memory(id uuid, p_now timestamptz default now())
returns setof public.devai_memories
language sql
volatile
security invoker
set search_path = ''
as $$
  with cfg as (
    select public.memory_setting('decay_base')::double precision as decay_base,
           public.memory_setting('restore_strength')::double precision as restore_strength
  ),
  target as (
    select m.id,
           greatest(cfg.restore_strength,
             case when m.priority = 'highest' or m.pinned then m.strength
                  else public.memory_decayed_strength(m.base_strength, m.last_accessed_at, restore_memory.p_now, cfg.decay_base)
             end) as restored_strength
      from public.devai_memories m
     cross join cfg
     where m.id = restore_memory.id
       and (m.state = 'soft_deleted' or (not m.is_valid and m.superseded_by is null))
       for update of m
  ),
  restored as (
    update public.devai_memories m
       set state = 'active',
           purge_at = null,
           metadata = m.metadata - 'forget_reason',
           is_valid = m.is_valid or m.superseded_by is null,
           last_accessed_at = greatest(m.last_accessed_at, restore_memory.p_now),
           strength = t.restored_strength,
           base_strength = t.restored_strength
      from target t
     where m.id = t.id
    returning m.*
  )
  select * from restored
  union all
  select m.* from public.devai_memories m
   where m.id = restore_memory.id and not exists (select from restored)
$$;
revoke all on function public.restore_memory(uuid, timestamptz) from public, anon;
grant execute on function public.restore_memory(uuid, timestamptz) to authenticated, service_role;

-- The nightly purge job, step form (pg_cron 'devai-memory-purge', every minute 05:00-05:59 UTC):
-- physically deletes soft-deleted memories whose purge_at is at or before p_now, oldest first, at
-- most purge_batch_size rows per DELETE and p_batches batches per call, so one call is a short
-- transaction (the rest waits for the next call). Rows locked by someone else (a restore in
-- flight) are skipped. Nothing to resume: each call takes what is due. The delete trigger writes
-- a PURGE history row with the memory's content and fields; history has no foreign key, so it
-- survives. Their graph edges go too (ON DELETE CASCADE). Returns {"purged", "batches",
-- "remaining"} (remaining = rows already due, left for the next call).
-- Run by hand: select memory_private.run_purge_step();
create or replace function memory_private.run_purge_step(p_batches integer default 5, p_now timestamptz default now())
returns jsonb
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
  v_size       integer := public.memory_setting('purge_batch_size')::integer;
  v_batches    integer := 0;
  v_total      bigint := 0;
  v_n          bigint;
  v_remaining  bigint;
  v_prev_actor text := current_setting('memory.actor', true);
begin
  if p_batches is null or p_batches < 1 then
    raise exception 'p_batches must be at least 1, got %', p_batches using errcode = '22023';
  end if;
  perform set_config('memory.actor', coalesce(nullif(v_prev_actor, ''), 'cron:purge'), true);
  loop
    exit when v_batches >= p_batches;
    with doomed as (
      select m.id
        from public.devai_memories m
       where m.state = 'soft_deleted' and m.purge_at <= p_now
       order by m.purge_at, m.id
       limit v_size
         for update skip locked
    ),
    gone as (
      delete from public.devai_memories m using doomed d where m.id = d.id returning 1
    )
    select count(*) into v_n from gone;
    v_total := v_total + v_n;
    v_batches := v_batches + 1;
    exit when v_n < v_size;
  end loop;
  select count(*) into v_remaining
    from public.devai_memories m
   where m.state = 'soft_deleted' and m.purge_at <= p_now;
  perform set_config('memory.actor', coalesce(v_prev_actor, ''), true);
  return jsonb_build_object('purged', v_total, 'batches', v_batches, 'remaining', v_remaining);
end;
$$;
revoke all on function memory_private.run_purge_step(integer, timestamptz) from public;
grant execute on function memory_private.run_purge_step(integer, timestamptz) to service_role;

-- Purge in one go, the one-shot form (pg_cron runs run_purge_step): run_purge_step with
-- purge_max_batches (100) batches. Returns {"purged", "batches", "remaining"}.
-- Run by hand: select memory_private.run_purge();
create or replace function memory_private.run_purge(p_now timestamptz default now())
returns jsonb
language sql
volatile
security invoker
set search_path = ''
as $$
  select memory_private.run_purge_step(public.memory_setting('purge_max_batches')::integer, p_now)
$$;
revoke all on function memory_private.run_purge(timestamptz) from public;
grant execute on function memory_private.run_purge(timestamptz) to service_role;

-- The job-lease sweeper (pg_cron 'devai-job-lease-sweep', every minute): a worker that died
-- mid-job leaves its memory_jobs row 'running' with a lease (locked_until) in the past. Such a
-- job goes back to 'queued' (claimable at once: run_after = p_now), or to 'dead' when it has
-- used all its attempts (attempts >= max_attempts; the claim counts attempts, so the sweeper
-- leaves them unchanged). Both clear locked_by/locked_until and set last_error 'lease expired'.
-- Jobs a worker holds locked right now are skipped. Returns {"requeued", "dead"}.
-- Run by hand: select memory_private.sweep_stale_job_leases();
create or replace function memory_private.sweep_stale_job_leases(p_now timestamptz default now())
returns jsonb
language sql
volatile
security invoker
set search_path = ''
as $$
  with stale as (
    select j.id
      from public.memory_jobs j
     where j.status = 'running' and j.locked_until < sweep_stale_job_leases.p_now
     order by j.locked_until
       for update skip locked
  ),
  swept as (
    update public.memory_jobs j
       set status = case when j.attempts >= j.max_attempts then 'dead' else 'queued' end,
           locked_by = null,
           locked_until = null,
           last_error = 'lease expired',
           run_after = case when j.attempts >= j.max_attempts then j.run_after
                            else sweep_stale_job_leases.p_now end,
           finished_at = case when j.attempts >= j.max_attempts then sweep_stale_job_leases.p_now
                              else j.finished_at end,
           updated_at = now()
      from stale s
     where j.id = s.id
    returning j.status
  )
  select jsonb_build_object(
    'requeued', count(*) filter (where swept.status = 'queued'),
    'dead', count(*) filter (where swept.status = 'dead'))
    from swept
$$;
revoke all on function memory_private.sweep_stale_job_leases(timestamptz) from public;
grant execute on function memory_private.sweep_stale_job_leases(timestamptz) to service_role;
