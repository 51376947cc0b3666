-- Lifecycle, layer 5 (functions): decay, access reinforcement, TTL soft-delete, restore, purge and
-- the stale job-lease sweeper. Each maintenance job is one function that can be run by hand
-- (`select memory_private.run_decay();`), takes the clock as a parameter (p_now) so tests can
-- shift time, and returns what it changed as jsonb. Thresholds come from public.memory_settings.
-- History rows are written by the triggers of 20261122000300: the jobs only name the event
-- (memory.event = DECAY | TTL) and the actor (memory.actor = cron:decay | cron:ttl | cron:purge).
-- Schedules: 20261122001200_lifecycle_schedules.sql. Operations guide: docs/operations.md.
--
-- Locking: every job is set-based and walks the table in bounded batches (heap page ranges for
-- decay and TTL, at most purge_batch_size rows per DELETE). A job runs in one transaction (a
-- procedure could COMMIT per batch, but Postgres forbids COMMIT in a procedure that has a SET
-- search_path clause, and the advisors require that clause), so the row locks it takes are
-- held until it ends. Retrieval never waits on them: reads are MVCC, and
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
-- Called by run_decay.
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

-- The nightly decay job (pg_cron 'devai-memory-decay', 03:00 UTC): walks devai_memories in
-- ranges of decay_batch_pages heap pages and applies decay_page_range to each. Idempotent: the
-- result depends only on p_now, so a re-run, a late run or a run after a missed day leaves the
-- same strengths as one run on time. Returns {"decayed", "invalidated", "batches", "pages"}.
-- Run by hand: select memory_private.run_decay();  (or with a shifted clock: run_decay(now() + interval '3 days'))
create or replace function memory_private.run_decay(p_now timestamptz default now())
returns jsonb
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
  v_step        bigint := public.memory_setting('decay_batch_pages')::bigint;
  v_pages       bigint := pg_catalog.pg_relation_size('public.devai_memories'::regclass)
                          / current_setting('block_size')::bigint;
  v_first       bigint := 0;
  v_batches     integer := 0;
  v_decayed     bigint := 0;
  v_invalidated bigint := 0;
  r             record;
begin
  while v_first < v_pages loop
    select * into r from memory_private.decay_page_range(p_now, v_first, v_step);
    v_decayed := v_decayed + r.decayed;
    v_invalidated := v_invalidated + r.invalidated;
    v_batches := v_batches + 1;
    v_first := v_first + v_step;
  end loop;
  return jsonb_build_object('decayed', v_decayed, 'invalidated', v_invalidated,
                            'batches', v_batches, 'pages', v_pages);
end;
$$;
revoke all on function memory_private.run_decay(timestamptz) from public;
grant execute on function memory_private.run_decay(timestamptz) to service_role;

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

-- The nightly TTL job (pg_cron 'devai-memory-ttl', 03:15 UTC), seed 001 §7: soft-deletes the
-- active memories that were last accessed MORE than ttl_idle_days ago (days of 86,400 s) and
-- whose importance is strictly below ttl_importance_below, except pinned ones, priority
-- 'highest' and source 'user_stated' (what the user said is never forgotten by a timer).
-- Valid or not: decay invalidates an idle memory after ~59 days, TTL then retires it.
-- Sets state = 'soft_deleted', purge_at = p_now + purge_grace_days; the trigger records a TTL
-- history event and a 'soft_deleted' change-log entry (the delta header shows it once).
-- Walks the table in ranges of ttl_batch_pages heap pages. Returns {"soft_deleted", "batches"}.
-- Run by hand: select memory_private.run_ttl();
create or replace function memory_private.run_ttl(p_now timestamptz default now())
returns jsonb
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
  v_idle       interval := make_interval(secs => public.memory_setting('ttl_idle_days')::double precision * 86400);
  v_grace      interval := make_interval(secs => public.memory_setting('purge_grace_days')::double precision * 86400);
  v_below      numeric := public.memory_setting('ttl_importance_below');
  v_step       bigint := public.memory_setting('ttl_batch_pages')::bigint;
  v_pages      bigint := pg_catalog.pg_relation_size('public.devai_memories'::regclass)
                         / current_setting('block_size')::bigint;
  v_first      bigint := 0;
  v_batches    integer := 0;
  v_total      bigint := 0;
  v_n          bigint;
  v_prev_event text := current_setting('memory.event', true);
  v_prev_actor text := current_setting('memory.actor', true);
begin
  perform set_config('memory.event', 'TTL', true);
  perform set_config('memory.actor', coalesce(nullif(v_prev_actor, ''), 'cron:ttl'), true);
  while v_first < v_pages loop
    with changed as (
      update public.devai_memories m
         set state = 'soft_deleted',
             purge_at = p_now + v_grace
       where m.ctid >= format('(%s,0)', v_first)::tid
         and m.ctid < format('(%s,0)', v_first + v_step)::tid
         and m.state = 'active'
         and not m.pinned
         and m.priority <> 'highest'
         and m.source is distinct from 'user_stated'
         and m.importance < v_below
         and m.last_accessed_at < p_now - v_idle
      returning 1
    )
    select count(*) into v_n from changed;
    v_total := v_total + v_n;
    v_batches := v_batches + 1;
    v_first := v_first + v_step;
  end loop;
  perform set_config('memory.event', coalesce(v_prev_event, ''), true);
  perform set_config('memory.actor', coalesce(v_prev_actor, ''), true);
  return jsonb_build_object('soft_deleted', v_total, 'batches', v_batches);
end;
$$;
revoke all on function memory_private.run_ttl(timestamptz) from public;
grant execute on function memory_private.run_ttl(timestamptz) to service_role;

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

-- The nightly purge job (pg_cron 'devai-memory-purge', 03:30 UTC): physically deletes
-- soft-deleted memories whose purge_at is at or before p_now, oldest first, at most
-- purge_batch_size rows per DELETE and purge_max_batches batches per run (the rest waits for the
-- next run). The delete trigger writes a PURGE history row with the memory's content and fields;
-- history has no foreign key, so it survives. Their graph edges go too (ON DELETE CASCADE).
-- Returns {"purged", "batches", "remaining"} (remaining = rows already due, left for the next run).
-- Run by hand: select memory_private.run_purge();
create or replace function memory_private.run_purge(p_now timestamptz default now())
returns jsonb
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
  v_size       integer := public.memory_setting('purge_batch_size')::integer;
  v_max        integer := public.memory_setting('purge_max_batches')::integer;
  v_batches    integer := 0;
  v_total      bigint := 0;
  v_n          bigint;
  v_remaining  bigint;
  v_prev_actor text := current_setting('memory.actor', true);
begin
  perform set_config('memory.actor', coalesce(nullif(v_prev_actor, ''), 'cron:purge'), true);
  loop
    exit when v_batches >= v_max;
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
