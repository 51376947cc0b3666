-- Lifecycle, layer 6 (schedules): what runs when. The rows of public.memory_maintenance_schedules
-- are the single source of truth; this migration upserts them and registers exactly those jobs
-- with pg_cron where pg_cron is available. Re-running it (or the register function) never
-- duplicates a job: cron.schedule(job_name, ...) updates the job of that name.
-- Times are UTC (pg_cron's default cron.timezone is GMT). See docs/operations.md.
--
-- Decay, TTL and purge run in their step form, every minute of an hour-long window each (decay
-- 03:00-03:59, TTL 04:00-04:59, purge 05:00-05:59, so they never overlap): each call is one short
-- transaction that does a few batches and commits, so a tenant's writes wait at most for one
-- call, never for the whole job. Decay and TTL start one run per night (the first call of the
-- window) and continue it until done; the calls after that are cheap no-ops. 60 calls of 5
-- batches cover some 300,000 heap pages (~1.8M memories) per window; a run that does not finish
-- continues the next night.

insert into public.memory_maintenance_schedules (job_name, schedule, command, description) values
  ('devai-memory-decay', '* 3 * * *', 'select memory_private.run_decay_step()',
   'Ebbinghaus decay of strength (idempotent) and DECAY invalidation below prune_threshold: one run a night, 5 batches per call, every minute 03:00-03:59.'),
  ('devai-memory-ttl', '* 4 * * *', 'select memory_private.run_ttl_step()',
   'TTL soft-delete of idle, unimportant memories; purge_at = now + purge_grace_days: one run a night, 5 batches per call, every minute 04:00-04:59.'),
  ('devai-memory-purge', '* 5 * * *', 'select memory_private.run_purge_step()',
   'Deletes soft-deleted memories past purge_at, at most 5 batches per call, every minute 05:00-05:59; history survives.'),
  ('devai-job-lease-sweep', '* * * * *', 'select memory_private.sweep_stale_job_leases()',
   'Re-queues (or parks as dead) memory_jobs whose worker lease expired.')
on conflict (job_name) do update
  set schedule = excluded.schedule, command = excluded.command, description = excluded.description;

-- Registers public.memory_maintenance_schedules with pg_cron: creates the pg_cron extension if
-- this server has it and this is the database pg_cron runs in (cron.database_name), upserts each
-- row as a job of the same name, and unschedules 'devai-' jobs that are no longer in the table.
-- Where pg_cron is not installed, or this is another database (create extension raises there),
-- it does nothing but say so (NOTICE) and return {"pg_cron": false}. Idempotent.
-- Called by this migration; run it by hand after changing the schedules table.
create or replace function memory_private.register_maintenance_schedules()
returns jsonb
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
  v_registered integer := 0;
  v_removed    integer := 0;
begin
  if not exists (select from pg_catalog.pg_available_extensions where name = 'pg_cron') then
    raise notice 'pg_cron is not available on this server: maintenance jobs not scheduled (run the commands in public.memory_maintenance_schedules on a timer instead)';
    return jsonb_build_object('pg_cron', false, 'reason', 'not available');
  end if;
  begin
    if not exists (select from pg_catalog.pg_extension where extname = 'pg_cron') then
      create extension pg_cron;
    end if;
  exception when others then
    raise notice 'pg_cron cannot be used in database % (%): maintenance jobs not scheduled',
      current_database(), sqlerrm;
    return jsonb_build_object('pg_cron', false, 'reason', sqlerrm);
  end;

  select count(*) into v_registered
    from (select cron.schedule(s.job_name, s.schedule, s.command)
            from public.memory_maintenance_schedules s
           order by s.job_name) as registered;

  select count(*) into v_removed
    from (select cron.unschedule(j.jobid)
            from cron.job j
           where j.jobname like 'devai-%'
             and j.database = current_database()
             and not exists (select from public.memory_maintenance_schedules s where s.job_name = j.jobname)) as removed;

  return jsonb_build_object('pg_cron', true, 'registered', v_registered, 'removed', v_removed);
end;
$$;
revoke all on function memory_private.register_maintenance_schedules() from public;
-- No grant: only the owner (postgres, which owns the cron jobs) registers schedules.

select memory_private.register_maintenance_schedules();
