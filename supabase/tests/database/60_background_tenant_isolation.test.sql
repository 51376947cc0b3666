-- The background intelligence's tables from the outside: signed in as tenant A, tenant B's
-- consolidation runs, pair checks, contradictions, proposals and checkpoints cannot be seen,
-- changed or planted, and a contradiction or proposal can never point at B's memory; anon gets
-- nothing. Fixtures are written as the table owner (postgres), the way the worker's privileged
-- connection and cron write.
begin;
select plan(34);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace) values
  ('50100000-0000-4000-8000-0000000000a1', '50000000-0000-4000-8000-00000000000a', 'A: CI runs on Node 18.', 'semantic', 'devai/user/notes'),
  ('50100000-0000-4000-8000-0000000000a2', '50000000-0000-4000-8000-00000000000a', 'A: CI runs on Node 20.', 'semantic', 'devai/user/notes'),
  ('50100000-0000-4000-8000-0000000000b1', '50000000-0000-4000-8000-00000000000b', 'B: tabs.', 'semantic', 'devai/user/notes'),
  ('50100000-0000-4000-8000-0000000000b2', '50000000-0000-4000-8000-00000000000b', 'B: spaces.', 'semantic', 'devai/user/notes');
insert into public.memory_consolidation_runs (owner_id, trigger, finished_at) values
  ('50000000-0000-4000-8000-00000000000a', 'nightly', now()), ('50000000-0000-4000-8000-00000000000b', 'nightly', now());
insert into public.memory_pair_checks (owner_id, kind, id_a, id_b, score, verdict) values
  ('50000000-0000-4000-8000-00000000000a', 'consolidation', '50100000-0000-4000-8000-0000000000a1', '50100000-0000-4000-8000-0000000000a2', 0.75, 'refines'),
  ('50000000-0000-4000-8000-00000000000b', 'consolidation', '50100000-0000-4000-8000-0000000000b1', '50100000-0000-4000-8000-0000000000b2', 0.92, 'contradiction');
insert into public.memory_contradictions (id, owner_id, memory_a, memory_b, detected_by) values
  ('50200000-0000-4000-8000-0000000000a1', '50000000-0000-4000-8000-00000000000a', '50100000-0000-4000-8000-0000000000a1', '50100000-0000-4000-8000-0000000000a2', 'consolidation'),
  ('50200000-0000-4000-8000-0000000000b1', '50000000-0000-4000-8000-00000000000b', '50100000-0000-4000-8000-0000000000b1', '50100000-0000-4000-8000-0000000000b2', 'write');
insert into public.memory_proposals (id, owner_id, field, content, namespace, expires_at) values
  ('50300000-0000-4000-8000-0000000000a1', '50000000-0000-4000-8000-00000000000a', 'city', 'The user lives in Porto.', 'devai/user/profile', now() + interval '7 days'),
  ('50300000-0000-4000-8000-0000000000b1', '50000000-0000-4000-8000-00000000000b', 'employer', 'The user works at Acme.', 'devai/user/profile', now() + interval '7 days');
insert into public.supervisor_checkpoints (owner_id, thread_id, state, size_bytes) values
  ('50000000-0000-4000-8000-00000000000a', 'main', '{"step": 1}', 11),
  ('50000000-0000-4000-8000-00000000000b', 'main', '{"step": 9}', 11);

select tests.authenticate_as('50000000-0000-4000-8000-00000000000a');

-- See and count: B's rows are invisible; A's own are there (the checks are not vacuous).
select is((select count(*)::int from public.memory_consolidation_runs), 1, 'A sees only its own consolidation run');
select is((select count(*)::int from public.memory_pair_checks), 1, 'A sees only its own pair check');
select is((select count(*)::int from public.memory_contradictions), 1, 'A sees only its own contradiction');
select is((select count(*)::int from public.memory_proposals), 1, 'A sees only its own proposal');
select is((select state ->> 'step' from public.supervisor_checkpoints where thread_id = 'main'), '1', 'A loads its own checkpoint of thread main, not B''s');
select is_empty($$select * from public.memory_contradictions where id = '50200000-0000-4000-8000-0000000000b1'$$, 'B''s contradiction id finds nothing');

-- Change: B's rows are not there to change.
select is_empty($$update public.memory_contradictions set resolution = 'a_wins', resolved_at = now() where owner_id = '50000000-0000-4000-8000-00000000000b' returning id$$, 'A resolves none of B''s contradictions');
select is_empty($$update public.memory_proposals set status = 'accepted', decided_at = now() where owner_id = '50000000-0000-4000-8000-00000000000b' returning id$$, 'A decides none of B''s proposals');
select is_empty($$update public.supervisor_checkpoints set state = '{"pwned": true}' where owner_id = '50000000-0000-4000-8000-00000000000b' returning id$$, 'A overwrites none of B''s checkpoints');
select throws_ok($$update public.memory_consolidation_runs set tokens_used = 0 where owner_id = '50000000-0000-4000-8000-00000000000b' returning id$$,
  '42501', 'permission denied for table memory_consolidation_runs', 'A resets none of B''s runs (nor its own: 62_consolidation_spend)');
select is_empty($$delete from public.memory_pair_checks where owner_id = '50000000-0000-4000-8000-00000000000b' returning id_a$$, 'A ages out none of B''s pair checks');
select throws_ok($$delete from public.memory_contradictions$$, '42501', 'permission denied for table memory_contradictions', 'a tenant cannot delete contradictions');
select throws_ok($$delete from public.memory_proposals$$, '42501', 'permission denied for table memory_proposals', 'a tenant cannot delete proposals');
select throws_ok($$delete from public.supervisor_checkpoints$$, '42501', 'permission denied for table supervisor_checkpoints', 'a tenant cannot delete checkpoints');
select throws_ok($$update public.memory_proposals set content = 'rewritten'$$, '42501', 'permission denied for table memory_proposals', 'what was proposed never changes');
select throws_ok($$update public.memory_contradictions set memory_b = '50100000-0000-4000-8000-0000000000a1'$$, '42501', 'permission denied for table memory_contradictions', 'the pair never changes');
select throws_ok($$update public.supervisor_checkpoints set owner_id = '50000000-0000-4000-8000-00000000000b'$$, '42501', 'permission denied for table supervisor_checkpoints', 'A cannot hand its checkpoint to B');

-- Plant: rows owned by B are refused; a contradiction or proposal cannot reach B's memory.
select throws_ok($$insert into public.memory_contradictions (owner_id, memory_a, memory_b, detected_by) values ('50000000-0000-4000-8000-00000000000b', '50100000-0000-4000-8000-0000000000b1', '50100000-0000-4000-8000-0000000000b2', 'write')$$,
  '42501', 'new row violates row-level security policy for table "memory_contradictions"', 'A cannot record a contradiction owned by B');
select throws_ok($$insert into public.memory_contradictions (owner_id, memory_a, memory_b, detected_by) values ('50000000-0000-4000-8000-00000000000a', '50100000-0000-4000-8000-0000000000a1', '50100000-0000-4000-8000-0000000000b1', 'write')$$,
  '23503', null, 'A cannot pair its memory with B''s');
select throws_ok($$insert into public.memory_proposals (owner_id, field, content, namespace, expires_at) values ('50000000-0000-4000-8000-00000000000b', 'city', 'planted', 'devai/user/profile', now())$$,
  '42501', 'new row violates row-level security policy for table "memory_proposals"', 'A cannot queue a proposal for B');
select throws_ok($$insert into public.memory_proposals (owner_id, field, content, namespace, expires_at, status) values ('50000000-0000-4000-8000-00000000000a', 'city', 'pre-accepted', 'devai/user/profile', now(), 'accepted')$$,
  '42501', null, 'a proposal is queued pending, never pre-decided');
select throws_ok($$update public.memory_proposals set status = 'accepted', decided_at = now(), memory_id = '50100000-0000-4000-8000-0000000000b1' where id = '50300000-0000-4000-8000-0000000000a1'$$,
  '23503', null, 'an accepted proposal cannot point at B''s memory');
select throws_ok($$insert into public.supervisor_checkpoints (owner_id, thread_id, state, size_bytes) values ('50000000-0000-4000-8000-00000000000b', 'planted', '{}', 2)$$,
  '42501', 'new row violates row-level security policy for table "supervisor_checkpoints"', 'A cannot save a checkpoint for B');
select throws_ok($$insert into public.supervisor_checkpoints (owner_id, thread_id, state, size_bytes) values ('50000000-0000-4000-8000-00000000000a', 'main', '{}', 2)$$,
  '23505', null, 'one checkpoint per tenant and thread');
select lives_ok($$insert into public.supervisor_checkpoints (owner_id, thread_id, state, size_bytes) values ('50000000-0000-4000-8000-00000000000a', 'other', '{}', 2)$$,
  'A saves a checkpoint of another thread');
select throws_ok($$insert into public.memory_pair_checks (owner_id, kind, id_a, id_b, score, verdict) values ('50000000-0000-4000-8000-00000000000b', 'consolidation', '50100000-0000-4000-8000-0000000000b1', '50100000-0000-4000-8000-0000000000b2', 0.5, 'same')$$,
  '42501', 'new row violates row-level security policy for table "memory_pair_checks"', 'A cannot fingerprint for B');
select throws_ok($$insert into public.memory_consolidation_runs (owner_id, trigger) values ('50000000-0000-4000-8000-00000000000b', 'api')$$,
  '42501', 'new row violates row-level security policy for table "memory_consolidation_runs"', 'A cannot start a run for B');
select lives_ok($$insert into public.memory_consolidation_runs (owner_id, trigger) values ('50000000-0000-4000-8000-00000000000a', 'api')$$, 'A starts its own run');
select throws_ok($$insert into public.memory_consolidation_runs (owner_id, trigger) values ('50000000-0000-4000-8000-00000000000a', 'api')$$,
  '23505', null, 'one run of a tenant under way at a time');

-- The same pair, either way round, is one contradiction.
select throws_ok($$insert into public.memory_contradictions (owner_id, memory_a, memory_b, detected_by) values ('50000000-0000-4000-8000-00000000000a', '50100000-0000-4000-8000-0000000000a2', '50100000-0000-4000-8000-0000000000a1', 'write')$$,
  '23505', null, 'a pair is recorded once, whichever way round');

-- Consent decisions are history rows under the proposal's id.
select lives_ok($$update public.memory_proposals set status = 'rejected', decided_at = now(), decided_by = 'test' where id = '50300000-0000-4000-8000-0000000000a1'$$, 'A rejects its proposal');
select results_eq($$select event from public.memory_history where memory_id = '50300000-0000-4000-8000-0000000000a1' order by ts, event$$,
  $$values ('PROPOSE'::text), ('REJECT')$$, 'the proposal''s history: PROPOSE, then REJECT');
select is_empty($$select * from public.memory_history where memory_id = '50300000-0000-4000-8000-0000000000b1'$$, 'A cannot read B''s consent history');

select tests.as_anon();
select throws_ok($$select * from public.supervisor_checkpoints$$, '42501', null, 'anon cannot read checkpoints');
select tests.clear_authentication();

select * from finish();
rollback;
