-- Background intelligence, part 2: consent decisions in the history, proposals that lapse, and the
-- nightly queueing of each active tenant's consolidation (and of re-embedding left unfinished).
-- pg_cron enqueues, the worker runs (supabase/functions/_shared/background-jobs.ts). See
-- docs/consolidation.md and docs/operations.md.

-- Writes a history row for every consent decision on a proposal, under the proposal's id (there is
-- no memory yet; an accepted proposal's memory has its own ADD): PROPOSE when a model's sensitive
-- fact is queued, then ACCEPT (new_ref = the memory it became), REJECT or LAPSE. The actor is
-- memory.actor (the user, the worker, cron). Called by the trigger below.
create or replace function memory_private.record_proposal_write()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
declare
  v_event text;
begin
  if tg_op = 'INSERT' then
    v_event := 'PROPOSE';
  elsif old.status = 'pending' and new.status <> 'pending' then
    v_event := case new.status when 'accepted' then 'ACCEPT' when 'rejected' then 'REJECT' else 'LAPSE' end;
  else
    return null;
  end if;
  insert into public.memory_history (owner_id, memory_id, event, old_ref, new_ref, actor, old_content, new_content, meta)
  values (new.owner_id, new.id, v_event, null, new.memory_id, memory_private.current_actor(), null, new.content,
          jsonb_build_object('proposal', true, 'field', new.field, 'status', new.status, 'namespace', new.namespace,
                             'expires_at', new.expires_at, 'origin', new.origin,
                             'thread_id', coalesce(nullif(current_setting('memory.thread_id', true), ''), 'default')));
  return null;
end;
$$;
revoke all on function memory_private.record_proposal_write() from public;

create trigger memory_proposals_record_decision
  after insert or update of status on public.memory_proposals
  for each row execute function memory_private.record_proposal_write();

-- Lapses the proposals still pending at their expiry (pg_cron 'devai-proposal-lapse', daily 02:15
-- UTC): status 'lapsed', a LAPSE history row each by cron:proposals. Returns {"lapsed": n}.
-- Run by hand: select memory_private.lapse_proposals();
create or replace function memory_private.lapse_proposals(p_now timestamptz default now())
returns jsonb
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
  v_prev  text := current_setting('memory.actor', true);
  v_count integer;
begin
  perform set_config('memory.actor', coalesce(nullif(v_prev, ''), 'cron:proposals'), true);
  update public.memory_proposals p
     set status = 'lapsed', decided_at = p_now, decided_by = coalesce(nullif(v_prev, ''), 'cron:proposals')
   where p.status = 'pending' and p.expires_at <= p_now;
  get diagnostics v_count = row_count;
  perform set_config('memory.actor', coalesce(v_prev, ''), true);
  return jsonb_build_object('lapsed', v_count);
end;
$$;
revoke all on function memory_private.lapse_proposals(timestamptz) from public;
grant execute on function memory_private.lapse_proposals(timestamptz) to service_role;

-- Queues tonight's consolidation (pg_cron 'devai-memory-consolidation', daily 02:45 UTC): one
-- 'nightly_consolidation' job per tenant with work and night (idempotency key
-- 'nightly_consolidation:<UTC date of p_now>'), spread over consolidation_window_minutes by a hash
-- of the tenant (run_after), so the tenants' model calls do not all start at once. A tenant has work
-- when a memory of it was created or updated within consolidation_recent_hours, or a session of it
-- waits for its summary (ended over episode_summary_days ago) or its one-line form (over
-- episode_compress_days ago). Also re-queues re-embedding ('reindex', key 'reindex:<date>') for
-- tenants whose last reindex job stopped at its nightly cap with memories left. The worker runs them
-- (docs/consolidation.md). Returns {"consolidation", "reindex"}: jobs queued.
-- Run by hand: select memory_private.enqueue_nightly_consolidation();
create or replace function memory_private.enqueue_nightly_consolidation(p_now timestamptz default now())
returns jsonb
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
  v_night    text := to_char(p_now at time zone 'UTC', 'YYYY-MM-DD');
  v_recent   interval := make_interval(secs => public.memory_setting('consolidation_recent_hours')::double precision * 3600);
  v_summary  interval := make_interval(days => public.memory_setting('episode_summary_days')::integer);
  v_compress interval := make_interval(days => public.memory_setting('episode_compress_days')::integer);
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
revoke all on function memory_private.enqueue_nightly_consolidation(timestamptz) from public;
grant execute on function memory_private.enqueue_nightly_consolidation(timestamptz) to service_role;

insert into public.memory_maintenance_schedules (job_name, schedule, command, description) values
  ('devai-proposal-lapse', '15 2 * * *', 'select memory_private.lapse_proposals()',
   'Lapses the sensitive-fact proposals still pending at their expiry (proposal_days), daily at 02:15.'),
  ('devai-memory-consolidation', '45 2 * * *', 'select memory_private.enqueue_nightly_consolidation()',
   'Queues tonight''s consolidation per tenant with recent activity (staggered over consolidation_window_minutes) and unfinished re-embedding, daily at 02:45; the worker runs them.')
on conflict (job_name) do update
  set schedule = excluded.schedule, command = excluded.command, description = excluded.description;

select memory_private.register_maintenance_schedules();
