-- Finished jobs are deleted after job_keep_days (30), but extract jobs; events after
-- event_keep_days (90).
--
-- Nothing deleted memory_jobs rows before: every done or dead job kept its payload and result
-- forever (a dedup job its candidates, a graph, background or index job its work). A job done or
-- dead for longer than that has told its worker and its caller what it had to. Extract jobs stay:
-- their transcript parts and marks (20261128610000) are what extraction's coverage reads, and a
-- review showed what deleting them did: an active session's first job pruned, its next POST
-- extracted the whole transcript again, every 30 days; a dead job pruned, a later POST with
-- `after` skipped its messages for good. Their payloads (the transcript parts) are the queue's
-- growth left (docs/extraction.md).
--
-- devai-job-prune runs every minute, deleting at most 500 jobs a call (a short transaction each:
-- up to 720,000 a day), oldest first; queued and running jobs are never touched.
--
-- memory_events, the same: every retrieval writes one (its search event), and nothing deleted
-- them. Events older than event_keep_days (90) are deleted, 5,000 a call, by the same job; the
-- redaction events stay (GET memory/stats sums them since the first), and the daily caps read
-- the last day only. docs/operations.md.

insert into public.memory_settings (name, value, description) values
  ('job_keep_days', 30,
   'memory_jobs done or dead for longer than this many days are deleted by devai-job-prune, but extract jobs (their transcript parts are what extraction''s coverage reads); queued and running jobs are kept.')
on conflict (name) do nothing;
alter table public.memory_settings
  add constraint memory_settings_job_keep_days_range
  check (name <> 'job_keep_days' or value >= 1);

insert into public.memory_settings (name, value, description) values
  ('event_keep_days', 90,
   'memory_events older than this many days are deleted by devai-job-prune, except the redaction events GET memory/stats sums.')
on conflict (name) do nothing;
alter table public.memory_settings
  add constraint memory_settings_event_keep_days_range
  check (name <> 'event_keep_days' or value >= 1);

-- The prunes' scans: finished jobs by the time they finished; events by time, redactions left out.
create index memory_jobs_finished on public.memory_jobs (finished_at) where status in ('done', 'dead') and kind <> 'extract';
create index memory_events_prunable on public.memory_events (ts) where op <> 'redact';

-- Deletes at most p_limit jobs but extract ones that finished (done or dead) more than job_keep_days before p_now,
-- oldest first, skipping any a concurrent transaction holds, and at most 10 x p_limit events older
-- than event_keep_days (not the redaction events). Returns {"deleted": jobs, "events_deleted": n,
-- "remaining": true|false} (remaining: more of either are due; the next call takes them). By hand:
--   select memory_private.prune_finished_jobs();
create function memory_private.prune_finished_jobs(p_now timestamptz default now(), p_limit integer default 500)
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
    select e.id from public.memory_events e
     where e.op <> 'redact' and e.ts < v_events
     order by e.ts
     limit p_limit * 10
  )
  delete from public.memory_events e using due where e.id = due.id;
  get diagnostics v_events_deleted = row_count;
  return jsonb_build_object(
    'deleted', v_deleted,
    'events_deleted', v_events_deleted,
    'remaining', exists (select from public.memory_jobs j
                          where j.status in ('done', 'dead') and j.kind <> 'extract' and j.finished_at < v_cutoff)
                 or exists (select from public.memory_events e where e.op <> 'redact' and e.ts < v_events));
end;
$$;
revoke all on function memory_private.prune_finished_jobs(timestamptz, integer) from public;

insert into public.memory_maintenance_schedules (job_name, schedule, command, description) values
  ('devai-job-prune', '* * * * *', 'select memory_private.prune_finished_jobs()',
   'Deletes memory_jobs (but extract jobs) done or dead for more than job_keep_days (30), at most 500 a call, and memory_events older than event_keep_days (90) but the redaction events, at most 5,000 a call; every minute.')
on conflict (job_name) do update
  set schedule = excluded.schedule, command = excluded.command, description = excluded.description;

select memory_private.register_maintenance_schedules();
