-- The agent-token cap's trigger works on the caller's own tokens only (migration
-- 20261128925000): a signed-in tenant inserting a token row named another user's id is refused by
-- the insert policy, as before, without the trigger counting that user's active tokens (its
-- message told a tenant that another user held agent_tokens_max_active of them) or trimming its
-- stopped ones. The tenant's own issue, and service_role's, still meet the cap.
begin;
select plan(5);

-- User A: agent_tokens_max_active active tokens and 60 revoked ones.
insert into public.memory_agent_tokens (owner_id, agent, token_hash, token_prefix, created_at)
select '99000000-0000-4000-8000-00000000000a', 'coder', encode(sha256(('a' || i)::bytea), 'hex'), 'dvm_test99',
       now() - make_interval(mins => 1000 - i)
  from generate_series(1, (select value::int from public.memory_settings where name = 'agent_tokens_max_active')) i;
insert into public.memory_agent_tokens (owner_id, agent, token_hash, token_prefix, created_at, revoked_at)
select '99000000-0000-4000-8000-00000000000a', 'coder', encode(sha256(('r' || i)::bytea), 'hex'), 'dvm_test99',
       now() - make_interval(mins => 2000 - i), now() - interval '1 hour'
  from generate_series(1, 60) i;

select tests.authenticate_as('99000000-0000-4000-8000-00000000000b');
select throws_ok($$insert into public.memory_agent_tokens (owner_id, agent, token_hash, token_prefix)
                   values ('99000000-0000-4000-8000-00000000000a', 'coder', repeat('b', 64), 'dvm_test99')$$,
  '42501', 'new row violates row-level security policy for table "memory_agent_tokens"',
  'B''s row for A is refused by the policy, not answered with A''s active token count');
select tests.clear_authentication();
select is((select count(*) from public.memory_agent_tokens where owner_id = '99000000-0000-4000-8000-00000000000a' and revoked_at is not null),
  60::bigint, 'A''s stopped tokens are all there');

-- A's own issue meets the cap (and is refused at it), as does service_role's for A.
select tests.authenticate_as('99000000-0000-4000-8000-00000000000a');
select throws_ok($$insert into public.memory_agent_tokens (owner_id, agent, token_hash, token_prefix)
                   values ('99000000-0000-4000-8000-00000000000a', 'coder', repeat('c', 64), 'dvm_test99')$$,
  '23514', null, 'A''s own issue beyond the cap is refused');
select tests.as_service_role();
select throws_ok($$insert into public.memory_agent_tokens (owner_id, agent, token_hash, token_prefix)
                   values ('99000000-0000-4000-8000-00000000000a', 'coder', repeat('d', 64), 'dvm_test99')$$,
  '23514', null, 'so is service_role''s for A');
-- Below the cap, A's issue trims A's stopped tokens to the 50 listed.
select tests.clear_authentication();
update public.memory_agent_tokens set revoked_at = now()
 where id = (select id from public.memory_agent_tokens where owner_id = '99000000-0000-4000-8000-00000000000a' and revoked_at is null limit 1);
select tests.authenticate_as('99000000-0000-4000-8000-00000000000a');
insert into public.memory_agent_tokens (owner_id, agent, token_hash, token_prefix)
values ('99000000-0000-4000-8000-00000000000a', 'coder', repeat('e', 64), 'dvm_test99');
select tests.clear_authentication();
select is((select count(*) from public.memory_agent_tokens where owner_id = '99000000-0000-4000-8000-00000000000a' and revoked_at is not null),
  50::bigint, 'A''s own issue keeps its stopped tokens to the 50 listed');

select * from finish();
rollback;
