-- Agent tokens from the outside: a tenant sees, issues and revokes only its own; the hash is never
-- readable by a client; a revoked token stays revoked; anon gets nothing. use_agent_token answers
-- a live token's tenant and agent (and notes its use at most hourly), nothing for a revoked,
-- expired or unknown one; only the service may call it. The worker's call puts a new secret key
-- in the apikey header and a legacy JWT in Authorization.
begin;
select plan(24);

insert into public.memory_agent_tokens (id, owner_id, agent, label, token_hash, token_prefix, expires_at, revoked_at) values
  ('50000000-0000-4000-8000-0000000000a1', '50000000-0000-4000-8000-00000000000a', 'coder', 'laptop', repeat('a', 64), 'dvm_aaaaaa', null, null),
  ('50000000-0000-4000-8000-0000000000a2', '50000000-0000-4000-8000-00000000000a', 'reviewer', null, repeat('b', 64), 'dvm_bbbbbb', null, now()),
  ('50000000-0000-4000-8000-0000000000a3', '50000000-0000-4000-8000-00000000000a', 'coder', null, repeat('c', 64), 'dvm_cccccc', now() + interval '1 day', null),
  ('50000000-0000-4000-8000-0000000000b1', '50000000-0000-4000-8000-00000000000b', 'coder', null, repeat('d', 64), 'dvm_dddddd', null, null);

-- use_agent_token, as the service's connection calls it.
select results_eq(
  $$select owner_id, agent from memory_private.use_agent_token(repeat('a', 64))$$,
  $$values ('50000000-0000-4000-8000-00000000000a'::uuid, 'coder'::text)$$,
  'a live token answers its tenant and agent');
select isnt((select last_used_at from public.memory_agent_tokens where id = '50000000-0000-4000-8000-0000000000a1'), null, 'its use is noted');
update public.memory_agent_tokens set last_used_at = now() - interval '10 minutes' where id = '50000000-0000-4000-8000-0000000000a1';
select lives_ok($$select * from memory_private.use_agent_token(repeat('a', 64))$$, 'a second use within the hour');
select is((select last_used_at from public.memory_agent_tokens where id = '50000000-0000-4000-8000-0000000000a1'), now() - interval '10 minutes',
  'within the hour the use is not written again');
select is_empty($$select * from memory_private.use_agent_token(repeat('b', 64))$$, 'a revoked token answers nothing');
select is_empty($$select * from memory_private.use_agent_token(repeat('c', 64), now() + interval '2 days')$$, 'an expired token answers nothing');
select isnt_empty($$select * from memory_private.use_agent_token(repeat('c', 64))$$, 'the same token before its expiry answers');
select is_empty($$select * from memory_private.use_agent_token(repeat('e', 64))$$, 'an unknown hash answers nothing');

-- The worker's headers.
select is(memory_private.worker_request_headers('sb_secret_abc') ->> 'apikey', 'sb_secret_abc', 'a secret key goes in apikey');
select is(memory_private.worker_request_headers('sb_secret_abc') ->> 'authorization', null, 'and not as a bearer token');
select is(memory_private.worker_request_headers('eyJhbGciOi.x.y') ->> 'authorization', 'Bearer eyJhbGciOi.x.y', 'a legacy JWT is the bearer token');

-- Tenant A, signed in.
select tests.authenticate_as('50000000-0000-4000-8000-00000000000a');
select is((select count(*)::int from public.memory_agent_tokens), 3, 'A sees its own three tokens');
select is_empty($$select id from public.memory_agent_tokens where owner_id = '50000000-0000-4000-8000-00000000000b'$$, 'A cannot see B''s token');
select throws_ok($$select token_hash from public.memory_agent_tokens$$, '42501', null, 'A cannot read a token hash, even its own');
select lives_ok($$insert into public.memory_agent_tokens (owner_id, agent, token_hash, token_prefix)
                  values ('50000000-0000-4000-8000-00000000000a', 'tester', repeat('f', 64), 'dvm_ffffff')$$, 'A issues a token for itself');
select throws_ok($$insert into public.memory_agent_tokens (owner_id, agent, token_hash, token_prefix)
                   values ('50000000-0000-4000-8000-00000000000b', 'coder', repeat('0', 64), 'dvm_000000')$$,
  '42501', 'new row violates row-level security policy for table "memory_agent_tokens"', 'A cannot issue a token owned by B');
select is_empty($$update public.memory_agent_tokens set revoked_at = now() where owner_id = '50000000-0000-4000-8000-00000000000b' returning id$$,
  'A revokes none of B''s tokens');
select isnt_empty($$update public.memory_agent_tokens set revoked_at = now() where id = '50000000-0000-4000-8000-0000000000a1' returning id$$,
  'A revokes its own token');
select is_empty($$update public.memory_agent_tokens set revoked_at = null where id = '50000000-0000-4000-8000-0000000000a2' returning id$$,
  'a revoked token cannot be brought back (a tenant updates live tokens only: 20261128920000)');
select throws_ok($$update public.memory_agent_tokens set agent = 'ops' where id = '50000000-0000-4000-8000-0000000000a3'$$,
  '42501', 'permission denied for table memory_agent_tokens', 'a token''s agent cannot be changed');
select throws_ok($$delete from public.memory_agent_tokens$$, '42501', 'permission denied for table memory_agent_tokens', 'tokens are revoked, not deleted');
select throws_ok($$select * from memory_private.use_agent_token(repeat('d', 64))$$, '42501', null, 'a tenant cannot resolve tokens');

select tests.clear_authentication();
select tests.as_anon();
select throws_ok($$select id from public.memory_agent_tokens$$, '42501', 'permission denied for table memory_agent_tokens', 'anon reads no token');

select tests.clear_authentication();
select is((select revoked_at is not null from public.memory_agent_tokens where id = '50000000-0000-4000-8000-0000000000b1'), false, 'B''s token is untouched');

select * from finish();
rollback;
