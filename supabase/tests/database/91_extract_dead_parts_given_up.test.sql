-- A part records how many jobs have held its messages (tries, migration 20261128830000): a part of
-- messages dead parts held is keyed with ':try<tries>' (memory-extract's queue-plan.ts, the part
-- ending at its POST's transcript's end included), accepted only with tries above 1; the third job holding them that dies is given up (it covers them for
-- good), an earlier one is only dead. docs/extraction.md#a-message-that-always-kills-its-job.
begin;
-- The coverage snapshot a POST passes is its first read's, taken before the transaction writes: one
-- taken after this transaction's first write may show a later transaction committed (pg_cron's,
-- say), which record_extract_part refuses as a snapshot from after the part's own transaction.
select set_config('tests.covered_as_of', pg_current_snapshot()::text, true);
select plan(10);

-- Queued by the service (as the worker's role: tenants cannot insert jobs), then read as the tenant.
insert into public.memory_jobs (owner_id, kind, payload, idempotency_key)
select '91000000-0000-4000-8000-00000000000a', 'extract',
       jsonb_build_object('session_id', 's', 'offset', 0, 'messages', '[{"role": "user", "content": "m0"}]'::jsonb),
       'session:s:1:' || encode(sha256('d1'), 'hex') || v.suffix
  from (values (''), (':try2'), (':try3'), (':try1')) as v(suffix);
create temporary table job_ids as
  select idempotency_key as key, id from public.memory_jobs where owner_id = '91000000-0000-4000-8000-00000000000a';
grant select on job_ids to authenticated, anon;
select tests.authenticate_as('91000000-0000-4000-8000-00000000000a');

select throws_ok($$select public.record_extract_part((select id from job_ids where key like '%:try1'), 0, sha256('d0'),
                   array[sha256('d1')], 6, current_setting('tests.covered_as_of')::pg_snapshot, 1)$$,
                 '22023', null, 'a '':try'' key is not a first try''s');
select throws_ok($$select public.record_extract_part((select id from job_ids where key like '%:try2'), 0, sha256('d0'),
                   array[sha256('d1')], 6, current_setting('tests.covered_as_of')::pg_snapshot, 3)$$,
                 '22023', null, 'a '':try<k>'' key is the part of try k only');
select throws_ok($$select public.record_extract_part((select id from job_ids where key like '%:try3'), 0, sha256('d0'),
                   array[sha256('d1')], 6, current_setting('tests.covered_as_of')::pg_snapshot, 4)$$,
                 '22023', null, 'no part is a fourth try');
select lives_ok($$select public.record_extract_part((select id from job_ids where key not like '%:try%'), 0, sha256('d0'),
                  array[sha256('d1')], 6, current_setting('tests.covered_as_of')::pg_snapshot)$$,
                'a call without tries records a first try, under the plain key');
select lives_ok($$select public.record_extract_part((select id from job_ids where key like '%:try2'), 0, sha256('d0'),
                  array[sha256('d1')], 6, current_setting('tests.covered_as_of')::pg_snapshot, 2)$$,
                'a second try under its '':try2'' key');
select lives_ok($$select public.record_extract_part((select id from job_ids where key like '%:try3'), 0, sha256('d0'),
                  array[sha256('d1')], 6, current_setting('tests.covered_as_of')::pg_snapshot, 3)$$,
                'a third try under its '':try3'' key');
select results_eq($$select substring(j.idempotency_key from '(:try\d)$'), p.tries, p.dead, p.given_up
                      from public.memory_extract_parts p join public.memory_jobs j on j.id = p.job_id order by p.tries$$,
                  $$values (null::text, 1::smallint, false, false), (':try2', 2::smallint, false, false), (':try3', 3::smallint, false, false)$$,
                  'each part with its tries, live');
select throws_ok($$update public.memory_extract_parts set given_up = true$$, '42501', null,
                 'a tenant cannot give a part up (only the death trigger does)');

-- The worker kills them all.
select tests.clear_authentication();
update public.memory_jobs set status = 'dead' where owner_id = '91000000-0000-4000-8000-00000000000a';
select results_eq($$select tries, dead, given_up from public.memory_extract_parts
                     where owner_id = '91000000-0000-4000-8000-00000000000a' order by tries$$,
                  $$values (1::smallint, true, false), (2::smallint, true, false), (3::smallint, true, true)$$,
                  'the first and second tries are dead; the third is given up (it covers its messages for good)');
-- A live part (dead = false, died_by null, so only memory_extract_parts_given_up can refuse it).
insert into public.memory_jobs (owner_id, kind, payload, idempotency_key)
values ('91000000-0000-4000-8000-00000000000a', 'extract',
        '{"session_id": "s", "offset": 0, "messages": [{"role": "user", "content": "m0"}]}', 'session:s:1:live');
insert into public.memory_extract_parts (job_id, owner_id, session_id, start_position, start_digest, end_position,
                                         tail, payload_bytes, covered_as_of)
select id, owner_id, 's', 0, sha256('d0'), 1, '[]', 1, pg_current_snapshot()
  from public.memory_jobs where idempotency_key = 'session:s:1:live';
select throws_ok($$update public.memory_extract_parts set given_up = true
                    where job_id = (select id from public.memory_jobs where idempotency_key = 'session:s:1:live')$$,
                 '23514', 'new row for relation "memory_extract_parts" violates check constraint "memory_extract_parts_given_up"',
                 'only a dead part is given up');

select * from finish();
rollback;
