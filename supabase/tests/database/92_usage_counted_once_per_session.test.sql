-- A usage report counts each memory once per session (migration 20261128870000): a resend moves no
-- counter, strength or total; a later citation of a memory the session reported only retrieved
-- counts once. public.memory_usage_sessions from the outside: signed in as tenant A, B's records
-- cannot be seen, changed, planted or deleted; anon gets nothing. Fixtures are written as the table owner.
begin;
select plan(18);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace, strength, base_strength) values
  ('92100000-0000-4000-8000-0000000000a1', '92000000-0000-4000-8000-00000000000a', 'A: cited.', 'semantic', 'devai/project/p', 0.5, 0.5),
  ('92100000-0000-4000-8000-0000000000a2', '92000000-0000-4000-8000-00000000000a', 'A: cited later.', 'semantic', 'devai/project/p', 0.5, 0.5),
  ('92100000-0000-4000-8000-0000000000b1', '92000000-0000-4000-8000-00000000000b', 'B: reported.', 'semantic', 'devai/project/p', 0.5, 0.5);
insert into public.memory_usage_sessions (owner_id, session_id, memory_id, cited, tokens) values
  ('92000000-0000-4000-8000-00000000000b', 's-92', '92100000-0000-4000-8000-0000000000b1', false, 7);

select tests.authenticate_as('92000000-0000-4000-8000-00000000000a');

-- The first report counts; sent again, nothing moves and the answer names what was recorded.
select results_eq(
  $$select recorded, cited, already_recorded from public.record_memory_usage('s-92',
      array['92100000-0000-4000-8000-0000000000a1'::uuid, '92100000-0000-4000-8000-0000000000a2'],
      array['92100000-0000-4000-8000-0000000000a1'::uuid], array[10, 20])$$,
  $$values (2, 1, '{}'::uuid[])$$, 'the first report counts both memories, one cited');
select results_eq(
  $$select recorded, cited, already_recorded from public.record_memory_usage('s-92',
      array['92100000-0000-4000-8000-0000000000a1'::uuid, '92100000-0000-4000-8000-0000000000a2'],
      array['92100000-0000-4000-8000-0000000000a1'::uuid], array[10, 20])$$,
  $$values (0, 0, array['92100000-0000-4000-8000-0000000000a1'::uuid, '92100000-0000-4000-8000-0000000000a2'])$$,
  'the same report again counts nothing and lists both as already recorded');
select results_eq($$select memory_id, retrieval_count, citation_count, ignore_count from public.memory_usage order by memory_id$$,
  $$values ('92100000-0000-4000-8000-0000000000a1'::uuid, 1, 1, 0), ('92100000-0000-4000-8000-0000000000a2', 1, 0, 1)$$,
  'counters moved once');
select results_eq($$select reports, retrieved, cited, injected_tokens, cited_tokens from public.memory_usage_totals$$,
  $$values (1::bigint, 2::bigint, 1::bigint, 30::bigint, 10::bigint)$$, 'totals moved once');
select is((select strength from public.devai_memories where id = '92100000-0000-4000-8000-0000000000a1'), 0.7::double precision,
          'the cited memory was reinforced once');

-- A later citation of the memory reported only retrieved: counted once, with the tokens first recorded.
select results_eq(
  $$select recorded, cited from public.record_memory_usage('s-92', array['92100000-0000-4000-8000-0000000000a2'::uuid],
      array['92100000-0000-4000-8000-0000000000a2'::uuid], array[99])$$,
  $$values (0, 1)$$, 'a later citation counts once');
select results_eq(
  $$select recorded, cited from public.record_memory_usage('s-92', array['92100000-0000-4000-8000-0000000000a2'::uuid],
      array['92100000-0000-4000-8000-0000000000a2'::uuid], array[99])$$,
  $$values (0, 0)$$, 'and its resend nothing');
select results_eq($$select retrieval_count, citation_count, ignore_count from public.memory_usage
                     where memory_id = '92100000-0000-4000-8000-0000000000a2'$$,
  $$values (1, 1, 0)$$, 'its ignore became a citation');
select results_eq($$select reports, retrieved, cited, injected_tokens, cited_tokens from public.memory_usage_totals$$,
  $$values (2::bigint, 2::bigint, 2::bigint, 30::bigint, 30::bigint)$$, 'totals: one more citation, of the tokens first recorded');

-- RLS: A's records only; B's cannot be changed, planted or deleted.
select results_eq($$select session_id, memory_id, cited from public.memory_usage_sessions order by memory_id$$,
  $$values ('s-92'::text, '92100000-0000-4000-8000-0000000000a1'::uuid, true), ('s-92', '92100000-0000-4000-8000-0000000000a2', true)$$,
  'A sees its own session records, not B''s of the same session id');
select throws_ok($$update public.memory_usage_sessions set cited = true where memory_id = '92100000-0000-4000-8000-0000000000b1' returning memory_id$$,
  '42501', 'permission denied for table memory_usage_sessions', 'A changes none of B''s records (nor its own: 20261128921000)');
select throws_ok($$insert into public.memory_usage_sessions (owner_id, session_id, memory_id, cited, tokens) values ('92000000-0000-4000-8000-00000000000b', 's', '92100000-0000-4000-8000-0000000000b1', true, 1)$$,
  '42501', 'permission denied for table memory_usage_sessions', 'A cannot plant a record for B');
select throws_ok($$insert into public.memory_usage_sessions (owner_id, session_id, memory_id, cited, tokens) values ('92000000-0000-4000-8000-00000000000a', 's', '92100000-0000-4000-8000-0000000000b1', true, 1)$$,
  '42501', 'permission denied for table memory_usage_sessions', 'A cannot record B''s memory under its own name');
select throws_ok($$delete from public.memory_usage_sessions$$, '42501', 'permission denied for table memory_usage_sessions',
  'a tenant cannot delete session records (a resend would count again)');

select tests.as_anon();
select throws_ok($$select * from public.memory_usage_sessions$$, '42501', 'permission denied for table memory_usage_sessions',
  'anon cannot read session records');

select tests.clear_authentication();
select results_eq($$select cited from public.memory_usage_sessions where owner_id = '92000000-0000-4000-8000-00000000000b'$$,
  $$values (false)$$, 'B''s record is as it was');

-- The nightly prune deletes the records first reported more than context_session_retention_hours
-- (48) ago, with the session's prefetch and injections (20261128870000); the counters stay.
select memory_private.prune_context_sessions(now() + interval '47 hours');
select is((select count(*) from public.memory_usage_sessions where session_id = 's-92'), 3::bigint,
  'records younger than context_session_retention_hours stay');
select memory_private.prune_context_sessions(now() + interval '49 hours');
select results_eq($$select (select count(*) from public.memory_usage_sessions where session_id = 's-92'),
                           (select sum(retrieval_count) from public.memory_usage where memory_id::text like '92100000-%')$$,
  $$values (0::bigint, 2::bigint)$$, 'older ones are deleted, A''s and B''s; A''s counters stay (one retrieval each)');

select * from finish();
rollback;
