-- A tenant's queued jobs are bounded (docs/operations.md#a-tenants-queued-jobs).
--
-- The fair order (20261128960000) keeps one tenant's backlog from delaying another tenant's job,
-- but nothing bounded the backlog itself: only the rate limits did, and they count requests. A
-- tenant posting memory-dedup within its write limit (600 a minute) queued 600 jobs a minute,
-- every one of them model and embedding calls paid by the operator, and memory-extract 60 a minute
-- of up to 8 MiB of transcript each, kept in the job's payload; 2,000 POSTs of memory-dedup with
-- the limit lifted queued 2,000 jobs, all answered 202. Now a tenant's request that would queue a
-- new job while the tenant has job_queue_tenant_max (1,000) jobs queued is refused: the route
-- answers 429 queue_full with Retry-After and writes nothing. A job the key already names is
-- answered as before (the same POST again is not refused), and the worker's own jobs (an extract
-- job's dedup jobs, a consolidation's insight job, pg_cron's jobs) are never refused: refusing
-- them would lose what their job found.

insert into public.memory_settings (name, value, description) values
  ('job_queue_tenant_max', 1000,
   'A tenant''s request that would queue a job while the tenant has this many jobs queued is answered 429 queue_full (Retry-After: job_fair_step_seconds); the worker''s own jobs are not counted against it. 0: no bound (docs/operations.md#a-tenants-queued-jobs).')
on conflict (name) do nothing;
alter table public.memory_settings add constraint memory_settings_job_queue_tenant_max_range
  check (name <> 'job_queue_tenant_max' or (value >= 0 and value = trunc(value)));

-- Queues a job for a tenant's request, within the tenant's bound: as enqueue_job, but when the key
-- is new and the owner already has job_queue_tenant_max jobs queued, queues nothing and answers
-- retry_after (job_fair_step_seconds: with a backlog a tenant gets about one job a step). The
-- count reads memory_jobs_owner_queued, at most the bound's entries. Transactions of one tenant
-- queueing at the same time do not see each other's jobs: each may pass at the bound, so a tenant
-- with k requests in flight can queue up to k - 1 past it. Called by jobs.ts enqueueJob inside a
-- request (as the service, like enqueue_job); the worker calls enqueue_job.
create or replace function memory_private.enqueue_tenant_job(
  p_owner uuid,
  p_kind text,
  p_idempotency_key text,
  p_payload jsonb default '{}',
  p_max_attempts integer default 5
)
returns table (id uuid, status text, deduplicated boolean, retry_after integer)
language plpgsql
set search_path = ''
as $$
#variable_conflict use_column
declare
  v_max integer := public.memory_setting('job_queue_tenant_max')::integer;
begin
  if v_max > 0
     and not exists (select from public.memory_jobs k
                      where k.owner_id = p_owner and k.kind = p_kind and k.idempotency_key = p_idempotency_key)
     and (select count(*) from (select from public.memory_jobs q
                                 where q.owner_id = p_owner and q.status = 'queued'
                                 limit v_max) s) >= v_max then
    return query select null::uuid, null::text, false,
                        greatest(1, ceil(public.memory_setting('job_fair_step_seconds'))::integer);
    return;
  end if;
  return query
  select e.id, e.status, e.deduplicated, 0
    from memory_private.enqueue_job(p_owner, p_kind, p_idempotency_key, p_payload, p_max_attempts) e;
end;
$$;
revoke all on function memory_private.enqueue_tenant_job(uuid, text, text, jsonb, integer) from public;
grant execute on function memory_private.enqueue_tenant_job(uuid, text, text, jsonb, integer) to service_role;
