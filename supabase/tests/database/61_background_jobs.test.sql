-- The background intelligence's nightly SQL: memory_private.enqueue_nightly_consolidation queues
-- one job per tenant with work and night, staggered over the window, and re-queues unfinished
-- re-embedding; memory_private.lapse_proposals lapses what waited too long, in the history; the
-- settings' ranges and the new values of the CHECK lists.
begin;
set local timezone to 'UTC';
select plan(19);

-- Only this test's tenants: the others' rows are out of the way for the counts below.
create temporary table night on commit drop as select '2030-01-15 02:45:00+00'::timestamptz as at;

insert into public.devai_memories (owner_id, content, memory_type, namespace, created_at, updated_at) values
  ('51000000-0000-4000-8000-00000000000a', 'Active tenant: learned yesterday.', 'semantic', 'devai/user/notes', (select at from night) - interval '1 day', (select at from night) - interval '1 day'),
  ('51000000-0000-4000-8000-00000000000b', 'Idle tenant: learned long ago.', 'semantic', 'devai/user/notes', (select at from night) - interval '20 days', (select at from night) - interval '20 days'),
  ('51000000-0000-4000-8000-00000000000c', 'A session tenant.', 'semantic', 'devai/user/notes', (select at from night) - interval '20 days', (select at from night) - interval '20 days');
insert into public.memory_sessions (owner_id, session_id, namespace, episode_count, ended_at, end_reason) values
  ('51000000-0000-4000-8000-00000000000c', 's-old', 'devai/user/episodes', 4, (select at from night) - interval '9 days', 'idle');
-- A reindex job that stopped at its nightly cap with memories left, and one that finished.
insert into public.memory_jobs (owner_id, kind, status, payload, idempotency_key, result, created_at) values
  ('51000000-0000-4000-8000-00000000000b', 'reindex', 'done', '{"model": "m"}', 'reindex:2030-01-14', '{"model": "text-embedding-3-small", "remaining": 40}', (select at from night) - interval '1 day'),
  ('51000000-0000-4000-8000-00000000000a', 'reindex', 'done', '{"model": "m"}', 'reindex:2030-01-14', '{"model": "text-embedding-3-small", "remaining": 0}', (select at from night) - interval '1 day');

create temporary table queued on commit drop as select memory_private.enqueue_nightly_consolidation((select at from night)) as r;
select ok((select (r ->> 'consolidation')::int >= 2 from queued), 'consolidation jobs were queued');
select results_eq(
  $$select owner_id::text, idempotency_key from public.memory_jobs
     where kind = 'nightly_consolidation' and owner_id::text like '51000000-%' order by owner_id$$,
  $$values ('51000000-0000-4000-8000-00000000000a'::text, 'nightly_consolidation:2030-01-15'::text),
           ('51000000-0000-4000-8000-00000000000c', 'nightly_consolidation:2030-01-15')$$,
  'the active tenant and the one with a session to summarise get a job; the idle one none');
select ok((select bool_and(run_after >= (select at from night) and run_after < (select at from night) + interval '60 minutes')
             from public.memory_jobs where kind = 'nightly_consolidation' and owner_id::text like '51000000-%'),
          'each job starts within the 60-minute window');
select results_eq(
  $$select owner_id::text, payload ->> 'model', idempotency_key from public.memory_jobs
     where kind = 'reindex' and status = 'queued' and owner_id::text like '51000000-%'$$,
  $$values ('51000000-0000-4000-8000-00000000000b'::text, 'text-embedding-3-small'::text, 'reindex:2030-01-15'::text)$$,
  'unfinished re-embedding is queued again for the night; finished re-embedding is not');
select is(memory_private.enqueue_nightly_consolidation((select at from night) + interval '3 hours') ->> 'reindex', '0',
          'the same night again: nothing new for re-embedding');
select is((select count(*)::int from public.memory_jobs where kind = 'nightly_consolidation' and owner_id::text like '51000000-%'), 2,
          'the same night again: still one job per tenant');
select is((select count(*)::int from public.memory_jobs where kind = 'nightly_consolidation' and owner_id = '51000000-0000-4000-8000-00000000000c'),
          1, 'one job per tenant and night');
select lives_ok($$select memory_private.enqueue_nightly_consolidation((select at from night) + interval '1 day')$$, 'the next night queues its own jobs');
select is((select count(*)::int from public.memory_jobs where kind = 'nightly_consolidation' and owner_id = '51000000-0000-4000-8000-00000000000c'),
          2, 'the session tenant again the next night (its session still waits for a summary)');

-- Proposals lapse at their expiry, with a LAPSE history row by cron:proposals.
insert into public.memory_proposals (id, owner_id, field, content, namespace, expires_at) values
  ('51300000-0000-4000-8000-0000000000a1', '51000000-0000-4000-8000-00000000000a', 'city', 'The user lives in Porto.', 'devai/user/profile', (select at from night) - interval '1 minute'),
  ('51300000-0000-4000-8000-0000000000a2', '51000000-0000-4000-8000-00000000000a', 'language', 'The user speaks Dutch.', 'devai/user/profile', (select at from night) + interval '1 day');
select ok((memory_private.lapse_proposals((select at from night)) ->> 'lapsed')::int >= 1, 'lapse_proposals lapses the expired ones');
select results_eq($$select id::text, status from public.memory_proposals where owner_id = '51000000-0000-4000-8000-00000000000a' order by id$$,
  $$values ('51300000-0000-4000-8000-0000000000a1'::text, 'lapsed'::text), ('51300000-0000-4000-8000-0000000000a2', 'pending')$$,
  'the expired one lapsed, the other waits');
select results_eq($$select event, actor from public.memory_history where memory_id = '51300000-0000-4000-8000-0000000000a1' order by ts, event$$,
  $$values ('LAPSE'::text, 'cron:proposals'::text), ('PROPOSE', 'postgres')$$, 'queued and lapsed, both in the history');

-- Settings are range-checked.
select throws_ok($$update public.memory_settings set value = 11 where name = 'consolidation_pairs_per_prompt'$$, '23514', null, 'more than 10 pairs per prompt is rejected');
select throws_ok($$update public.memory_settings set value = 2.5 where name = 'consolidation_pairs_per_night'$$, '23514', null, 'a fraction of a pair is rejected');
select throws_ok($$update public.memory_settings set value = 0 where name = 'proposal_days'$$, '23514', null, 'proposals wait at least a day');
select lives_ok($$update public.memory_settings set value = 0 where name = 'consolidation_pairs_per_night'$$, 'no model pairs at all is a valid night');

-- The CHECK lists' new values.
select lives_ok($$insert into public.devai_memories (owner_id, content, memory_type, namespace) values ('51000000-0000-4000-8000-00000000000a', 'The user trusts tested fixes.', 'insight', 'devai/user/insights')$$, 'memory_type insight');
select throws_ok($$insert into public.devai_memories (owner_id, content, memory_type, namespace) values ('51000000-0000-4000-8000-00000000000a', 'x', 'hunch', 'devai/user/x')$$, '23514', null, 'other memory types are still refused');
select lives_ok($$insert into public.memory_events (owner_id, node, op, status, meta) values ('51000000-0000-4000-8000-00000000000a', 'hotpath', 'redact', 'ok', '{"redacted": 1}')$$, 'memory_events op redact');

select * from finish();
rollback;
