-- The nightly consolidation counts episode_summary_days and episode_compress_days in whole days
-- of 86,400 seconds, whatever the session's time zone, as the job that does the work does.
--
-- memory_private.enqueue_nightly_consolidation decided which tenants had a session due for its
-- summary (ended over episode_summary_days ago) or its compression (episode_compress_days) with
-- `p_now - make_interval(days => n)`. Subtracting calendar days from a timestamptz follows the
-- session's TimeZone: across a daylight-saving change the cutoff moves by an hour. The job that
-- writes the summaries (_shared/episode-summaries.ts) counts n × 86,400 seconds. With the database
-- in America/St_Johns, a session that ended between 7 days and 7 days + 1 hour before a night in
-- the week after the clocks went back was due for the job but not queued (a night late); in the
-- week after they went forward, a tenant was queued for a job with nothing to summarise. The
-- intervals are now in seconds, like every other retention in these functions. Body otherwise as
-- 20261124700100.
create or replace function memory_private.enqueue_nightly_consolidation(p_now timestamptz default now())
returns jsonb
language plpgsql
set search_path = ''
as $$
declare
  v_night    text := to_char(p_now at time zone 'UTC', 'YYYY-MM-DD');
  v_recent   interval := make_interval(secs => public.memory_setting('consolidation_recent_hours')::double precision * 3600);
  v_summary  interval := make_interval(secs => public.memory_setting('episode_summary_days')::double precision * 86400);
  v_compress interval := make_interval(secs => public.memory_setting('episode_compress_days')::double precision * 86400);
  v_window   bigint := greatest(public.memory_setting('consolidation_window_minutes')::bigint * 60, 1);
  v_consolidation integer;
  v_reindex  integer;
begin
  with tenants as (
    select m.owner_id from public.devai_memories m
     where (m.updated_at >= p_now - v_recent or m.created_at >= p_now - v_recent)
       and m.source is distinct from 'conversation'
    union
    select s.owner_id from public.memory_sessions s
     where s.ended_at is not null and s.episode_count > 0
       and ((s.summary is null and s.ended_at < p_now - v_summary)
            or (s.summary is not null and s.compressed is null and s.ended_at < p_now - v_compress))
  ),
  queued as (
    insert into public.memory_jobs (owner_id, kind, payload, idempotency_key, run_after)
    select t.owner_id, 'nightly_consolidation', jsonb_build_object('night', v_night),
           'nightly_consolidation:' || v_night,
           p_now + make_interval(secs => ((hashtext(t.owner_id::text)::bigint & 2147483647) % v_window)::double precision)
      from tenants t
    on conflict (owner_id, kind, idempotency_key) do nothing
    returning 1
  )
  select count(*) into v_consolidation from queued;

  with last_reindex as (
    select distinct on (j.owner_id) j.owner_id, j.status, j.result
      from public.memory_jobs j
     where j.kind = 'reindex'
     order by j.owner_id, j.created_at desc
  ),
  queued as (
    insert into public.memory_jobs (owner_id, kind, payload, idempotency_key)
    select l.owner_id, 'reindex', jsonb_build_object('model', l.result ->> 'model'), 'reindex:' || v_night
      from last_reindex l
     where l.status = 'done' and coalesce((l.result ->> 'remaining')::bigint, 0) > 0 and l.result ->> 'model' is not null
    on conflict (owner_id, kind, idempotency_key) do nothing
    returning 1
  )
  select count(*) into v_reindex from queued;

  return jsonb_build_object('consolidation', v_consolidation, 'reindex', v_reindex);
end;
$$;
