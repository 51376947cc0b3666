-- A finished (done or dead) extract job's transcript, its payload's messages and context, is
-- cleared job_keep_days (30) after it finished, at most p_limit a call, oldest first, once
-- (payload_cleared_at); the job, its result, its part and its marks stay: they are extraction's
-- coverage (migration 20261128730000; docs/extraction.md#where-coverage-is-kept).
begin;
select plan(14);

-- e1 done 40 days ago, e6 done 35, e2 dead 31 (below), e3 done 29, e4 queued, e5 running; d1 a dedup job done 40 days ago.
insert into public.memory_jobs (id, owner_id, kind, status, payload, result, idempotency_key, created_at, finished_at)
select ('86000000-0000-4000-8000-0000000000' || j.n)::uuid, '86000000-0000-4000-8000-00000000000c', j.kind, j.status,
       case when j.kind = 'extract'
            then jsonb_build_object('session_id', 's', 'offset', j.off, 'project', 'p',
                                    'context', jsonb_build_array(jsonb_build_object('role', 'user', 'content', 'before ' || j.n)),
                                    'messages', jsonb_build_array(jsonb_build_object('role', 'user', 'content', 'said in ' || j.n),
                                                                  jsonb_build_object('role', 'assistant', 'content', 'answered')))
            else '{}' end,
       case when j.status = 'done' then jsonb_build_object('mode', 'rules', 'candidates', 1) end,
       'k' || j.n, now() - interval '100 days', now() - j.ago
  from (values ('e1', 'extract', 'done', 0, interval '40 days'), ('e6', 'extract', 'done', 2, interval '35 days'),
               ('e2', 'extract', 'queued', 4, null), ('e3', 'extract', 'done', 6, interval '29 days'),
               ('e4', 'extract', 'queued', 8, null), ('e5', 'extract', 'running', 10, null),
               ('d1', 'dedup', 'done', null, interval '40 days')) as j(n, kind, status, off, ago);
-- Each extract job's part and its two marks, as record_extract_part leaves them.
insert into public.memory_extract_parts (job_id, owner_id, session_id, start_position, start_digest, end_position, tail,
                                         payload_bytes, covered_as_of)
select j.id, j.owner_id, 's', (j.payload ->> 'offset')::int, sha256(j.id::text::bytea), (j.payload ->> 'offset')::int + 2,
       (j.payload -> 'context') || (j.payload -> 'messages'), octet_length(j.payload::text), pg_current_snapshot()
  from public.memory_jobs j where j.owner_id = '86000000-0000-4000-8000-00000000000c' and j.kind = 'extract';
insert into public.memory_extract_marks (job_id, position, key)
select p.job_id, p.start_position + i, substring(sha256(p.job_id::text::bytea || i::text::bytea) from 1 for 16)
  from public.memory_extract_parts p, generate_series(1, 2) as i
 where p.owner_id = '86000000-0000-4000-8000-00000000000c';
-- e2 dies as the worker kills a job (its part dies with it).
update public.memory_jobs set status = 'dead', finished_at = now() - interval '31 days'
 where id = '86000000-0000-4000-8000-0000000000e2';

create temporary table before_prune on commit drop as
  select j.id, j.result, p.tail, p.dead, (select count(*) from public.memory_extract_marks m where m.job_id = j.id) as marks
    from public.memory_jobs j join public.memory_extract_parts p on p.job_id = j.id
   where j.owner_id = '86000000-0000-4000-8000-00000000000c';

select is(memory_private.prune_finished_jobs(p_limit => 2),
          '{"deleted": 1, "payloads_cleared": 2, "events_deleted": 0, "remaining": true}'::jsonb,
          'a call of two clears two of the three due transcripts (and deletes the dedup job)');
select set_eq($$select id from public.memory_jobs
                 where owner_id = '86000000-0000-4000-8000-00000000000c' and payload_cleared_at is not null$$,
              $$values ('86000000-0000-4000-8000-0000000000e1'::uuid), ('86000000-0000-4000-8000-0000000000e6'::uuid)$$,
              'oldest first: the jobs done 40 and 35 days ago');
select is((select payload from public.memory_jobs where id = '86000000-0000-4000-8000-0000000000e1'),
          '{"session_id": "s", "offset": 0, "project": "p"}'::jsonb,
          'the payload keeps what names the session, not its messages nor their context');
select is(memory_private.prune_finished_jobs(p_limit => 2),
          '{"deleted": 0, "payloads_cleared": 1, "events_deleted": 0, "remaining": false}'::jsonb,
          'the next call clears the dead job''s transcript');
select is((select payload_cleared_at from public.memory_jobs where id = '86000000-0000-4000-8000-0000000000e2'), now(),
          'a dead job''s transcript is cleared too (a whole transcript queues its messages again)');
select is(memory_private.prune_finished_jobs(now() + interval '12 hours'),
          '{"deleted": 0, "payloads_cleared": 0, "events_deleted": 0, "remaining": false}'::jsonb,
          'a later call has nothing to clear');
select is((select array_agg(payload_cleared_at) from public.memory_jobs
            where owner_id = '86000000-0000-4000-8000-00000000000c' and payload_cleared_at is not null),
          array[now(), now(), now()], 'each transcript is cleared once: the later call did not touch them');
select results_eq($$select j.id, j.result, p.tail, p.dead, (select count(*) from public.memory_extract_marks m where m.job_id = j.id)
                     from public.memory_jobs j join public.memory_extract_parts p on p.job_id = j.id
                    where j.owner_id = '86000000-0000-4000-8000-00000000000c' order by j.id$$,
                  $$select * from before_prune order by id$$,
                  'every job stays, with its result, its part (tail, dead or live) and its marks');
select set_eq($$select id::text, payload -> 'messages' is not null and payload_cleared_at is null
                 from public.memory_jobs where owner_id = '86000000-0000-4000-8000-00000000000c'
                  and right(id::text, 2) in ('e3', 'e4', 'e5')$$,
              $$values ('86000000-0000-4000-8000-0000000000e3', true), ('86000000-0000-4000-8000-0000000000e4', true),
                       ('86000000-0000-4000-8000-0000000000e5', true)$$,
              'kept whole: done 29 days ago, queued and running however old');

update public.memory_settings set value = 1 where name = 'job_keep_days';
select is(memory_private.prune_finished_jobs() -> 'payloads_cleared', '1'::jsonb,
          'job_keep_days 1: the job done 29 days ago is cleared too');

select throws_ok($$update public.memory_jobs set status = 'queued' where id = '86000000-0000-4000-8000-0000000000e1'$$,
                 '23514', null, 'a cleared job cannot be queued again (no worker runs one without its transcript)');
select throws_ok($$update public.memory_jobs set payload_cleared_at = now() where id = '86000000-0000-4000-8000-0000000000e5'$$,
                 '23514', null, 'nor a running job be marked cleared');
select throws_ok($$update public.memory_jobs set payload_cleared_at = now() where id = '86000000-0000-4000-8000-0000000000e4'$$,
                 '23514', null, 'nor a queued one');
select tests.authenticate_as('86000000-0000-4000-8000-00000000000c');
select throws_ok($$insert into public.memory_jobs (owner_id, kind, idempotency_key, payload_cleared_at)
                   values ('86000000-0000-4000-8000-00000000000c', 'extract', 'mine', now())$$,
                 '42501', null, 'a tenant cannot mark a job cleared');

select * from finish();
rollback;
