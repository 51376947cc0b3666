-- take_rate_limit_token answers NULL when the caller's route class has no limit
-- (docs/operations.md#rate-limits).
--
-- With a class's limit off (rate_limit_<class>_per_minute = 0, or a service_role caller while
-- rate_limit_service_role = 0) the function took nothing and answered 0, as for a token taken: the
-- pools could not tell the two apart, so every request sent the statement, though its answer could
-- not change until an operator changed public.memory_settings. A retrieval with a remote embedder
-- sends it as a round trip of its own, before the embedding (about 1.3 of 10 ms of CPU a request
-- under eight clients, docs/operations.md#cpu-per-retrieval). Now such a call answers NULL: no
-- bucket applies. A pool that gets that answer sends no token statement for that class and caller
-- kind for the next second (rate-limit.ts unlimitedRouteClasses), so a change of the rate-limit
-- settings applies within one second. The answer depends on the settings only (they are global,
-- no tenant has its own), so the pool keeps it per class and caller kind, not per tenant.
--
-- Unchanged: 0 when a token is taken, the seconds to wait when refused, the checks of the class
-- and the tenant, the bucket's steps. A caller that reads NULL as 0 (the functions before this
-- change: `?? 0`) lets the request through, as before.

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
  -- NULL: no limit for this class and caller kind; nothing taken, nothing to wait for.
  if p_service_role and public.memory_setting('rate_limit_service_role') = 0 then
    return null;
  end if;
  v_rate := public.memory_setting('rate_limit_' || p_route_class || '_per_minute')::double precision / 60;
  if v_rate = 0 then
    return null;
  end if;
  v_burst := public.memory_setting('rate_limit_' || p_route_class || '_burst');

  -- The bucket holds a token: taken in this one statement. The SET's sub-select reads the clock
  -- once, after the row is held (evaluated on the version the UPDATE locked).
  update memory_private.rate_limit_buckets b
     set (tokens, refilled_at) = (
           select least(v_burst, b.tokens + extract(epoch from n.at - b.refilled_at) * v_rate) - 1, n.at
             from (select greatest(clock_timestamp(), b.refilled_at) as at) n)
   where b.owner_id = v_owner and b.route_class = p_route_class
     and least(v_burst, b.tokens + greatest(0, extract(epoch from clock_timestamp() - b.refilled_at)) * v_rate) >= 1;
  if found then
    return 0;
  end if;

  -- No token in it, or no bucket. The bucket can be deleted (prune_rate_limit_buckets, a
  -- service_role reset) between the two steps: then it is created again, full, and a token taken.
  loop
    select b.tokens, b.refilled_at into v_tokens, v_at
      from memory_private.rate_limit_buckets b
     where b.owner_id = v_owner and b.route_class = p_route_class
       for update;
    exit when found;
    insert into memory_private.rate_limit_buckets (owner_id, route_class, tokens, refilled_at)
    values (v_owner, p_route_class, v_burst - 1, clock_timestamp())
    on conflict (owner_id, route_class) do nothing;
    if found then
      return 0;
    end if;
  end loop;
  -- The clock is read once the row is held: the refill is counted up to now, never back to before
  -- a wait for the row (another request's refilled_at may be later than when this one began).
  v_now := greatest(clock_timestamp(), v_at);
  v_tokens := least(v_burst, v_tokens + greatest(0, extract(epoch from v_now - v_at)) * v_rate);
  if v_tokens >= 1 then
    -- Refilled since the UPDATE read it (or a bucket another request just created).
    update memory_private.rate_limit_buckets
       set tokens = v_tokens - 1, refilled_at = v_now
     where owner_id = v_owner and route_class = p_route_class;
    return 0;
  end if;
  return (1 - v_tokens) / v_rate;
end;
$$;
