-- take_rate_limit_token reads its clock once it holds the tenant's bucket row, not before it waits
-- for it (docs/operations.md#rate-limits).
--
-- It read clock_timestamp() first, then waited for the row while other requests of the tenant took
-- their tokens, and then set refilled_at to that earlier time: the bucket's clock went back by the
-- wait, and the next request was credited the same interval's refill a second time (about wait x
-- rate more tokens than the tenant earned, under a burst of concurrent requests; the review of
-- 20261130300000 noted it). tests/rate_limit_clock.test.ts: a request that waited for the row wrote
-- a refilled_at earlier than the one the holder wrote. Now the time is read after the lock, and never
-- before the bucket's own refilled_at (a clock stepped back gives no credit and takes none).
-- Only the function's body changes; its signature and grants stay.

create or replace function public.take_rate_limit_token(p_route_class text, p_service_role boolean default false)
returns double precision
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_owner  uuid := auth.uid();
  v_now    timestamptz;
  v_rate   double precision;
  v_burst  double precision;
  v_tokens double precision;
  v_at     timestamptz;
begin
  if p_route_class is null or p_route_class not in ('read', 'write', 'heavy') then
    raise exception 'unknown route class %', p_route_class using errcode = '22023';
  end if;
  if v_owner is null then
    raise exception 'no tenant: request.jwt.claims has no sub' using errcode = '42501';
  end if;
  if p_service_role and public.memory_setting('rate_limit_service_role') = 0 then
    return 0;
  end if;
  v_rate := public.memory_setting('rate_limit_' || p_route_class || '_per_minute')::double precision / 60;
  if v_rate = 0 then
    return 0;
  end if;
  v_burst := public.memory_setting('rate_limit_' || p_route_class || '_burst');

  -- The bucket can be deleted (prune_rate_limit_buckets, a service_role reset) between the insert
  -- that met it and the lock: then it is created again, full, and locked.
  loop
    insert into memory_private.rate_limit_buckets (owner_id, route_class, tokens, refilled_at)
    values (v_owner, p_route_class, v_burst, clock_timestamp())
    on conflict (owner_id, route_class) do nothing;
    select b.tokens, b.refilled_at into v_tokens, v_at
      from memory_private.rate_limit_buckets b
     where b.owner_id = v_owner and b.route_class = p_route_class
       for update;
    exit when found;
  end loop;
  -- The clock is read once the row is held: the refill is counted up to now, never back to before
  -- a wait for the row (another request's refilled_at may be later than when this one began).
  v_now := greatest(clock_timestamp(), v_at);
  v_tokens := least(v_burst, v_tokens + greatest(0, extract(epoch from v_now - v_at)) * v_rate);
  if v_tokens >= 1 then
    update memory_private.rate_limit_buckets
       set tokens = v_tokens - 1, refilled_at = v_now
     where owner_id = v_owner and route_class = p_route_class;
    return 0;
  end if;
  return (1 - v_tokens) / v_rate;
end;
$$;
