-- The usage records are written by public.record_memory_usage only (migration 20261128921000):
-- signed in, a tenant reads its session records, counters and totals but cannot insert, update or
-- delete any of them, its own included (a record dated 2999 escaped devai-context-prune, and a
-- record flipped back to uncited let a resend count the citation again). The function, security
-- definer, still records each memory once per session as the caller's tenant, dated now: a report
-- dated ahead, or one without a tenant, is refused. Fixtures are written as the table owner.
begin;
select plan(21);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace, strength, base_strength) values
  ('96100000-0000-4000-8000-0000000000a1', '96000000-0000-4000-8000-00000000000a', 'A: cited.', 'semantic', 'devai/project/p', 0.5, 0.5),
  ('96100000-0000-4000-8000-0000000000a2', '96000000-0000-4000-8000-00000000000a', 'A: retrieved.', 'semantic', 'devai/project/p', 0.5, 0.5);

-- No grant lets a tenant or anon write the three tables.
select is_empty($$select t, r, p from unnest(array['public.memory_usage_sessions', 'public.memory_usage', 'public.memory_usage_totals']) t,
                     unnest(array['authenticated', 'anon']) r, unnest(array['insert', 'update', 'delete']) p
                   where has_table_privilege(r, t, p) or case when p = 'delete' then false else has_any_column_privilege(r, t, p) end$$,
  'authenticated and anon hold no insert, update or delete on the usage records, counters and totals');
select ok((select prosecdef and proconfig @> array['search_path=""'] from pg_proc where oid = 'public.record_memory_usage(text, uuid[], uuid[], integer[], timestamptz)'::regprocedure),
  'record_memory_usage is security definer with an empty search_path');

select tests.authenticate_as('96000000-0000-4000-8000-00000000000a');

-- Through the function: recorded once per session, as the caller's tenant, dated now.
select results_eq(
  $$select recorded, cited, already_recorded from public.record_memory_usage('s-96',
      array['96100000-0000-4000-8000-0000000000a1'::uuid, '96100000-0000-4000-8000-0000000000a2'],
      array['96100000-0000-4000-8000-0000000000a1'::uuid], array[10, 20])$$,
  $$values (2, 1, '{}'::uuid[])$$, 'a report counts both memories, one cited');
select results_eq(
  $$select recorded, cited, already_recorded from public.record_memory_usage('s-96',
      array['96100000-0000-4000-8000-0000000000a1'::uuid, '96100000-0000-4000-8000-0000000000a2'],
      array['96100000-0000-4000-8000-0000000000a1'::uuid], array[10, 20])$$,
  $$values (0, 0, array['96100000-0000-4000-8000-0000000000a1'::uuid, '96100000-0000-4000-8000-0000000000a2'])$$,
  'its resend counts nothing');
select results_eq($$select owner_id, memory_id, cited, tokens, reported_at from public.memory_usage_sessions order by memory_id$$,
  $$values ('96000000-0000-4000-8000-00000000000a'::uuid, '96100000-0000-4000-8000-0000000000a1'::uuid, true, 10, now()),
           ('96000000-0000-4000-8000-00000000000a', '96100000-0000-4000-8000-0000000000a2', false, 20, now())$$,
  'the tenant reads its session records: its own, dated now');
select results_eq($$select reports, retrieved, cited from public.memory_usage_totals$$, $$values (1::bigint, 2::bigint, 1::bigint)$$,
  'and its totals: one report counted');
select throws_ok($$select * from public.record_memory_usage('s-96-later', array['96100000-0000-4000-8000-0000000000a1'::uuid], '{}', array[1],
                                                            now() + interval '1 day')$$,
  '22023', null, 'a report dated ahead is refused (its records would escape the prune)');

-- Directly: nothing, its own rows included.
select throws_ok($$insert into public.memory_usage_sessions (owner_id, session_id, memory_id, cited, tokens, reported_at)
                   values ('96000000-0000-4000-8000-00000000000a', 's-planted', '96100000-0000-4000-8000-0000000000a1', false, 1, '2999-01-01')$$,
  '42501', 'permission denied for table memory_usage_sessions', 'a tenant cannot insert its own session record (dated 2999, it was never pruned)');
select throws_ok($$update public.memory_usage_sessions set cited = false where memory_id = '96100000-0000-4000-8000-0000000000a1'$$,
  '42501', 'permission denied for table memory_usage_sessions', 'a tenant cannot turn its citation back (a resend counted it again)');
select throws_ok($$update public.memory_usage_sessions set reported_at = '2999-01-01'$$,
  '42501', 'permission denied for table memory_usage_sessions', 'a tenant cannot date its records ahead');
select throws_ok($$delete from public.memory_usage_sessions$$,
  '42501', 'permission denied for table memory_usage_sessions', 'a tenant cannot delete its session records');
select throws_ok($$update public.memory_usage set retrieval_count = retrieval_count + 9, citation_count = citation_count + 9$$,
  '42501', 'permission denied for table memory_usage', 'a tenant cannot change its counters');
select throws_ok($$insert into public.memory_usage (memory_id, owner_id, retrieval_count, citation_count, ignore_count)
                   values ('96100000-0000-4000-8000-0000000000a2', '96000000-0000-4000-8000-00000000000a', 1, 1, 0)$$,
  '42501', 'permission denied for table memory_usage', 'nor insert one');
select throws_ok($$update public.memory_usage_totals set reports = 0$$,
  '42501', 'permission denied for table memory_usage_totals', 'a tenant cannot change its totals');
select throws_ok($$delete from public.memory_usage_totals$$,
  '42501', 'permission denied for table memory_usage_totals', 'nor delete them');

-- After those attempts, a later citation still counts once, and its resend nothing.
select results_eq(
  $$select recorded, cited from public.record_memory_usage('s-96', array['96100000-0000-4000-8000-0000000000a2'::uuid],
      array['96100000-0000-4000-8000-0000000000a2'::uuid], array[20])$$,
  $$values (0, 1)$$, 'a later citation counts once');
select results_eq(
  $$select recorded, cited from public.record_memory_usage('s-96', array['96100000-0000-4000-8000-0000000000a2'::uuid],
      array['96100000-0000-4000-8000-0000000000a2'::uuid], array[20])$$,
  $$values (0, 0)$$, 'and its resend nothing');
select results_eq($$select memory_id, retrieval_count, citation_count, ignore_count from public.memory_usage order by memory_id$$,
  $$values ('96100000-0000-4000-8000-0000000000a1'::uuid, 1, 1, 0), ('96100000-0000-4000-8000-0000000000a2', 1, 1, 0)$$,
  'each memory counted once');

-- Without a tenant: refused, nothing written.
select tests.as_service_role();
select throws_ok($$select * from public.record_memory_usage('s-96-none', array['96100000-0000-4000-8000-0000000000a1'::uuid], '{}', array[1])$$,
  '42501', null, 'a call without a tenant in its claims is refused');
select tests.as_anon();
select throws_ok($$select * from public.record_memory_usage('s-96-anon', '{}', '{}', '{}')$$, '42501', null, 'anon cannot report usage');
select tests.clear_authentication();
select is((select count(*) from public.memory_usage_sessions where session_id like 's-96-%'), 0::bigint,
  'the refused calls wrote no record');

select * from finish();
rollback;
