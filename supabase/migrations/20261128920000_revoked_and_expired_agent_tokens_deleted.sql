-- Revoked and expired agent tokens are deleted agent_tokens_retention_days (90) after they stopped
-- working (docs/auth.md#agent-tokens). Nothing deleted them before: every token a user revoked or
-- let expire stayed in public.memory_agent_tokens forever, unusable and, beyond the 50 newest,
-- not even listed. Nothing refers to a token's row (no foreign key; history actors name the
-- agent and user, `agent:<agent>@user:<id>`, never the token), so deleting it changes nothing but
-- the list: such a token simply drops out of GET memory/agent-tokens. Its hash goes with it; a
-- deleted token still answers 401, as a revoked one does.
--
-- A token stopped working at least(revoked_at, expires_at): the first of its revocation and its
-- expiry (an expired token may still be revoked later; it stopped at its expiry). The prune reads
-- an index on that expression, so it touches the due rows only, not every tenant's tokens.
--
-- The revocation time is the revoking transaction's clock: a tenant could set revoked_at to any
-- value (the update policy only asked for one), so a revocation dated 2999 kept its row from any
-- retention, and an already revoked token could be revoked again to push its date on. Now a tenant
-- revokes a live token only, at now(); what the route does (POST memory/agent-tokens/{id}/revoke)
-- is unchanged.

insert into public.memory_settings (name, value, description) values
  ('agent_tokens_retention_days', 90,
   'Agent tokens revoked or expired for longer than this many days are deleted by devai-agent-token-prune; active tokens are never touched.')
on conflict (name) do nothing;
alter table public.memory_settings add constraint memory_settings_agent_tokens_retention_days_range
  check (name <> 'agent_tokens_retention_days' or value >= 1);

-- When each token stopped working (null: it works, and has no expiry), for the prune's range scan.
create index memory_agent_tokens_inactive_since on public.memory_agent_tokens ((least(revoked_at, expires_at)))
  where least(revoked_at, expires_at) is not null;

drop policy "Owners can revoke their agent tokens" on public.memory_agent_tokens;
create policy "Owners can revoke their live agent tokens, now" on public.memory_agent_tokens
  for update to authenticated
  using (owner_id = (select auth.uid()) and revoked_at is null)
  with check (owner_id = (select auth.uid()) and revoked_at = (select now()));

-- Deletes at most p_limit tokens revoked or expired more than agent_tokens_retention_days before
-- p_now, those that stopped working first first, skipping any a concurrent transaction holds (a
-- revocation in flight). Returns {"deleted": n, "remaining": true|false} (remaining: more are due;
-- the next night's call takes them). Called by pg_cron (devai-agent-token-prune) as postgres; by
-- hand: select memory_private.prune_agent_tokens();
create function memory_private.prune_agent_tokens(p_now timestamptz default now(), p_limit integer default 10000)
returns jsonb
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
  v_cutoff  timestamptz := p_now - make_interval(secs => public.memory_setting('agent_tokens_retention_days')::double precision * 86400);
  v_deleted integer;
begin
  if p_limit is null or p_limit < 1 then
    raise exception 'p_limit must be at least 1, got %', p_limit using errcode = '22023';
  end if;
  with due as (
    select t.id from public.memory_agent_tokens t
     where least(t.revoked_at, t.expires_at) < v_cutoff
     order by least(t.revoked_at, t.expires_at)
     limit p_limit
       for update skip locked
  )
  delete from public.memory_agent_tokens t using due where t.id = due.id;
  get diagnostics v_deleted = row_count;
  return jsonb_build_object(
    'deleted', v_deleted,
    'remaining', exists (select from public.memory_agent_tokens t where least(t.revoked_at, t.expires_at) < v_cutoff));
end;
$$;
revoke all on function memory_private.prune_agent_tokens(timestamptz, integer) from public;

insert into public.memory_maintenance_schedules (job_name, schedule, command, description) values
  ('devai-agent-token-prune', '50 6 * * *', 'select memory_private.prune_agent_tokens()',
   'Deletes agent tokens revoked or expired more than agent_tokens_retention_days (90) ago, at most 10,000 a night, those that stopped working first first.')
on conflict (job_name) do update
  set schedule = excluded.schedule, command = excluded.command, description = excluded.description;

select memory_private.register_maintenance_schedules();
