-- Two corrections to the nightly prune of full rate-limit buckets (migration 20261130300000,
-- docs/operations.md#rate-limits).
--
-- A request that found its tenant's bucket (its insert met the row) and then waited for the row
-- while the prune locked and deleted it read no row, counted it as full and passed without taking
-- a token, and so did every request of that tenant waiting behind it: five requests waiting at once
-- all passed against a burst of 2 (tests/rate_limit_prune_race.test.ts). take_rate_limit_token now
-- starts again from the insert when its bucket is gone: the first waiter creates a full bucket and
-- the others take their tokens from it in turn, as without the prune.
--
-- The prune read the three classes' settings (public.memory_setting) for every bucket it looked at,
-- three function calls a row: 100,000 buckets took 1.7 s, each locked (and its tenant's next request
-- waiting) until the prune commits. The settings are read once now (a materialized CTE): 0.44 s.

create or replace function public.take_rate_limit_token(p_route_class text, p_service_role boolean default false)
returns double precision
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_owner  uuid := auth.uid();
  v_now    timestamptz := clock_timestamp();
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
    values (v_owner, p_route_class, v_burst, v_now)
    on conflict (owner_id, route_class) do nothing;
    select b.tokens, b.refilled_at into v_tokens, v_at
      from memory_private.rate_limit_buckets b
     where b.owner_id = v_owner and b.route_class = p_route_class
       for update;
    exit when found;
  end loop;
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

create or replace function memory_private.prune_rate_limit_buckets(p_now timestamptz default now(), p_limit integer default 100000)
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
  with limits as materialized (
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
      with limits as materialized (
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
