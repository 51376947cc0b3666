-- take_rate_limit_token takes a token from a tenant's bucket in one UPDATE (docs/operations.md#rate-limits).
--
-- Every request with limits on ran three statements on its bucket: an INSERT … ON CONFLICT DO
-- NOTHING that met the existing row, a SELECT … FOR UPDATE that locked it (a row lock is a change
-- of the row's page and a WAL record of its own), and the UPDATE that took the token: three index
-- lookups and two changes of the row a request. A bucket that exists and holds a token (every
-- request but a tenant's first and those over the limit) is now taken from by one UPDATE whose
-- WHERE is the decision (the refill up to now leaves at least one token): one lookup, one change
-- (tests/rate_limit_one_statement.test.ts counts them).
--
-- Unchanged: the refill is counted up to the moment the row is held (an UPDATE that waited for the
-- row evaluates its WHERE and SET again on the row's latest version, clock_timestamp() included:
-- tests/rate_limit_clock.test.ts), never back before the bucket's own refilled_at; the clock is read
-- once for the tokens and refilled_at it writes; a refused call takes nothing and says how long to
-- wait; a bucket deleted meanwhile (prune_rate_limit_buckets, a service_role reset) is created again,
-- full, and a token taken from it (tests/rate_limit_prune_race.test.ts). The rarer paths keep the
-- steps they had: no bucket yet (a full one minus the token taken is inserted) and an empty bucket
-- (read under its lock for the wait). Only the function's body changes; its signature and grants stay.

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
