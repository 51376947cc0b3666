-- A finished extract job's transcript is cleared job_keep_days (30) after it finished; the job,
-- its result, its part and its marks stay.
--
-- Extract jobs were kept whole forever (20261128620000): their parts and marks are extraction's
-- coverage, and deleting the jobs made an active session extract its whole transcript again every
-- 30 days and let a later `after` POST skip a pruned dead job's messages. What the coverage reads
-- is the part and its marks (and the part's tail, the next part's context), not the payload: the
-- payload's messages are read for two things only, both by a POST with `after`, and both now
-- answer 409 transcript_mismatch (resend the whole transcript) when the payload is cleared:
--
-- * an `after` point inside a part (not at its end), whose context is a slice of that part's messages;
-- * a dead part on the way back from `after`, whose messages are queued again, read back from the
--   payloads of the parts from it to `after`.
--
-- A whole transcript needs no payload: it brings its messages, and the marks say which are covered
-- (an already covered session still queues nothing; a dead job's messages are queued again from
-- the transcript itself). Dead jobs are cleared too: the whole transcript always re-queues their
-- messages, and an `after` POST that needs a cleared one is answered 409, never skipped.
--
-- payload_cleared_at says a payload was cleared (the payload keeps session_id, offset, project,
-- scope, thread_id and lineage; messages and context are gone); memory-extract reads it rather
-- than infer a clearing from missing keys. A cleared job is finished for good: it cannot be queued
-- again (the check), so no worker runs an extract job without its transcript. docs/extraction.md.

alter table public.memory_jobs add column payload_cleared_at timestamptz;
alter table public.memory_jobs
  add constraint memory_jobs_payload_cleared_finished
  check (payload_cleared_at is null or (kind = 'extract' and status in ('done', 'dead')));
comment on column public.memory_jobs.payload_cleared_at is
  'When devai-job-prune cleared this finished extract job''s transcript (payload messages and context), job_keep_days after it finished; its result, part and marks stay (docs/extraction.md).';

-- The clearing's scan: finished extract jobs not cleared yet, by the time they finished.
create index memory_jobs_extract_payload_due on public.memory_jobs (finished_at)
  where status in ('done', 'dead') and kind = 'extract' and payload_cleared_at is null;

update public.memory_settings
   set description = 'memory_jobs done or dead for longer than this many days are deleted by devai-job-prune, but extract jobs, whose transcript (payload messages and context) is cleared instead (their parts and marks are extraction''s coverage); queued and running jobs are kept.'
 where name = 'job_keep_days';

-- Deletes at most p_limit jobs but extract ones that finished (done or dead) more than job_keep_days
-- before p_now, oldest first; clears the transcript of at most p_limit extract jobs finished as long
-- ago, oldest first (payload_cleared_at = p_now: each once); both skip any a concurrent transaction
-- holds; and deletes at most 10 x p_limit events older than event_keep_days (not the redaction
-- events). Returns {"deleted": jobs, "payloads_cleared": n, "events_deleted": n, "remaining":
-- true|false} (remaining: more of any are due; the next call takes them). By hand:
--   select memory_private.prune_finished_jobs();
create or replace function memory_private.prune_finished_jobs(p_now timestamptz default now(), p_limit integer default 500)
returns jsonb
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
  v_cutoff  timestamptz := p_now - make_interval(secs => public.memory_setting('job_keep_days')::double precision * 86400);
  v_events  timestamptz := p_now - make_interval(secs => public.memory_setting('event_keep_days')::double precision * 86400);
  v_deleted integer;
  v_cleared integer;
  v_events_deleted integer;
begin
  if p_limit is null or p_limit < 1 then
    raise exception 'p_limit must be at least 1, got %', p_limit using errcode = '22023';
  end if;
  with due as (
    select j.id from public.memory_jobs j
     where j.status in ('done', 'dead') and j.kind <> 'extract' and j.finished_at < v_cutoff
     order by j.finished_at
     limit p_limit
       for update skip locked
  )
  delete from public.memory_jobs j using due where j.id = due.id;
  get diagnostics v_deleted = row_count;
  with due as (
    select j.id from public.memory_jobs j
     where j.status in ('done', 'dead') and j.kind = 'extract' and j.payload_cleared_at is null
       and j.finished_at < v_cutoff
     order by j.finished_at
     limit p_limit
       for update skip locked
  )
  update public.memory_jobs j
     set payload = j.payload - 'messages' - 'context', payload_cleared_at = p_now
    from due where j.id = due.id;
  get diagnostics v_cleared = row_count;
  with due as (
    select e.id from public.memory_events e
     where e.op <> 'redact' and e.ts < v_events
     order by e.ts
     limit p_limit * 10
  )
  delete from public.memory_events e using due where e.id = due.id;
  get diagnostics v_events_deleted = row_count;
  return jsonb_build_object(
    'deleted', v_deleted,
    'payloads_cleared', v_cleared,
    'events_deleted', v_events_deleted,
    'remaining', exists (select from public.memory_jobs j
                          where j.status in ('done', 'dead') and j.kind <> 'extract' and j.finished_at < v_cutoff)
                 or exists (select from public.memory_jobs j
                             where j.status in ('done', 'dead') and j.kind = 'extract' and j.payload_cleared_at is null
                               and j.finished_at < v_cutoff)
                 or exists (select from public.memory_events e where e.op <> 'redact' and e.ts < v_events));
end;
$$;
revoke all on function memory_private.prune_finished_jobs(timestamptz, integer) from public;

insert into public.memory_maintenance_schedules (job_name, schedule, command, description) values
  ('devai-job-prune', '* * * * *', 'select memory_private.prune_finished_jobs()',
   'Deletes memory_jobs (but extract jobs) done or dead for more than job_keep_days (30), at most 500 a call, clears the transcript of as many extract jobs finished as long ago (their result, parts and marks stay), and deletes memory_events older than event_keep_days (90) but the redaction events, at most 5,000 a call; every minute.')
on conflict (job_name) do update
  set schedule = excluded.schedule, command = excluded.command, description = excluded.description;

select memory_private.register_maintenance_schedules();
