-- Finished jobs are deleted job_keep_days (30) after they finished, at most p_limit a call, oldest
-- first; queued and running jobs never, nor extract jobs (their parts are extraction's coverage: their
-- transcripts are cleared instead, file 86). Events older than event_keep_days (90) too, but the
-- redaction events (migrations 20261128620000, 20261128730000; docs/operations.md).
begin;
select plan(12);

insert into public.memory_jobs (id, owner_id, kind, status, idempotency_key, created_at, finished_at) values
  ('85000000-0000-4000-8000-0000000000a1', '85000000-0000-4000-8000-00000000000c', 'dedup', 'done', 'k1',
   now() - interval '41 days', now() - interval '40 days'),
  ('85000000-0000-4000-8000-0000000000a2', '85000000-0000-4000-8000-00000000000c', 'embed', 'dead', 'k2',
   now() - interval '32 days', now() - interval '31 days'),
  ('85000000-0000-4000-8000-0000000000b4', '85000000-0000-4000-8000-00000000000c', 'extract', 'done', 'k7',
   now() - interval '100 days', now() - interval '99 days'),
  ('85000000-0000-4000-8000-0000000000a3', '85000000-0000-4000-8000-00000000000c', 'dedup', 'done', 'k3',
   now() - interval '35 days', now() - interval '30 days 1 hour'),
  ('85000000-0000-4000-8000-0000000000b1', '85000000-0000-4000-8000-00000000000c', 'dedup', 'done', 'k4',
   now() - interval '30 days', now() - interval '29 days'),
  ('85000000-0000-4000-8000-0000000000b2', '85000000-0000-4000-8000-00000000000c', 'dedup', 'queued', 'k5',
   now() - interval '100 days', null),
  ('85000000-0000-4000-8000-0000000000b3', '85000000-0000-4000-8000-00000000000c', 'dedup', 'running', 'k6',
   now() - interval '100 days', null);

select is(memory_private.prune_finished_jobs(p_limit => 2), '{"deleted": 2, "payloads_cleared": 1, "events_deleted": 0, "remaining": true}'::jsonb,
          'two due of three a call of two: more remain');
select set_eq($$select id from public.memory_jobs where owner_id = '85000000-0000-4000-8000-00000000000c'
                 and id::text like '%a_'$$,
              $$values ('85000000-0000-4000-8000-0000000000a3'::uuid)$$,
              'oldest first: the job finished 30 days and an hour ago is the one left');
select is(memory_private.prune_finished_jobs(p_limit => 2), '{"deleted": 1, "payloads_cleared": 0, "events_deleted": 0, "remaining": false}'::jsonb,
          'the next call takes it');
select set_eq($$select id from public.memory_jobs where owner_id = '85000000-0000-4000-8000-00000000000c'$$,
              $$values ('85000000-0000-4000-8000-0000000000b1'::uuid), ('85000000-0000-4000-8000-0000000000b2'::uuid),
                       ('85000000-0000-4000-8000-0000000000b3'::uuid), ('85000000-0000-4000-8000-0000000000b4'::uuid)$$,
              'kept: done 29 days ago, queued and running however old, an extract job however old (its transcript cleared)');
select is(memory_private.prune_finished_jobs(), '{"deleted": 0, "payloads_cleared": 0, "events_deleted": 0, "remaining": false}'::jsonb,
          'nothing more is due');

insert into public.memory_events (owner_id, node, op, status, ts) values
  ('85000000-0000-4000-8000-00000000000c', 'hotpath', 'search', 'ok', now() - interval '91 days'),
  ('85000000-0000-4000-8000-00000000000c', 'hotpath', 'redact', 'ok', now() - interval '400 days'),
  ('85000000-0000-4000-8000-00000000000c', 'hotpath', 'search', 'ok', now() - interval '89 days');
select is(memory_private.prune_finished_jobs() - 'remaining', '{"deleted": 0, "payloads_cleared": 0, "events_deleted": 1}'::jsonb,
          'one event past 90 days');
select set_eq($$select op, ts > now() - interval '90 days' from public.memory_events
                 where owner_id = '85000000-0000-4000-8000-00000000000c'$$,
              $$values ('redact', false), ('search', true)$$,
              'kept: the redaction event however old (stats sum them), and the one of 89 days');

update public.memory_settings set value = 1 where name = 'job_keep_days';
select memory_private.prune_finished_jobs();
select set_eq($$select id from public.memory_jobs where owner_id = '85000000-0000-4000-8000-00000000000c'$$,
              $$values ('85000000-0000-4000-8000-0000000000b2'::uuid), ('85000000-0000-4000-8000-0000000000b3'::uuid),
                       ('85000000-0000-4000-8000-0000000000b4'::uuid)$$,
              'job_keep_days 1: the job done 29 days ago is due too, the extract job still not');
select throws_ok($$update public.memory_settings set value = 0 where name = 'job_keep_days'$$, '23514', null,
                 'job_keep_days is at least 1');
select throws_ok($$select memory_private.prune_finished_jobs(p_limit => 0)$$, '22023', null, 'a limit below 1 is refused');

-- What refers to a job goes with it (an extract job's transcript part and marks).
select is_empty($$select conrelid::regclass from pg_constraint
                   where confrelid = 'public.memory_jobs'::regclass and confdeltype <> 'c'$$,
                'every foreign key to memory_jobs deletes with the job');
select is((select command from public.memory_maintenance_schedules where job_name = 'devai-job-prune'),
          'select memory_private.prune_finished_jobs()', 'scheduled every minute as devai-job-prune');

select * from finish();
rollback;
