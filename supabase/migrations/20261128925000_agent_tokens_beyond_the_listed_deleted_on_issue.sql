-- A user's stopped agent tokens beyond the 50 the list shows are deleted when the user issues a new
-- one (docs/auth.md#agent-tokens). The nightly prune (20261128920000) deletes what stopped working
-- more than agent_tokens_retention_days ago, at most 10,000 a night; but a user who issues and
-- revokes in a loop, within the write rate limit, makes hundreds of thousands of rows a day, more
-- than the prune takes, and GET memory/agent-tokens reads every row of its user to pick the 50
-- newest stopped ones. Now each issue keeps the user's stopped tokens to the 50 newest (the list's
-- INACTIVE_TOKENS_LISTED, _shared/agent-tokens.ts), so a user holds at most
-- agent_tokens_max_active + 50 rows whatever they do. What is deleted was neither usable nor listed.
--
-- Done in the cap's trigger, under its per-user lock, so parallel issues delete in turn.
--
-- Also: the cap's trigger (20261128890000) counted and locked the tokens of the row's owner_id
-- (and would trim them now), and it runs before the insert policy checks that owner_id is the caller (RLS checks
-- come after BEFORE ROW triggers). A signed-in tenant inserting a row (PostgREST or SQL: it holds
-- INSERT(owner_id)) named another user's id, so that user's tokens were counted and locked in
-- the tenant's statement before it was refused, and a user holding
-- agent_tokens_max_active tokens answered 'the user already holds 50 active agent tokens' instead
-- of the RLS refusal: an oracle on another user's tokens. Now a tenant's row for another user
-- skips the trigger's work and the policy refuses it as before; the API (the tenant's own id) and
-- service_role are unchanged.
--
-- Restated whole from 20261128890000; the early return for another user's row and the delete are new.
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
  -- A tenant's row for another user: the insert policy refuses it after this trigger (RLS checks
  -- come after BEFORE triggers), so neither count nor lock nor delete that user's tokens.
  if pg_catalog.current_setting('role', true) = 'authenticated'
     and new.owner_id is distinct from (select auth.uid()) then
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
  -- The user's stopped tokens past the 50 newest, in the list's order (memory_agent_tokens_owner).
  delete from public.memory_agent_tokens d
   where d.id in (
     select t.id from public.memory_agent_tokens t
      where t.owner_id = new.owner_id
        and (t.revoked_at is not null or t.expires_at <= pg_catalog.now())
      order by t.created_at desc, t.id
      offset 50);
  return new;
end;
$$;
revoke all on function memory_private.enforce_agent_token_limit() from public, anon, authenticated;
