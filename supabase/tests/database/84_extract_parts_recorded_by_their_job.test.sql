-- memory-extract's parts and marks (migration 20261128610000): recorded once, by the transaction
-- that queued the job, only as its key and payload say; read by their owner alone, written by no
-- one directly; a part dies with its job and goes with it. docs/extraction.md.
begin;
-- The coverage snapshot a POST passes is its first read's, taken before the transaction writes: one
-- taken after this transaction's first write may show a later transaction committed (pg_cron's,
-- say), which record_extract_part refuses as a snapshot from after the part's own transaction.
select set_config('tests.covered_as_of', pg_current_snapshot()::text, true);
select plan(18);

-- Messages [2, 5) of session 's', after two of context; the transcript's digests stand in as sha256 of names.
-- Queued by the service (as the worker's role: tenants cannot insert jobs), read as the tenant.
insert into public.memory_jobs (owner_id, kind, payload, idempotency_key) values
  ('84000000-0000-4000-8000-00000000000a', 'extract',
   '{"session_id": "s", "offset": 2, "context": [{"role": "user", "content": "m0"}, {"role": "assistant", "content": "m1"}],
     "messages": [{"role": "user", "content": "m2"}, {"role": "assistant", "content": "m3"}, {"role": "user", "content": "m4"}]}',
   'session:s:5:' || encode(sha256('d5'), 'hex')),
  ('84000000-0000-4000-8000-00000000000a', 'extract',
   '{"session_id": "s", "offset": 0, "messages": [{"role": "user", "content": "x"}]}',
   'session:s:1:' || encode(sha256('x1'), 'hex'));
create temporary table job_ids as
  select idempotency_key as key, id from public.memory_jobs where owner_id = '84000000-0000-4000-8000-00000000000a';
grant select on job_ids to authenticated, anon;
select tests.authenticate_as('84000000-0000-4000-8000-00000000000a');

select lives_ok($$select public.record_extract_part((select id from job_ids where key like 'session:s:5:%'), 2, sha256('d2'),
                  array[sha256('d3'), sha256('d4'), sha256('d5')], 4, current_setting('tests.covered_as_of')::pg_snapshot)$$,
                'the transaction that queued an extract job records its part');
select results_eq($$select start_position, end_position, start_digest = sha256('d2'), tail, dead, session_id from public.memory_extract_parts$$,
                  $$values (2, 5, true, '[{"role": "assistant", "content": "m1"}, {"role": "user", "content": "m2"},
                                          {"role": "assistant", "content": "m3"}, {"role": "user", "content": "m4"}]'::jsonb, false, 's')$$,
                  'the part: its range, its start digest, the last messages it saw (context, then part)');
select results_eq($$select position, key from public.memory_extract_marks order by position$$,
                  $$select p, substring(sha256(convert_to('devai-mark|84000000-0000-4000-8000-00000000000a|s|', 'UTF8') || d) from 1 for 16)
                      from (values (3, sha256('d3')), (4, sha256('d4')), (5, sha256('d5'))) as v(p, d)$$,
                  'one mark a message, by position: a 16-byte key of the tenant, the session and the digest after it');
select throws_ok($$select public.record_extract_part((select id from job_ids where key like 'session:s:5:%'), 2, sha256('d2'),
                   array[sha256('d3'), sha256('d4'), sha256('d5')], 4, current_setting('tests.covered_as_of')::pg_snapshot)$$,
                 '23505', null, 'a part is recorded once');
select throws_ok($$select public.record_extract_part((select id from job_ids where key like 'session:s:1:%'), 0, sha256('d0'),
                   array[sha256('not x1')], 4, current_setting('tests.covered_as_of')::pg_snapshot)$$,
                 '22023', null, 'digests that do not end at the key''s are refused');
select throws_ok($$select public.record_extract_part((select id from job_ids where key like 'session:s:1:%'), 1, sha256('d0'),
                   array[sha256('x1')], 4, current_setting('tests.covered_as_of')::pg_snapshot)$$,
                 '22023', null, 'a start that is not the payload''s offset is refused');
select throws_ok($$select public.record_extract_part((select id from job_ids where key like 'session:s:1:%'), 0, sha256('d0'),
                   array[sha256('x0'), sha256('x1')], 4, current_setting('tests.covered_as_of')::pg_snapshot)$$,
                 '22023', null, 'more digests than the payload has messages are refused');
select throws_ok($$insert into public.memory_extract_marks (job_id, position, key)
                   values ((select id from job_ids where key like 'session:s:1:%'), 1, substring(sha256('x1') from 1 for 16))$$,
                 '42501', null, 'a tenant cannot plant marks');
select throws_ok($$insert into public.memory_extract_parts (job_id, owner_id, session_id, start_position, start_digest, end_position, tail, payload_bytes, covered_as_of)
                   values ((select id from job_ids where key like 'session:s:1:%'), '84000000-0000-4000-8000-00000000000a', 's', 0, sha256('d0'), 1, '[]', 1, current_setting('tests.covered_as_of')::pg_snapshot)$$,
                 '42501', null, 'a tenant cannot plant parts');
select throws_ok($$update public.memory_extract_parts set dead = true$$, '42501', null, 'nor mark one dead');

select tests.authenticate_as('84000000-0000-4000-8000-00000000000b');
select is_empty($$select * from public.memory_extract_parts$$, 'another tenant sees no part of A''s');
select is_empty($$select * from public.memory_extract_marks$$, 'another tenant sees no mark of A''s');
select throws_ok($$select public.record_extract_part((select id from job_ids where key like 'session:s:1:%'), 0, sha256('d0'),
                   array[sha256('x1')], 4, current_setting('tests.covered_as_of')::pg_snapshot)$$,
                 '42501', null, 'another tenant cannot record the part of A''s job');
select tests.as_anon();
select throws_ok($$select public.record_extract_part((select id from job_ids where key like 'session:s:1:%'), 0, sha256('d0'),
                   array[sha256('x1')], 4, current_setting('tests.covered_as_of')::pg_snapshot)$$,
                 '42501', null, 'anon cannot call record_extract_part');

-- What the worker and the sweeper do to the job, the part follows.
select tests.clear_authentication();
update public.memory_jobs set status = 'running' where id = (select id from job_ids where key like 'session:s:5:%');
update public.memory_jobs set status = 'queued' where id = (select id from job_ids where key like 'session:s:5:%');
select is((select dead from public.memory_extract_parts where owner_id = '84000000-0000-4000-8000-00000000000a'), false, 'a job retried is still live');
update public.memory_jobs set status = 'dead' where id = (select id from job_ids where key like 'session:s:5:%');
select is((select dead from public.memory_extract_parts where owner_id = '84000000-0000-4000-8000-00000000000a'), true, 'a dead job''s part is dead');
select is((select died_by from public.memory_extract_parts where owner_id = '84000000-0000-4000-8000-00000000000a'), pg_current_xact_id(),
          'with the transaction that killed it (what parts queued before compare with)');
delete from public.memory_jobs where id = (select id from job_ids where key like 'session:s:5:%');
select ok(not exists (select from public.memory_extract_parts where owner_id = '84000000-0000-4000-8000-00000000000a')
          and not exists (select from public.memory_extract_marks where job_id = (select id from job_ids where key like 'session:s:5:%')),
          'the part and its marks go with their job');

select * from finish();
rollback;
