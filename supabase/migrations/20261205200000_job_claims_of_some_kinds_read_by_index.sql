-- A claim of some kinds only (`claim_jobs(..., p_kinds => ...)`: a drain of one kind) reads those
-- kinds' queued jobs through an index of their own, a few entries a job claimed
-- (docs/operations.md#job-queue).
--
-- Since 20261204450000 the claim picks its jobs in fair order through memory_jobs_fair_claimable
-- and filters the kinds there: a drain of a rare kind queued behind a backlog of other kinds read
-- the whole backlog before each claim (4 claims of `entity_backfill` behind 20,000 `dedup` jobs read
-- 80,006 rows, 4 to 5 ms a claim, growing with the backlog; pgTAP
-- 99_claims_of_some_kinds_read_their_kinds_by_index).
--
-- Now such a claim first finds, without locking, each kind's first p_limit jobs in fair order
-- through memory_jobs_kind_claimable (kind, fair_key, run_after), keeps the first p_limit of them
-- in fair order, and locks those (skip locked). Only when a concurrent claim took some of them in
-- between does it pick again as before (the fair order over every kind, then its kinds): it never
-- claims fewer jobs than are free. Without such a race it locks only the jobs it claims (a lock
-- under each kind's limit would hold, until the claim commits, jobs another worker could take);
-- with one, the few it locked and lost are held until then. A claim of every kind (p_kinds null,
-- what the workers do) is unchanged.
create index if not exists memory_jobs_kind_claimable on public.memory_jobs (kind, fair_key, run_after)
  where status = 'queued';

create or replace function memory_private.claim_jobs(p_worker text, p_limit integer DEFAULT 1, p_lease interval DEFAULT '00:05:00'::interval, p_kinds text[] DEFAULT NULL::text[], p_owner uuid DEFAULT NULL::uuid) RETURNS SETOF public.memory_jobs
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $$
declare
  v_found uuid[];
  v_ids uuid[];
begin
  if p_worker is null or btrim(p_worker) = '' then
    raise exception 'worker id required' using errcode = '22023';
  end if;
  if p_limit is null or p_limit < 1 or p_limit > 100 then
    raise exception 'p_limit must be between 1 and 100, got %', p_limit using errcode = '22023';
  end if;

  -- Expired leases with no attempt left: dead, with the reason (they would exceed max_attempts).
  update public.memory_jobs j
     set status = 'dead',
         last_error = coalesce(j.last_error || E'\n', '') || format('lease of worker %s expired on attempt %s/%s', j.locked_by, j.attempts, j.max_attempts),
         locked_until = null,
         locked_by = null,
         finished_at = now(),
         updated_at = now()
   where j.id = any (array(
     select s.id from public.memory_jobs s
      where s.status = 'running' and s.locked_until < now() and s.attempts >= s.max_attempts
      for update skip locked));

  -- Other expired leases: queued again (the claim below counts the attempt), in their place.
  update public.memory_jobs j
     set status = 'queued',
         locked_until = null,
         locked_by = null,
         updated_at = now()
   where j.id = any (array(
     select s.id from public.memory_jobs s
      where s.status = 'running' and s.locked_until < now() and s.attempts < s.max_attempts
      for update skip locked));

  if p_kinds is not null then
    -- Each kind's first jobs in fair order (its own index), the first p_limit of them all; then
    -- those locked by primary key, and kept if still queued (their latest version, read as locked).
    -- The status test stays outside the locking query: inside it the planner could read them
    -- through a partial index of queued jobs, which a plan made on an empty queue's statistics
    -- walks whole (2,006 rows a claim). Fewer kept than found: a concurrent claim took some, pick
    -- as below.
    v_found := array(
      select c.id
        from (select distinct k.kind from unnest(p_kinds) k(kind)) k
       cross join lateral (
         select s.id, s.fair_key
           from public.memory_jobs s
          where s.status = 'queued' and s.kind = k.kind and s.run_after <= now()
            and (p_owner is null or s.owner_id = p_owner)
          order by s.fair_key
          limit p_limit) c
       order by c.fair_key
       limit p_limit);
    v_ids := array(
      with locked as materialized (
        select s.id, s.status, s.run_after
          from public.memory_jobs s
         where s.id = any (v_found)
           for update skip locked)
      select l.id from locked l where l.status = 'queued' and l.run_after <= now());
  end if;

  if v_ids is null or cardinality(v_ids) < cardinality(v_found) then
    v_ids := array(
      select s.id
        from public.memory_jobs s
       where s.status = 'queued' and s.run_after <= now()
         and (p_kinds is null or s.kind = any (p_kinds))
         and (p_owner is null or s.owner_id = p_owner)
       order by s.fair_key
       limit p_limit
         for update skip locked);
  end if;

  return query
  update public.memory_jobs j
     set status = 'running',
         attempts = j.attempts + 1,
         locked_until = now() + p_lease,
         locked_by = p_worker,
         updated_at = now()
   where j.id = any (v_ids)
  returning j.*;
end;
$$;

alter function memory_private.claim_jobs(text, integer, interval, text[], uuid) set enable_seqscan = off;
alter function memory_private.claim_jobs(text, integer, interval, text[], uuid) set enable_sort = off;
alter function memory_private.claim_jobs(text, integer, interval, text[], uuid) set plan_cache_mode = force_custom_plan;
-- The kinds' pick sorts its few rows (nothing else can give their fair order): with sorts disabled
-- its cost passes jit_above_cost, and compiling it took 70 to 110 ms a claim.
alter function memory_private.claim_jobs(text, integer, interval, text[], uuid) set jit = off;
