-- Ending a session in a tenant's request is held to the tenant's queue bound too
-- (docs/operations.md#a-tenants-queued-jobs).
--
-- 20261203600000 bounded the jobs a request queues through enqueue_job, but a session's end queues
-- its consolidation job in memory_private.end_memory_sessions itself: POST memory/sessions/{id}/end,
-- and POST memory/episodes with a new session id on a thread (it ends the thread's open session).
-- A tenant posting one episode batch a request, each under a new session id, queued a consolidation
-- job a request past the bound (3 of 3 at a bound of 1). The bound's count is one function now,
-- tenant_queue_wait, read by enqueue_tenant_job and by the request's session end (sessions.ts).

-- 0 when the owner may queue another job (fewer than job_queue_tenant_max queued, or no bound);
-- else the seconds to wait (job_fair_step_seconds: with a backlog a tenant gets about one job a
-- step). Counts at most the bound's entries of memory_jobs_owner_queued. Called as the service.
create or replace function memory_private.tenant_queue_wait(p_owner uuid)
returns integer
language plpgsql
stable
set search_path = ''
as $$
declare
  v_max integer := public.memory_setting('job_queue_tenant_max')::integer;
begin
  if v_max > 0 and (select count(*) from (select from public.memory_jobs q
                                           where q.owner_id = p_owner and q.status = 'queued'
                                           limit v_max) s) >= v_max then
    return greatest(1, ceil(public.memory_setting('job_fair_step_seconds'))::integer);
  end if;
  return 0;
end;
$$;
revoke all on function memory_private.tenant_queue_wait(uuid) from public;
grant execute on function memory_private.tenant_queue_wait(uuid) to service_role;

-- As in 20261203600000, the count read through tenant_queue_wait.
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
  v_wait integer := 0;
begin
  if not exists (select from public.memory_jobs k
                  where k.owner_id = p_owner and k.kind = p_kind and k.idempotency_key = p_idempotency_key) then
    v_wait := memory_private.tenant_queue_wait(p_owner);
  end if;
  if v_wait > 0 then
    return query select null::uuid, null::text, false, v_wait;
    return;
  end if;
  return query
  select e.id, e.status, e.deduplicated, 0
    from memory_private.enqueue_job(p_owner, p_kind, p_idempotency_key, p_payload, p_max_attempts) e;
end;
$$;
revoke all on function memory_private.enqueue_tenant_job(uuid, text, text, jsonb, integer) from public;
grant execute on function memory_private.enqueue_tenant_job(uuid, text, text, jsonb, integer) to service_role;
