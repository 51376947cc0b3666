-- A cap on a user's active agent tokens (docs/auth.md#agent-tokens). There was none: a user (or a
-- stolen session) could issue tokens until the rate limit stopped it, and GET memory/agent-tokens
-- listed them all. Active means neither revoked nor expired; beyond the cap an issue is refused
-- (the edge function answers 409 agent_token_limit: revoke one first).

insert into public.memory_settings (name, value, description) values
  ('agent_tokens_max_active', 50,
   'Agent tokens a user may hold at once (neither revoked nor expired); issuing one more is refused until one is revoked.')
on conflict (name) do nothing;

alter table public.memory_settings add constraint memory_settings_agent_tokens_max_active_range
  check (name <> 'agent_tokens_max_active' or (value >= 1 and value = trunc(value)));

-- The active-token count of a user, for the cap check below.
create index memory_agent_tokens_owner_active on public.memory_agent_tokens (owner_id)
  where revoked_at is null;

-- Refuses a new token when its owner already holds agent_tokens_max_active active ones. Race-free:
-- a transaction-level advisory lock per owner serialises the owner's issues, so two parallel
-- issues at the cap cannot both count the same tokens (the second waits for the first to commit,
-- then counts its token; plpgsql takes a new snapshot per statement). Security definer so the
-- count sees every token of the owner whoever inserts. Raised as a check violation naming the
-- constraint memory_agent_tokens_active_limit, which the edge function turns into a 409.
create or replace function memory_private.enforce_agent_token_limit()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
declare
  v_active bigint;
begin
  -- A row that is revoked or expired already (service_role restoring a list) takes no place.
  if new.revoked_at is not null or new.expires_at <= pg_catalog.now() then
    return new;
  end if;
  perform pg_catalog.pg_advisory_xact_lock(
    pg_catalog.hashtextextended('public.memory_agent_tokens ' || new.owner_id::text, 0));
  select count(*) into v_active
    from public.memory_agent_tokens t
   where t.owner_id = new.owner_id
     and t.revoked_at is null
     and (t.expires_at is null or t.expires_at > pg_catalog.now());
  if v_active >= public.memory_setting('agent_tokens_max_active') then
    raise exception 'the user already holds % active agent tokens, the most allowed (agent_tokens_max_active)', v_active
      using errcode = 'check_violation', constraint = 'memory_agent_tokens_active_limit',
            hint = 'revoke one (POST memory/agent-tokens/{id}/revoke) before issuing another';
  end if;
  return new;
end;
$$;
revoke all on function memory_private.enforce_agent_token_limit() from public, anon, authenticated;

create trigger memory_agent_tokens_active_limit
  before insert on public.memory_agent_tokens
  for each row execute function memory_private.enforce_agent_token_limit();
