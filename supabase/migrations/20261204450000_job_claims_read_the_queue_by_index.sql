-- A worker's claim reads the queue's indexes whatever the statistics (docs/operations.md#job-queue),
-- as the fair_key trigger does since 20261204400000.
--
-- claim_jobs' three statements (expired leases made dead, expired leases queued again, the claim in
-- fair order) were planned from the statistics. A worker's connection that claimed while the queue
-- was empty (autovacuum after the prune emptied it, or a new project: reltuples 0) kept the plans
-- made then, sequential scans and a sort, until the statistics changed at autovacuum's next
-- ANALYZE. With 2,000 jobs queued since and 10 leases expired, 10 claims read 80,079,955 rows
-- (pgTAP 99_claims_read_the_queue_by_index); with 20,000, one claim had not ended after 23 minutes:
-- each statement's `j.id in (subquery)` became a nested loop reading every job and, for each, the
-- subquery again.
--
-- Now each statement first picks its few ids (an array: the expired leases through
-- memory_jobs_running_lease, the claim in fair order through memory_jobs_fair_claimable, or
-- memory_jobs_owner_queued for one tenant's claim, a few entries deep), then updates them by primary
-- key; and the function runs with sequential scans and sorts disabled, so no statistics can make a
-- plan read the queue whole, and with a plan made for each call's arguments (a generic plan kept
-- `p_owner is null or owner_id = p_owner` as a filter over the whole queue's fair order: a tenant's
-- claim read 8,818 rows of a 20,000-job backlog of 200 tenants, now its own few through
-- memory_jobs_owner_queued). What a claim takes, in which order and with which locks is unchanged.
create or replace function memory_private.claim_jobs(p_worker text, p_limit integer DEFAULT 1, p_lease interval DEFAULT '00:05:00'::interval, p_kinds text[] DEFAULT NULL::text[], p_owner uuid DEFAULT NULL::uuid) RETURNS SETOF public.memory_jobs
    LANGUAGE plpgsql
    SET search_path TO ''
    AS $$
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

  return query
  update public.memory_jobs j
     set status = 'running',
         attempts = j.attempts + 1,
         locked_until = now() + p_lease,
         locked_by = p_worker,
         updated_at = now()
   where j.id = any (array(
     select s.id
       from public.memory_jobs s
      where s.status = 'queued' and s.run_after <= now()
        and (p_kinds is null or s.kind = any (p_kinds))
        and (p_owner is null or s.owner_id = p_owner)
      order by s.fair_key
      limit p_limit
      for update skip locked))
  returning j.*;
end;
$$;

alter function memory_private.claim_jobs(text, integer, interval, text[], uuid) set enable_seqscan = off;
alter function memory_private.claim_jobs(text, integer, interval, text[], uuid) set enable_sort = off;
alter function memory_private.claim_jobs(text, integer, interval, text[], uuid) set plan_cache_mode = force_custom_plan;
