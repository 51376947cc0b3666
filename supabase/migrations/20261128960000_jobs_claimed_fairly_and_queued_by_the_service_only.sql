-- The job queue (public.memory_jobs) is shared by every tenant, and one worker drains it one job at
-- a time. Two ways one tenant stalled all the others (docs/operations.md#job-queue):
--
-- 1. claim_jobs took jobs globally first in, first out (order by run_after, created_at). A tenant
--    that queued many jobs (120 memory-extract POSTs in its write burst, hundreds within its rate
--    limit over a few minutes, each job seconds of model calls) made every other tenant's job wait
--    behind all of them: another tenant's one job queued after 200 was claimed 201st.
--    Now each job gets a fair_key when it is queued (trigger below): the later of its run_after and
--    its owner's last runnable queued job's fair_key + job_fair_step_seconds (60). An owner's jobs
--    keep their order but are spaced a minute apart in the key, and a tenant with nothing queued
--    starts at the queue's head: its job is next but for the one whose turn it is, before the
--    rest of any burst, however far behind the worker is. claim_jobs takes the smallest fair_key
--    first, through an index on it, so a claim stays a few index entries deep however long the
--    backlog is (it sorted the whole backlog before: 21 ms with 100,000 queued jobs).
--
-- 2. A signed-in user could insert rows into memory_jobs directly (policy "Owners can enqueue jobs"
--    and the column INSERT grants, there because the service queued jobs as the tenant), through
--    PostgREST with their own token: unlimited jobs, past every route's rate limit and validation,
--    each spending the operator's model budget. Now tenants only read their jobs; the service
--    queues them with memory_private.enqueue_job (not exposed: PostgREST serves schema public
--    only), which it calls in the tenant's transaction after leaving the tenant role (jobs.ts
--    asService). end_memory_sessions, which queued consolidation jobs as the tenant and was
--    callable over PostgREST (RPC), moves to memory_private for the same reason.

insert into public.memory_settings (name, value, description) values
  ('job_fair_step_seconds', 60,
   'Spacing of one tenant''s queued jobs in the job queue''s fair order: a tenant with a backlog gets about one job per this many seconds ahead of another tenant''s newly queued job (docs/operations.md#job-queue).')
on conflict (name) do nothing;
alter table public.memory_settings add constraint memory_settings_job_fair_step_seconds_range
  check (name <> 'job_fair_step_seconds' or (value >= 1 and value <= 86400));

-- Existing rows: the fast default (no rewrite); pending ones keep today's order (run_after).
alter table public.memory_jobs add column fair_key timestamptz not null default now();
update public.memory_jobs set fair_key = run_after where status in ('queued', 'running');
comment on column public.memory_jobs.fair_key is
  'Place in the queue''s fair order across tenants, set when the job is queued (memory_private.assign_job_fair_key); claim_jobs takes the smallest first (docs/operations.md#job-queue).';

-- The claim: queued jobs by fair_key; run_after is a key column so jobs still waiting for it (a
-- retry's backoff) are skipped inside the index, without visiting their rows.
create index memory_jobs_fair_claimable on public.memory_jobs (fair_key, run_after) where status = 'queued';
-- An owner's last queued job (the trigger), and a claim for one owner (p_owner).
create index memory_jobs_owner_queued on public.memory_jobs (owner_id, fair_key) where status = 'queued';

-- BEFORE INSERT on memory_jobs: the new job's fair_key (any fair_key given is overwritten). It is a
-- virtual time, as in start-time fair queueing: a job runnable now starts at the queue's head (the
-- smallest fair_key of the runnable queued jobs, or now() when that is later or the queue is
-- empty), or a step after its owner's last runnable queued job when that is later; a job queued
-- for later starts at its run_after. So a tenant with nothing queued goes next to the job whose
-- turn it is, however far the worker has fallen behind the keys (a newcomer keyed now() waited
-- behind every overdue job of every backlogged tenant: with 20 tenants of 200 jobs, 500 jobs
-- after an hour, growing toward first in, first out), and a tenant with a backlog gets one job a
-- step. Jobs waiting for a later run_after (tonight's staggered consolidation, a retry's backoff)
-- do not push the owner's next jobs back, nor does the job being run: the dedup jobs an extract
-- job queues as it completes are not put a step behind it. Rows an INSERT ... SELECT inserted
-- before are seen, so one statement's jobs are spaced too. Two transactions of one owner queueing
-- at once can get the same key (docs/operations.md#job-queue). Security definer: it reads the
-- queue whoever inserts (service_role, postgres).
create or replace function memory_private.assign_job_fair_key()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
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
revoke all on function memory_private.assign_job_fair_key() from public;

create trigger memory_jobs_fair_key before insert on public.memory_jobs
  for each row execute function memory_private.assign_job_fair_key();

-- Claims up to p_limit jobs for worker p_worker, leasing them for p_lease: the queued jobs whose
-- run_after has come, smallest fair_key first (fair across tenants, in order within one). Expired
-- leases (their worker crashed or hung) go back to queued first, keeping their fair_key, so they
-- are claimed again in their place and recovery does not depend on a cron sweeper; one that
-- expired on its last allowed attempt is parked as dead instead. p_kinds / p_owner narrow what is
-- claimed (a drain for one tenant, e.g. tests). Called by memory-worker (drainQueue).
create or replace function memory_private.claim_jobs(
  p_worker text,
  p_limit integer default 1,
  p_lease interval default interval '5 minutes',
  p_kinds text[] default null,
  p_owner uuid default null
)
returns setof public.memory_jobs
language plpgsql
volatile
set search_path = ''
as $$
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
   where j.id in (
     select s.id from public.memory_jobs s
      where s.status = 'running' and s.locked_until < now() and s.attempts >= s.max_attempts
      for update skip locked);

  -- Other expired leases: queued again (the claim below counts the attempt), in their place.
  update public.memory_jobs j
     set status = 'queued',
         locked_until = null,
         locked_by = null,
         updated_at = now()
   where j.id in (
     select s.id from public.memory_jobs s
      where s.status = 'running' and s.locked_until < now() and s.attempts < s.max_attempts
      for update skip locked);

  return query
  with picked as (
    select j.id
      from public.memory_jobs j
     where j.status = 'queued' and j.run_after <= now()
       and (p_kinds is null or j.kind = any (p_kinds))
       and (p_owner is null or j.owner_id = p_owner)
     order by j.fair_key
     limit p_limit
     for update skip locked
  )
  update public.memory_jobs j
     set status = 'running',
         attempts = j.attempts + 1,
         locked_until = now() + p_lease,
         locked_by = p_worker,
         updated_at = now()
    from picked
   where j.id = picked.id
  returning j.*;
end;
$$;
revoke all on function memory_private.claim_jobs(text, integer, interval, text[], uuid) from public;
grant execute on function memory_private.claim_jobs(text, integer, interval, text[], uuid) to service_role;

-- Tenants read their jobs (GET memory-extract?job_id=, the routes' answers) and write none.
revoke insert, update, delete on table public.memory_jobs from authenticated, anon;
drop policy "Owners can enqueue jobs" on public.memory_jobs;

-- Queues a job for p_owner, or returns the one that has the same (owner, kind, idempotency key)
-- (deduplicated = true). The service calls it (jobs.ts enqueueJob) inside the tenant's transaction
-- as its own role (asService), with the tenant's claims still set: then p_owner must be that
-- tenant, and an index build (vector_index) is not a tenant's to ask for (the hourly job queues
-- those). Not exposed to tenants: schema memory_private, execute for service_role only.
create or replace function memory_private.enqueue_job(
  p_owner uuid,
  p_kind text,
  p_idempotency_key text,
  p_payload jsonb default '{}',
  p_max_attempts integer default 5
)
returns table (id uuid, status text, deduplicated boolean)
language plpgsql
volatile
set search_path = ''
as $$
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
revoke all on function memory_private.enqueue_job(uuid, text, text, jsonb, integer) from public;
grant execute on function memory_private.enqueue_job(uuid, text, text, jsonb, integer) to service_role;

-- Ends sessions and queues each one's consolidation job (key 'consolidate:<session_id>') once,
-- whichever path ends it (docs/graph.md#sessions): the service as the tenant (sessions.ts, through
-- asService: the tenant's claims name it, and only its sessions are touched) and the nightly idle
-- sweep (end_idle_sessions, no claims: any tenant's). Was public.end_memory_sessions, a security
-- invoker function tenants could call over PostgREST to queue jobs; same body, with the tenant
-- named where RLS used to filter, and ended_at covering the last episode (below).
create or replace function memory_private.end_memory_sessions(p_ids uuid[], p_reason text, p_now timestamptz default now())
returns table (id uuid, session_id text, job_id uuid, ended_now boolean)
language plpgsql
set search_path = ''
as $$
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
revoke all on function memory_private.end_memory_sessions(uuid[], text, timestamptz) from public;
grant execute on function memory_private.end_memory_sessions(uuid[], text, timestamptz) to service_role;

drop function public.end_memory_sessions(uuid[], text, timestamptz);

-- The nightly idle sweep (pg_cron 'devai-session-idle-end', 02:00 UTC): ends the sessions, of
-- every tenant, whose last episode batch is more than session_idle_minutes (60) before p_now, at
-- most p_limit per call, oldest first, through memory_private.end_memory_sessions (reason 'idle'),
-- so each gets its one consolidation job. Returns {"ended", "queued"}. As before
-- (20261124300400), through end_memory_sessions' new place.
-- Run by hand: select memory_private.end_idle_sessions();
create or replace function memory_private.end_idle_sessions(p_now timestamptz default now(), p_limit integer default 5000)
returns jsonb
language plpgsql
set search_path = ''
as $$
declare
  v_idle interval := make_interval(secs => public.memory_setting('session_idle_minutes')::double precision * 60);
  v_ids  uuid[];
  v_result jsonb;
begin
  select coalesce(array_agg(x.id), '{}') into v_ids
    from (select s.id from public.memory_sessions s
           where s.ended_at is null and s.updated_at < p_now - v_idle
           order by s.updated_at
           limit p_limit
             for update skip locked) x;
  select jsonb_build_object('ended', count(*) filter (where e.ended_now), 'queued', count(e.job_id)) into v_result
    from memory_private.end_memory_sessions(v_ids, 'idle', p_now) e;
  return v_result;
end;
$$;
