-- Agent tokens and Supabase's new API keys. Layers: table → RLS and grants → RPCs → the worker's
-- call. See docs/auth.md.
--
-- An agent token is a long-lived credential a user issues for one coding agent (Claude Code as
-- `coder`, a review bot as `reviewer`, …): it acts for the user's tenant, names the agent whose
-- memory.query allowlist applies, and is revoked on its own. Only its SHA-256 is stored (the token
-- is 32 random bytes, so a fast hash is enough, as for GitHub's tokens); the token is shown once.

create table public.memory_agent_tokens (
  id           uuid primary key default gen_random_uuid(),
  owner_id     uuid not null default auth.uid(),
  agent        text not null,
  label        text,
  -- hex SHA-256 of the whole token; looked up by memory_private.use_agent_token
  token_hash   text not null,
  -- the token's first characters, so a user can tell tokens apart in lists (never enough to use)
  token_prefix text not null,
  created_at   timestamptz not null default now(),
  expires_at   timestamptz,
  last_used_at timestamptz,
  revoked_at   timestamptz,
  constraint memory_agent_tokens_hash_unique unique (token_hash),
  constraint memory_agent_tokens_agent_shape check (agent ~ '^[a-z][a-z0-9_-]{0,63}$'),
  constraint memory_agent_tokens_label_length check (label is null or char_length(label) between 1 and 200),
  constraint memory_agent_tokens_hash_shape check (token_hash ~ '^[0-9a-f]{64}$'),
  constraint memory_agent_tokens_prefix_length check (char_length(token_prefix) between 1 and 16),
  constraint memory_agent_tokens_expiry_after_creation check (expires_at is null or expires_at > created_at)
);
create index memory_agent_tokens_owner on public.memory_agent_tokens (owner_id, created_at desc);
comment on table public.memory_agent_tokens is
  'Revocable per-agent credentials (hash only) issued by users through POST memory/agent-tokens; docs/auth.md.';

-- RLS and grants --------------------------------------------------------------------------------

alter table public.memory_agent_tokens enable row level security;
revoke all on table public.memory_agent_tokens from anon, authenticated, public;
grant all on table public.memory_agent_tokens to service_role;

-- Owners list, issue and revoke theirs. The hash is never readable by a client; a revoked token
-- stays revoked (the update policy only accepts a revocation time).
grant select (id, owner_id, agent, label, token_prefix, created_at, expires_at, last_used_at, revoked_at)
  on public.memory_agent_tokens to authenticated;
grant insert (owner_id, agent, label, token_hash, token_prefix, expires_at) on public.memory_agent_tokens to authenticated;
grant update (revoked_at) on public.memory_agent_tokens to authenticated;
create policy "Owners can read their agent tokens" on public.memory_agent_tokens
  for select to authenticated using (owner_id = (select auth.uid()));
create policy "Owners can issue agent tokens" on public.memory_agent_tokens
  for insert to authenticated with check (owner_id = (select auth.uid()) and revoked_at is null);
create policy "Owners can revoke their agent tokens" on public.memory_agent_tokens
  for update to authenticated
  using (owner_id = (select auth.uid())) with check (owner_id = (select auth.uid()) and revoked_at is not null);

-- RPCs ------------------------------------------------------------------------------------------

-- The tenant and agent of a token, by its hash, when it is neither revoked nor expired; no row
-- otherwise. Called by the edge functions' auth before any tenant is known (so not as a tenant),
-- on the service's own connection. Notes the use, at most once an hour per token, so a request
-- does not write a row every time.
create or replace function memory_private.use_agent_token(p_token_hash text, p_now timestamptz default now())
returns table (id uuid, owner_id uuid, agent text)
language plpgsql
security definer
set search_path = ''
as $$
begin
  return query
  with found as (
    select t.id, t.owner_id, t.agent, t.last_used_at
      from public.memory_agent_tokens t
     where t.token_hash = p_token_hash
       and t.revoked_at is null
       and (t.expires_at is null or t.expires_at > p_now)
  ), touched as (
    update public.memory_agent_tokens t set last_used_at = p_now
      from found f
     where t.id = f.id and (f.last_used_at is null or f.last_used_at < p_now - interval '1 hour')
  )
  select f.id, f.owner_id, f.agent from found f;
end;
$$;
revoke all on function memory_private.use_agent_token(text, timestamptz) from public, anon, authenticated;
grant execute on function memory_private.use_agent_token(text, timestamptz) to service_role;

-- The worker's call -----------------------------------------------------------------------------

-- Headers for the pg_cron → memory-worker call with the key stored in Vault: a new secret API key
-- (sb_secret_…, not a JWT) goes in the apikey header, a legacy service_role JWT as the bearer
-- token. The function's own auth accepts both (verify_jwt is off for it: the platform check does
-- not know the new keys).
create or replace function memory_private.worker_request_headers(p_key text)
returns jsonb
language sql
immutable
security invoker
set search_path = ''
as $$
  select case when starts_with(p_key, 'sb_secret_')
              then jsonb_build_object('content-type', 'application/json', 'apikey', p_key)
              else jsonb_build_object('content-type', 'application/json', 'authorization', 'Bearer ' || p_key)
         end
$$;
revoke all on function memory_private.worker_request_headers(text) from public, anon, authenticated;

-- The kick itself, where pg_net and pg_cron are installed (hosted Supabase): as before, but the key
-- is Vault's 'secret_key' (a new sb_secret_ key) when there is one, else 'service_role_key' (either
-- kind), sent in the header its kind needs.
do $outer$
begin
  if not exists (select from pg_extension where extname = 'pg_net')
     or not exists (select from pg_extension where extname = 'pg_cron') then
    raise notice 'pg_net or pg_cron not installed: memory-worker is not scheduled by pg_cron (run it on a timer or rely on enqueue kicks)';
    return;
  end if;

  -- Created dynamically: its body names net.* and vault.*, which exist only here.
  execute $fn$
    create or replace function memory_private.kick_memory_worker()
    returns void
    language plpgsql
    security definer
    set search_path = ''
    as $body$
    declare
      v_url text;
      v_key text;
    begin
      if to_regclass('vault.decrypted_secrets') is null then
        return;
      end if;
      execute 'select (select decrypted_secret from vault.decrypted_secrets where name = ''project_url''),
                      coalesce((select decrypted_secret from vault.decrypted_secrets where name = ''secret_key''),
                               (select decrypted_secret from vault.decrypted_secrets where name = ''service_role_key''))'
         into v_url, v_key;
      if v_url is null or v_key is null then
        return;
      end if;
      -- Nothing queued or expired: no HTTP call at all.
      if not exists (select from public.memory_jobs
                      where (status = 'queued' and run_after <= now())
                         or (status = 'running' and locked_until < now())) then
        return;
      end if;
      perform net.http_post(
        url := rtrim(v_url, '/') || '/functions/v1/memory-worker',
        headers := memory_private.worker_request_headers(v_key),
        body := '{}'::jsonb,
        timeout_milliseconds := 4000);
    end;
    $body$
  $fn$;
  execute 'revoke all on function memory_private.kick_memory_worker() from public';
end;
$outer$;
