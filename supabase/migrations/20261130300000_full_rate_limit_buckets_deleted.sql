-- Rate-limit buckets that have refilled are deleted (docs/operations.md#rate-limits). Nothing
-- deleted a bucket before: every tenant that ever sent a request kept up to three rows in
-- memory_private.rate_limit_buckets (read, write, heavy) forever, and anyone who can sign up is a
-- tenant, so the table grew with every account that ever called, active or not.
--
-- A bucket that has refilled to its class's burst is exactly the bucket take_rate_limit_token
-- creates for a tenant without one, so deleting it changes no answer. A bucket a tenant has drawn
-- on and not yet refilled is never deleted: no flood of requests, its own or other tenants', can
-- reset a tenant's limit. A class without a limit (its per_minute 0) never reads its buckets, so
-- they go too. A request that takes its token while its full bucket is being deleted may pass
-- without one being taken: its bucket was full, so it would have passed anyway.

-- Deletes at most p_limit buckets full at p_now (refilled to their class's burst at its current
-- rate) or of a class without a limit, skipping any a take_rate_limit_token call holds. Returns
-- {"deleted": n, "remaining": true|false} (remaining: more are due; the next call takes them).
-- Called by pg_cron (devai-rate-limit-prune) as postgres; by hand:
-- select memory_private.prune_rate_limit_buckets();
create function memory_private.prune_rate_limit_buckets(p_now timestamptz default now(), p_limit integer default 100000)
returns jsonb
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
  v_deleted integer;
begin
  if p_limit is null or p_limit < 1 then
    raise exception 'p_limit must be at least 1, got %', p_limit using errcode = '22023';
  end if;
  with limits as (
    select c.route_class,
           public.memory_setting('rate_limit_' || c.route_class || '_per_minute')::double precision / 60 as rate,
           public.memory_setting('rate_limit_' || c.route_class || '_burst')::double precision as burst
      from (values ('read'), ('write'), ('heavy')) c (route_class)
  ),
  due as (
    select b.owner_id, b.route_class
      from memory_private.rate_limit_buckets b
      join limits l on l.route_class = b.route_class
     where l.rate = 0
        or b.tokens + greatest(0, extract(epoch from p_now - b.refilled_at)) * l.rate >= l.burst
     limit p_limit
       for update of b skip locked
  )
  delete from memory_private.rate_limit_buckets b
   using due where b.owner_id = due.owner_id and b.route_class = due.route_class;
  get diagnostics v_deleted = row_count;
  return jsonb_build_object(
    'deleted', v_deleted,
    'remaining', exists (
      with limits as (
        select c.route_class,
               public.memory_setting('rate_limit_' || c.route_class || '_per_minute')::double precision / 60 as rate,
               public.memory_setting('rate_limit_' || c.route_class || '_burst')::double precision as burst
          from (values ('read'), ('write'), ('heavy')) c (route_class)
      )
      select from memory_private.rate_limit_buckets b
        join limits l on l.route_class = b.route_class
       where l.rate = 0
          or b.tokens + greatest(0, extract(epoch from p_now - b.refilled_at)) * l.rate >= l.burst));
end;
$$;
revoke all on function memory_private.prune_rate_limit_buckets(timestamptz, integer) from public;

insert into public.memory_maintenance_schedules (job_name, schedule, command, description) values
  ('devai-rate-limit-prune', '55 6 * * *', 'select memory_private.prune_rate_limit_buckets()',
   'Deletes rate-limit buckets that have refilled to their burst (the bucket a tenant without one gets), at most 100,000 a night; a bucket drawn on is never touched.')
on conflict (job_name) do update
  set schedule = excluded.schedule, command = excluded.command, description = excluded.description;

select memory_private.register_maintenance_schedules();
