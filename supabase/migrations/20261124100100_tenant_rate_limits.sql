-- Per-tenant rate limits: a token bucket per tenant and route class, kept in the database so every
-- function instance (and the local server) shares it, and taken in the request's own tenant
-- transaction (no extra round trip: _shared/db.ts folds the call into the transaction's first
-- statement). Route classes: read (GET memory/*, memory-retrieve), write (remember, correct,
-- forget, pin, memory-dedup), heavy (memory-extract POST, memory-compact). A request over its
-- tenant's limit is answered 429 rate_limited with Retry-After and does nothing. See
-- docs/operations.md#rate-limits.

-- Limits (read at every request; change them with an UPDATE, no redeploy). A rate of 0 turns the
-- limit of that class off. Generous on purpose: an agent calls retrieve once a turn.
insert into public.memory_settings (name, value, description) values
  ('rate_limit_read_per_minute', 1200,
   'Read requests (GET memory/*, memory-retrieve) a tenant may make per minute, sustained; 0: no limit.'),
  ('rate_limit_read_burst', 300,
   'Read requests a tenant may make at once (the bucket size) before the per-minute rate applies.'),
  ('rate_limit_write_per_minute', 600,
   'Write requests (remember, correct, forget, restore, pin, memory-dedup) a tenant may make per minute, sustained; 0: no limit.'),
  ('rate_limit_write_burst', 120,
   'Write requests a tenant may make at once before the per-minute rate applies.'),
  ('rate_limit_heavy_per_minute', 60,
   'Heavy requests (memory-extract POST, memory-compact) a tenant may make per minute, sustained; 0: no limit.'),
  ('rate_limit_heavy_burst', 20,
   'Heavy requests a tenant may make at once before the per-minute rate applies.'),
  ('rate_limit_service_role', 0,
   '1: requests of service_role callers count against the tenant they act for (x-devai-tenant); 0: they are not limited.')
on conflict (name) do nothing;

alter table public.memory_settings add constraint memory_settings_rate_limit_range
  check (name not like 'rate\_limit\_%' or case
    when name like '%\_per\_minute' then value >= 0
    when name like '%\_burst' then value >= 1
    when name = 'rate_limit_service_role' then value in (0, 1)
    else true
  end);

-- One bucket per tenant and route class: `tokens` as of `refilled_at`; it refills continuously at
-- the class's rate up to its burst. Tenants have no grant on it (they could refill their own
-- bucket); take_rate_limit_token writes it. service_role may read it, and reset a bucket by
-- deleting its row (it comes back full).
create table memory_private.rate_limit_buckets (
  owner_id    uuid not null,
  route_class text not null,
  tokens      double precision not null,
  refilled_at timestamptz not null,
  primary key (owner_id, route_class),
  constraint rate_limit_buckets_route_class check (route_class in ('read', 'write', 'heavy'))
);
alter table memory_private.rate_limit_buckets enable row level security;
revoke all on table memory_private.rate_limit_buckets from public, anon, authenticated;
grant select, delete on table memory_private.rate_limit_buckets to service_role;
create policy "Service role can read rate-limit buckets" on memory_private.rate_limit_buckets
  for select to service_role using (true);
create policy "Service role can reset rate-limit buckets" on memory_private.rate_limit_buckets
  for delete to service_role using (true);

-- Takes one token from the calling tenant's (auth.uid()) bucket of p_route_class and returns 0, or,
-- when the bucket is empty, takes nothing and returns the seconds until a token is there. A caller
-- that is service_role (p_service_role) is not limited unless rate_limit_service_role = 1. The
-- bucket row stays locked until the request's transaction ends, so a tenant's concurrent requests
-- of one class take their tokens in turn (others' buckets are other rows). Security definer: the
-- tenant role has no access to the buckets. Called by withTenant (_shared/db.ts) once per request.
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

  insert into memory_private.rate_limit_buckets (owner_id, route_class, tokens, refilled_at)
  values (v_owner, p_route_class, v_burst, v_now)
  on conflict (owner_id, route_class) do nothing;
  select b.tokens, b.refilled_at into v_tokens, v_at
    from memory_private.rate_limit_buckets b
   where b.owner_id = v_owner and b.route_class = p_route_class
     for update;
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
revoke all on function public.take_rate_limit_token(text, boolean) from public, anon;
grant execute on function public.take_rate_limit_token(text, boolean) to authenticated, service_role;
