-- The delta header reads "what changed since revision N": every memory write bumps the thread's
-- revision (memory.thread_id, default 'default') and logs the change under that revision.
begin;
-- Revisions are given at commit (migration 20261129300000); this file's one transaction never
-- commits, so they are given at the end of each statement instead.
set constraints public.memory_change_log_revision_at_commit immediate;
select plan(10);

select tests.authenticate_as('60000000-0000-4000-8000-00000000000a');
select set_config('memory.thread_id', 'thread-1', true);

insert into public.devai_memories (content, memory_type, namespace)
values ('ci runs on github actions', 'semantic', 'devai/project/ci');
select results_eq($$select revision from public.memory_thread_revisions where thread_id = 'thread-1'$$,
                  array[1::bigint], 'the first write on a thread creates its revision 1');

update public.devai_memories set content = 'ci runs on buildkite' where content = 'ci runs on github actions';
update public.devai_memories set state = 'soft_deleted', purge_at = now() + interval '30 days' where content = 'ci runs on buildkite';
update public.devai_memories set state = 'active', purge_at = null where content = 'ci runs on buildkite';
select results_eq($$select revision from public.memory_thread_revisions where thread_id = 'thread-1'$$,
                  array[4::bigint], 'each write bumps the revision by one');
select results_eq($$select revision, event from public.memory_change_log where thread_id = 'thread-1' order by revision$$,
                  $$values (1::bigint, 'created'), (2, 'updated'), (3, 'soft_deleted'), (4, 'restored')$$,
                  'the change log has one row per write, with consecutive revisions 1..4');
select is((select summary from public.memory_change_log where thread_id = 'thread-1' and revision = 2),
          'ci runs on buildkite', 'the change log row summarises the memory as written');

update public.devai_memories set strength = 0.5, access_count = 3 where content = 'ci runs on buildkite';
select results_eq($$select revision from public.memory_thread_revisions where thread_id = 'thread-1'$$,
                  array[4::bigint], 'strength and access bookkeeping do not bump the revision');

select set_config('memory.thread_id', '', true);
insert into public.devai_memories (content, memory_type, namespace)
values ('lint with biome', 'procedural', 'devai/project/ci');
select results_eq($$select thread_id, revision from public.memory_thread_revisions order by thread_id$$,
                  $$values ('default', 1::bigint), ('thread-1', 4::bigint)$$,
                  'without memory.thread_id the write goes to thread default');

-- Threads are per tenant: B's thread-1 counts from 1 again.
select tests.authenticate_as('60000000-0000-4000-8000-00000000000b');
select set_config('memory.thread_id', 'thread-1', true);
insert into public.devai_memories (content, memory_type, namespace)
values ('uses bun', 'semantic', 'devai/global');
select results_eq($$select revision from public.memory_thread_revisions where thread_id = 'thread-1'$$,
                  array[1::bigint], 'another tenant''s thread of the same name has its own revision');

-- A physical purge is in the history, not in the delta header.
select tests.clear_authentication();
delete from public.devai_memories where owner_id = '60000000-0000-4000-8000-00000000000a' and content = 'lint with biome';
select results_eq($$select revision from public.memory_thread_revisions
                     where owner_id = '60000000-0000-4000-8000-00000000000a' and thread_id = 'default'$$,
                  array[1::bigint], 'a purge does not bump the revision');

select tests.authenticate_as('60000000-0000-4000-8000-00000000000a');
select throws_ok($$update public.memory_thread_revisions set revision = 0$$, '42501',
                 'permission denied for table memory_thread_revisions',
                 'a user cannot rewind a revision');
select throws_ok($$insert into public.memory_change_log (owner_id, thread_id, revision, memory_id, event)
                   values ('60000000-0000-4000-8000-00000000000a', 'thread-1', 5, gen_random_uuid(), 'created')$$,
                 '42501', 'permission denied for table memory_change_log',
                 'a user cannot forge change log rows');

select * from finish();
rollback;
