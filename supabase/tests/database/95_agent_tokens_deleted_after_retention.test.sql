-- Revoked and expired agent tokens are deleted agent_tokens_retention_days (90) after they stopped
-- working, whoever's they are (migration 20261128920000): memory_private.prune_agent_tokens, run
-- nightly by devai-agent-token-prune. A token stopped at the first of its revocation and its
-- expiry; active tokens (never revoked, no expiry or a later one) stay however old. A call takes at
-- most p_limit, those that stopped first first, and says whether more are due; a second call finds
-- nothing. A tenant revokes a live token only, at now(): a revocation dated in the future (which
-- kept a row from the prune) or moved on later is refused. Fixtures are written as the table owner.
begin;
select plan(17);

create temporary table tok (name text primary key, id uuid not null default gen_random_uuid()) on commit drop;
insert into tok (name) values ('revoked_91d'), ('revoked_89d'), ('expired_91d'), ('expired_10d'), ('expired_120d_revoked_30d'),
  ('active_no_expiry'), ('active_expires_later'), ('b_revoked_200d');
insert into tok (name, id) values ('a_live', '95100000-0000-4000-8000-0000000000a9');
insert into public.memory_agent_tokens (id, owner_id, agent, token_hash, token_prefix, created_at, expires_at, revoked_at)
select tok.id, v.owner::uuid, 'coder', encode(sha256(convert_to(tok.name, 'UTF8')), 'hex'), 'dvm_test95', v.created_at, v.expires_at, v.revoked_at
  from (values
    ('revoked_91d', '95000000-0000-4000-8000-00000000000a', now() - interval '400 days', null::timestamptz, now() - interval '91 days'),
    ('revoked_89d', '95000000-0000-4000-8000-00000000000a', now() - interval '400 days', null, now() - interval '89 days'),
    ('expired_91d', '95000000-0000-4000-8000-00000000000a', now() - interval '400 days', now() - interval '91 days', null),
    ('expired_10d', '95000000-0000-4000-8000-00000000000a', now() - interval '400 days', now() - interval '10 days', null),
    ('expired_120d_revoked_30d', '95000000-0000-4000-8000-00000000000a', now() - interval '400 days', now() - interval '120 days', now() - interval '30 days'),
    ('active_no_expiry', '95000000-0000-4000-8000-00000000000a', now() - interval '400 days', null, null),
    ('active_expires_later', '95000000-0000-4000-8000-00000000000a', now() - interval '400 days', now() + interval '30 days', null),
    ('b_revoked_200d', '95000000-0000-4000-8000-00000000000b', now() - interval '400 days', null, now() - interval '200 days'),
    ('a_live', '95000000-0000-4000-8000-00000000000a', now() - interval '1 day', null, null)
  ) as v(name, owner, created_at, expires_at, revoked_at)
  join tok using (name);

-- Only our fixtures: other tests' rows are not there (each file rolls back), but say so anyway.
create temporary view ours as
  select tok.name from public.memory_agent_tokens t join tok using (id);

select is(memory_private.prune_agent_tokens(), '{"deleted": 4, "remaining": false}'::jsonb,
  'the prune deletes the four tokens that stopped working more than 90 days ago');
select results_eq($$select name from ours order by name$$,
  $$values ('a_live'::text), ('active_expires_later'), ('active_no_expiry'), ('expired_10d'), ('revoked_89d')$$,
  'revoked or expired within 90 days and active tokens stay; B''s old one went too; an expired token revoked later went by its expiry');
select is(memory_private.prune_agent_tokens(), '{"deleted": 0, "remaining": false}'::jsonb, 'a second call deletes nothing');
select is_empty($$select * from memory_private.use_agent_token(encode(sha256(convert_to('revoked_91d', 'UTF8')), 'hex'))$$,
  'a deleted token resolves to nothing, as a revoked one did');

-- At most p_limit a call, those that stopped first first; remaining says more are due.
insert into tok (name) values ('batch_300d'), ('batch_200d'), ('batch_100d');
insert into public.memory_agent_tokens (id, owner_id, agent, token_hash, token_prefix, created_at, revoked_at)
select tok.id, '95000000-0000-4000-8000-00000000000b', 'coder', encode(sha256(convert_to(tok.name, 'UTF8')), 'hex'), 'dvm_test95',
       now() - interval '400 days', now() - (substring(tok.name from 7 for 3) || ' days')::interval
  from tok where tok.name like 'batch_%';
select is(memory_private.prune_agent_tokens(p_limit => 2), '{"deleted": 2, "remaining": true}'::jsonb,
  'a call deletes at most p_limit and says more are due');
select results_eq($$select name from ours where name like 'batch_%'$$, $$values ('batch_100d'::text)$$,
  'the tokens that stopped working first went first');
select is(memory_private.prune_agent_tokens(p_limit => 2), '{"deleted": 1, "remaining": false}'::jsonb, 'the next call takes the rest');
select throws_ok($$select memory_private.prune_agent_tokens(p_limit => 0)$$, '22023', 'p_limit must be at least 1, got 0',
  'p_limit must be positive');

-- The retention is the setting's: at 30 days the token revoked 89 days ago goes, the one expired 10 days ago stays.
update public.memory_settings set value = 30 where name = 'agent_tokens_retention_days';
select is(memory_private.prune_agent_tokens(), '{"deleted": 1, "remaining": false}'::jsonb, 'a shorter retention deletes more');
select results_eq($$select name from ours order by name$$,
  $$values ('a_live'::text), ('active_expires_later'), ('active_no_expiry'), ('expired_10d')$$,
  'the token revoked 89 days ago went at a 30-day retention');
select throws_ok($$update public.memory_settings set value = 0 where name = 'agent_tokens_retention_days'$$, '23514', null,
  'the retention is at least one day');

-- Who may prune: not a tenant, not anon.
select ok(not has_function_privilege('authenticated', 'memory_private.prune_agent_tokens(timestamptz, integer)', 'execute')
          and not has_function_privilege('anon', 'memory_private.prune_agent_tokens(timestamptz, integer)', 'execute'),
          'authenticated and anon may not run the prune');

-- A tenant's revocation is dated now, once: nothing keeps a revoked row from the prune.
select tests.authenticate_as('95000000-0000-4000-8000-00000000000a');
select throws_ok($$update public.memory_agent_tokens set revoked_at = '2999-01-01' where id = '95100000-0000-4000-8000-0000000000a9'$$,
  '42501', 'new row violates row-level security policy for table "memory_agent_tokens"',
  'a revocation dated in the future is refused (it kept the row from every prune)');
select throws_ok($$update public.memory_agent_tokens set revoked_at = now() - interval '1 day' where id = '95100000-0000-4000-8000-0000000000a9'$$,
  '42501', 'new row violates row-level security policy for table "memory_agent_tokens"',
  'so is one dated in the past');
select isnt_empty($$update public.memory_agent_tokens set revoked_at = now() where id = '95100000-0000-4000-8000-0000000000a9' returning id$$,
  'a live token is revoked at now(), as the route does');
select is_empty($$update public.memory_agent_tokens set revoked_at = now() + interval '1 hour' where id = '95100000-0000-4000-8000-0000000000a9' returning id$$,
  'a revoked token cannot be revoked again to move its date on');
select tests.clear_authentication();
select is((select revoked_at from public.memory_agent_tokens where id = '95100000-0000-4000-8000-0000000000a9'), now(),
  'its revocation keeps the first date');

select * from finish();
rollback;
