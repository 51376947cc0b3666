-- RLS from the outside: signed in as tenant A, tenant B's rows in every table cannot be selected,
-- counted, updated, deleted or planted; anon gets nothing at all. The fixtures are written as the
-- table owner (postgres), the way the service and the cron jobs write.
begin;
-- Revisions (and a thread's first revision row) are given at commit (migration 20261129300000);
-- this file's one transaction never commits, so they are given at the end of each statement instead.
set constraints public.memory_change_log_revision_at_commit immediate;
select plan(69);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace) values
  ('71000000-0000-4000-8000-0000000000a1', '70000000-0000-4000-8000-00000000000a', 'a memory 1', 'semantic', 'devai/global'),
  ('71000000-0000-4000-8000-0000000000a2', '70000000-0000-4000-8000-00000000000a', 'a memory 2', 'semantic', 'devai/global'),
  ('71000000-0000-4000-8000-0000000000b1', '70000000-0000-4000-8000-00000000000b', 'b memory 1', 'semantic', 'devai/global'),
  ('71000000-0000-4000-8000-0000000000b2', '70000000-0000-4000-8000-00000000000b', 'b memory 2', 'semantic', 'devai/global');
insert into public.memory_relations (owner_id, from_id, to_id, strength) values
  ('70000000-0000-4000-8000-00000000000a', '71000000-0000-4000-8000-0000000000a1', '71000000-0000-4000-8000-0000000000a2', 0.6),
  ('70000000-0000-4000-8000-00000000000b', '71000000-0000-4000-8000-0000000000b1', '71000000-0000-4000-8000-0000000000b2', 0.7);
insert into public.memory_jobs (owner_id, kind, idempotency_key) values
  ('70000000-0000-4000-8000-00000000000a', 'extract', 'session-a'),
  ('70000000-0000-4000-8000-00000000000b', 'extract', 'session-b');
insert into public.memory_session_summaries (owner_id, session_id, summary) values
  ('70000000-0000-4000-8000-00000000000a', 'session-a', 'a summary'),
  ('70000000-0000-4000-8000-00000000000b', 'session-b', 'b summary');
insert into public.memory_events (owner_id, node, op, status) values
  ('70000000-0000-4000-8000-00000000000a', 'hotpath', 'search', 'ok'),
  ('70000000-0000-4000-8000-00000000000b', 'hotpath', 'search', 'ok');
-- memory_history, memory_thread_revisions and memory_change_log were filled by the triggers.

select tests.authenticate_as('70000000-0000-4000-8000-00000000000a');

-- Select and count: B's rows are invisible; A's own rows are visible, so the checks are not vacuous.
select is_empty($$select * from public.devai_memories where owner_id = '70000000-0000-4000-8000-00000000000b'$$, 'tenant A cannot select tenant B''s rows in devai_memories');
select is((select count(*)::int from public.devai_memories where owner_id <> '70000000-0000-4000-8000-00000000000a'), 0, 'tenant A counts none of B''s rows in devai_memories');
select ok((select count(*) from public.devai_memories) > 0, 'tenant A sees its own rows in devai_memories');
select is_empty($$select * from public.memory_relations where owner_id = '70000000-0000-4000-8000-00000000000b'$$, 'tenant A cannot select tenant B''s rows in memory_relations');
select is((select count(*)::int from public.memory_relations where owner_id <> '70000000-0000-4000-8000-00000000000a'), 0, 'tenant A counts none of B''s rows in memory_relations');
select ok((select count(*) from public.memory_relations) > 0, 'tenant A sees its own rows in memory_relations');
select is_empty($$select * from public.memory_history where owner_id = '70000000-0000-4000-8000-00000000000b'$$, 'tenant A cannot select tenant B''s rows in memory_history');
select is((select count(*)::int from public.memory_history where owner_id <> '70000000-0000-4000-8000-00000000000a'), 0, 'tenant A counts none of B''s rows in memory_history');
select ok((select count(*) from public.memory_history) > 0, 'tenant A sees its own rows in memory_history');
select is_empty($$select * from public.memory_thread_revisions where owner_id = '70000000-0000-4000-8000-00000000000b'$$, 'tenant A cannot select tenant B''s rows in memory_thread_revisions');
select is((select count(*)::int from public.memory_thread_revisions where owner_id <> '70000000-0000-4000-8000-00000000000a'), 0, 'tenant A counts none of B''s rows in memory_thread_revisions');
select ok((select count(*) from public.memory_thread_revisions) > 0, 'tenant A sees its own rows in memory_thread_revisions');
select is_empty($$select * from public.memory_change_log where owner_id = '70000000-0000-4000-8000-00000000000b'$$, 'tenant A cannot select tenant B''s rows in memory_change_log');
select is((select count(*)::int from public.memory_change_log where owner_id <> '70000000-0000-4000-8000-00000000000a'), 0, 'tenant A counts none of B''s rows in memory_change_log');
select ok((select count(*) from public.memory_change_log) > 0, 'tenant A sees its own rows in memory_change_log');
select is_empty($$select * from public.memory_jobs where owner_id = '70000000-0000-4000-8000-00000000000b'$$, 'tenant A cannot select tenant B''s rows in memory_jobs');
select is((select count(*)::int from public.memory_jobs where owner_id <> '70000000-0000-4000-8000-00000000000a'), 0, 'tenant A counts none of B''s rows in memory_jobs');
select ok((select count(*) from public.memory_jobs) > 0, 'tenant A sees its own rows in memory_jobs');
select is_empty($$select * from public.memory_session_summaries where owner_id = '70000000-0000-4000-8000-00000000000b'$$, 'tenant A cannot select tenant B''s rows in memory_session_summaries');
select is((select count(*)::int from public.memory_session_summaries where owner_id <> '70000000-0000-4000-8000-00000000000a'), 0, 'tenant A counts none of B''s rows in memory_session_summaries');
select ok((select count(*) from public.memory_session_summaries) > 0, 'tenant A sees its own rows in memory_session_summaries');
select is_empty($$select * from public.memory_events where owner_id = '70000000-0000-4000-8000-00000000000b'$$, 'tenant A cannot select tenant B''s rows in memory_events');
select is((select count(*)::int from public.memory_events where owner_id <> '70000000-0000-4000-8000-00000000000a'), 0, 'tenant A counts none of B''s rows in memory_events');
select ok((select count(*) from public.memory_events) > 0, 'tenant A sees its own rows in memory_events');

-- Update: where A may update, B's rows are simply not there; elsewhere there is no privilege.
select is_empty($$update public.devai_memories set content = 'pwned' where owner_id = '70000000-0000-4000-8000-00000000000b' returning id$$, 'tenant A updates none of B''s rows in devai_memories');
select is_empty($$update public.memory_relations set strength = 0 where owner_id = '70000000-0000-4000-8000-00000000000b' returning id$$, 'tenant A updates none of B''s rows in memory_relations');
select is_empty($$update public.memory_session_summaries set summary = 'pwned' where owner_id = '70000000-0000-4000-8000-00000000000b' returning id$$, 'tenant A updates none of B''s rows in memory_session_summaries');
select is_empty($$update public.devai_memories set content = 'pwned' where id = '71000000-0000-4000-8000-0000000000b1' returning id$$, 'tenant A cannot update B''s memory even by its id');
select throws_ok($$update public.memory_history set actor = 'pwned'$$, '42501', 'permission denied for table memory_history', 'authenticated cannot update memory_history at all');
select throws_ok($$update public.memory_thread_revisions set revision = 0$$, '42501', 'permission denied for table memory_thread_revisions', 'authenticated cannot update memory_thread_revisions at all');
select throws_ok($$update public.memory_change_log set summary = 'pwned'$$, '42501', 'permission denied for table memory_change_log', 'authenticated cannot update memory_change_log at all');
select throws_ok($$update public.memory_jobs set status = 'dead'$$, '42501', 'permission denied for table memory_jobs', 'authenticated cannot update memory_jobs at all');
select throws_ok($$update public.memory_events set status = 'error'$$, '42501', 'permission denied for table memory_events', 'authenticated cannot update memory_events at all');
select throws_ok($$update public.devai_memories set owner_id = '70000000-0000-4000-8000-00000000000b' where id = '71000000-0000-4000-8000-0000000000a1'$$, '42501', 'permission denied for table devai_memories', 'tenant A cannot hand its memory to B (owner_id is not updatable)');

-- Blind updates (no WHERE, no RETURNING) are not filtered by the SELECT policy: only the UPDATE
-- policy's USING keeps B's rows out. The "B's ... is unchanged" checks below catch a leak.
select lives_ok($$update public.devai_memories set content = 'pwned blind'$$, 'blind update of devai_memories runs (own rows only)');
select lives_ok($$update public.memory_relations set strength = 0$$, 'blind update of memory_relations runs (own rows only)');
select lives_ok($$update public.memory_session_summaries set summary = 'pwned blind'$$, 'blind update of memory_session_summaries runs (own rows only)');

-- Delete: no privilege at all, even on one's own rows (forgetting is a soft delete).
select throws_ok($$delete from public.devai_memories where owner_id = '70000000-0000-4000-8000-00000000000a'$$, '42501', 'permission denied for table devai_memories', 'authenticated cannot delete from devai_memories, even its own rows');
select throws_ok($$delete from public.memory_relations where owner_id = '70000000-0000-4000-8000-00000000000a'$$, '42501', 'permission denied for table memory_relations', 'authenticated cannot delete from memory_relations, even its own rows');
select throws_ok($$delete from public.memory_history where owner_id = '70000000-0000-4000-8000-00000000000a'$$, '42501', 'permission denied for table memory_history', 'authenticated cannot delete from memory_history, even its own rows');
select throws_ok($$delete from public.memory_thread_revisions where owner_id = '70000000-0000-4000-8000-00000000000a'$$, '42501', 'permission denied for table memory_thread_revisions', 'authenticated cannot delete from memory_thread_revisions, even its own rows');
select throws_ok($$delete from public.memory_change_log where owner_id = '70000000-0000-4000-8000-00000000000a'$$, '42501', 'permission denied for table memory_change_log', 'authenticated cannot delete from memory_change_log, even its own rows');
select throws_ok($$delete from public.memory_jobs where owner_id = '70000000-0000-4000-8000-00000000000a'$$, '42501', 'permission denied for table memory_jobs', 'authenticated cannot delete from memory_jobs, even its own rows');
select throws_ok($$delete from public.memory_session_summaries where owner_id = '70000000-0000-4000-8000-00000000000a'$$, '42501', 'permission denied for table memory_session_summaries', 'authenticated cannot delete from memory_session_summaries, even its own rows');
select throws_ok($$delete from public.memory_events where owner_id = '70000000-0000-4000-8000-00000000000a'$$, '42501', 'permission denied for table memory_events', 'authenticated cannot delete from memory_events, even its own rows');

-- Insert: rows for tenant B are rejected by the policies; trigger-written tables take no inserts.
select throws_ok($$insert into public.devai_memories (owner_id, content, memory_type, namespace) values ('70000000-0000-4000-8000-00000000000b', 'planted', 'semantic', 'devai/global')$$, '42501', 'new row violates row-level security policy for table "devai_memories"', 'tenant A cannot insert a row owned by B into devai_memories');
select throws_ok($$insert into public.memory_relations (owner_id, from_id, to_id, strength) values ('70000000-0000-4000-8000-00000000000b', '71000000-0000-4000-8000-0000000000b2', '71000000-0000-4000-8000-0000000000b1', 0.5)$$, '42501', 'new row violates row-level security policy for table "memory_relations"', 'tenant A cannot insert a row owned by B into memory_relations');
select throws_ok($$insert into public.memory_jobs (owner_id, kind, idempotency_key) values ('70000000-0000-4000-8000-00000000000b', 'extract', 'planted')$$, '42501', 'permission denied for table memory_jobs', 'tenant A cannot insert a row owned by B into memory_jobs (nor its own: the service queues jobs)');
select throws_ok($$insert into public.memory_session_summaries (owner_id, session_id, summary) values ('70000000-0000-4000-8000-00000000000b', 'planted', 'planted')$$, '42501', 'new row violates row-level security policy for table "memory_session_summaries"', 'tenant A cannot insert a row owned by B into memory_session_summaries');
select throws_ok($$insert into public.memory_events (owner_id, node, op, status) values ('70000000-0000-4000-8000-00000000000b', 'hotpath', 'search', 'ok')$$, '42501', 'new row violates row-level security policy for table "memory_events"', 'tenant A cannot insert a row owned by B into memory_events');
select throws_ok($$insert into public.memory_history (owner_id, memory_id, event) values ('70000000-0000-4000-8000-00000000000a', '71000000-0000-4000-8000-0000000000a1', 'ADD')$$, '42501', 'permission denied for table memory_history', 'authenticated cannot write memory_history directly, even for itself');
select throws_ok($$insert into public.memory_thread_revisions (owner_id, thread_id, revision) values ('70000000-0000-4000-8000-00000000000a', 'forged', 99)$$, '42501', 'permission denied for table memory_thread_revisions', 'authenticated cannot write memory_thread_revisions directly, even for itself');
select throws_ok($$insert into public.memory_change_log (owner_id, thread_id, revision, memory_id, event) values ('70000000-0000-4000-8000-00000000000a', 'default', 99, '71000000-0000-4000-8000-0000000000a1', 'created')$$, '42501', 'permission denied for table memory_change_log', 'authenticated cannot write memory_change_log directly, even for itself');
select throws_ok($$insert into public.devai_memories (id, content, memory_type, namespace) values ('71000000-0000-4000-8000-0000000000b1', 'probe', 'semantic', 'devai/global')$$, '42501', 'permission denied for table devai_memories', 'authenticated cannot choose a memory id (no probing of other tenants'' ids)');

-- B's rows are as they were, seen by the table owner.
select tests.clear_authentication();
select is((select content from public.devai_memories where id = '71000000-0000-4000-8000-0000000000b1'), 'b memory 1', 'B''s memory is unchanged');
select is((select strength from public.memory_relations where owner_id = '70000000-0000-4000-8000-00000000000b'), 0.7::real, 'B''s relation is unchanged');
select is((select summary from public.memory_session_summaries where owner_id = '70000000-0000-4000-8000-00000000000b'), 'b summary', 'B''s session summary is unchanged');

-- anon sees nothing and writes nothing.
select tests.as_anon();
select throws_ok($$select * from public.devai_memories$$, '42501', 'permission denied for table devai_memories', 'anon cannot select from devai_memories');
select throws_ok($$select * from public.memory_relations$$, '42501', 'permission denied for table memory_relations', 'anon cannot select from memory_relations');
select throws_ok($$select * from public.memory_history$$, '42501', 'permission denied for table memory_history', 'anon cannot select from memory_history');
select throws_ok($$select * from public.memory_thread_revisions$$, '42501', 'permission denied for table memory_thread_revisions', 'anon cannot select from memory_thread_revisions');
select throws_ok($$select * from public.memory_change_log$$, '42501', 'permission denied for table memory_change_log', 'anon cannot select from memory_change_log');
select throws_ok($$select * from public.memory_jobs$$, '42501', 'permission denied for table memory_jobs', 'anon cannot select from memory_jobs');
select throws_ok($$select * from public.memory_session_summaries$$, '42501', 'permission denied for table memory_session_summaries', 'anon cannot select from memory_session_summaries');
select throws_ok($$select * from public.memory_events$$, '42501', 'permission denied for table memory_events', 'anon cannot select from memory_events');
select throws_ok($$insert into public.devai_memories (content, memory_type, namespace) values ('x', 'semantic', 'devai/global')$$, '42501', 'permission denied for table devai_memories', 'anon cannot insert memories');
select is_empty($$select c.oid::regclass::text from pg_class c join pg_namespace n on n.oid = c.relnamespace
                   where n.nspname = 'public' and c.relkind in ('r', 'v', 'm', 'p', 'f')
                     and (has_table_privilege('anon', c.oid, 'select, insert, update, delete, truncate, references, trigger')
                          or has_any_column_privilege('anon', c.oid, 'select, insert, update, references'))$$,
                'anon holds no privilege on any table or view in public (settings, schedules, categories, allowlists included)');
select is_empty($$select p.oid::regprocedure::text from pg_proc p join pg_namespace n on n.oid = p.pronamespace
                   where n.nspname in ('public', 'memory_private') and has_function_privilege('anon', p.oid, 'execute')
                     and not (n.nspname = 'memory_private' and not has_schema_privilege('anon', n.oid, 'usage'))$$,
                'anon can execute no function of ours');

-- The service role (server side) sees every tenant, so the emptiness above is RLS at work.
select tests.as_service_role();
select is((select count(distinct owner_id)::int from public.devai_memories where owner_id in ('70000000-0000-4000-8000-00000000000a', '70000000-0000-4000-8000-00000000000b')), 2, 'the service role sees both tenants');

select * from finish();
rollback;
