-- A user's stopped agent tokens are kept to the 50 newest (what GET memory/agent-tokens lists) each
-- time the user issues a new one (migration 20261128925000): issuing and revoking in a loop cannot
-- grow the table faster than the nightly prune takes it. Active tokens, another user's tokens and
-- the 50 newest stopped ones stay; a row inserted already revoked (service_role restoring a list)
-- deletes nothing.
begin;
select plan(6);

-- User A: 2 active tokens, then 60 revoked and 10 expired ones, one a minute apart (the oldest
-- first). The active ones first: issuing them would already trim the stopped ones.
insert into public.memory_agent_tokens (owner_id, agent, token_hash, token_prefix, created_at)
select '97000000-0000-4000-8000-00000000000a', 'coder', encode(sha256(('a' || i)::bytea), 'hex'), 'dvm_test97',
       now() - make_interval(mins => 1000 - i)
  from generate_series(71, 72) i;
insert into public.memory_agent_tokens (owner_id, agent, token_hash, token_prefix, created_at, expires_at, revoked_at)
select '97000000-0000-4000-8000-00000000000a', 'coder', encode(sha256(('a' || i)::bytea), 'hex'), 'dvm_test97',
       now() - make_interval(mins => 1000 - i),
       case when i > 60 then now() - interval '1 minute' end,
       case when i <= 60 then now() - interval '1 hour' end
  from generate_series(1, 70) i;
-- User B: 60 revoked tokens.
insert into public.memory_agent_tokens (owner_id, agent, token_hash, token_prefix, created_at, revoked_at)
select '97000000-0000-4000-8000-00000000000b', 'coder', encode(sha256(('b' || i)::bytea), 'hex'), 'dvm_test97', now() - make_interval(mins => 1000 - i), now()
  from generate_series(1, 60) i;

create temporary view a_tokens as
  select t.*, t.revoked_at is null and (t.expires_at is null or t.expires_at > now()) as active
    from public.memory_agent_tokens t where owner_id = '97000000-0000-4000-8000-00000000000a';

select is((select count(*) from a_tokens where not active), 70::bigint, 'before: A holds 70 stopped tokens');

-- A issues one, as itself.
select tests.authenticate_as('97000000-0000-4000-8000-00000000000a');
insert into public.memory_agent_tokens (owner_id, agent, token_hash, token_prefix)
values ('97000000-0000-4000-8000-00000000000a', 'coder', encode(sha256(('a-new')::bytea), 'hex'), 'dvm_test97');
select tests.clear_authentication();

select is((select count(*) from a_tokens where not active), 50::bigint, 'after an issue A holds the 50 newest stopped tokens');
select is_empty($$select from a_tokens where token_hash in (select encode(sha256(('a' || i)::bytea), 'hex') from generate_series(1, 20) i)$$,
  'the 20 oldest went (in the list''s order, newest first)');
select is((select count(*) from a_tokens where active), 3::bigint, 'the two active tokens and the new one stay');
select is((select count(*) from public.memory_agent_tokens where owner_id = '97000000-0000-4000-8000-00000000000b'),
  60::bigint, 'another user''s tokens are not touched');

-- A row inserted already revoked takes no place and deletes nothing.
insert into public.memory_agent_tokens (owner_id, agent, token_hash, token_prefix, revoked_at)
values ('97000000-0000-4000-8000-00000000000b', 'coder', encode(sha256(('b-restored')::bytea), 'hex'), 'dvm_test97', now());
select is((select count(*) from public.memory_agent_tokens where owner_id = '97000000-0000-4000-8000-00000000000b'),
  61::bigint, 'a row inserted revoked deletes nothing');

select * from finish();
rollback;
