-- The step form of TTL (what pg_cron runs): run_ttl_step continues one run per night over several
-- calls with the run's clock, and the result is exactly one run_ttl with that clock: the same
-- soft-deletes and purge_at, one TTL history row and one change-log entry per soft-delete. As in
-- 29_decay_steps, the one-shot run is captured (psql \gset) and rolled back to a savepoint first.
-- Clock of the night: C = 2026-06-01 04:00 UTC. Each row was last accessed C - k days + 2 h, so a
-- step that used its own later p_now (04:00 + 3 h onwards) would also retire the k = 61 rows.
begin;
set local timezone to 'UTC';
select plan(19);

delete from memory_private.lifecycle_runs;
update public.memory_settings set value = 1 where name = 'ttl_batch_pages';

-- 3 tenants, 200 memories idle 50..69 days, importance 1-5; some pinned, highest or user-stated
insert into public.devai_memories (id, owner_id, content, memory_type, namespace, importance, pinned, priority, source, last_accessed_at)
select ('30000000-0000-4000-8000-' || lpad(g::text, 12, '0'))::uuid,
       ('30000000-0000-4000-8000-0000000000a' || (g % 3))::uuid,
       'ttl steps memory ' || g || repeat(' padding that fills the heap page', 8),
       'semantic', 'devai/global',
       1 + g % 5,
       g % 13 = 0,
       case when g % 17 = 0 then 'highest' else 'low' end,
       case when g % 11 = 0 then 'user_stated' else 'discovery' end,
       timestamptz '2026-06-01 04:00+00' - make_interval(days => 50 + g % 20) + interval '2 hours'
  from generate_series(1, 200) as g;

create temporary table step_results (n serial primary key, result jsonb not null) on commit drop;

savepoint before_runs;
select jsonb_build_object('soft_deleted', memory_private.run_ttl('2026-06-01 04:00+00') -> 'soft_deleted') as one_shot_counts \gset
select tests.lifecycle_state('30000000-') as one_shot_state \gset
rollback to savepoint before_runs;

insert into step_results (result) select memory_private.run_ttl_step(2, '2026-06-01 04:00+00');
insert into step_results (result) select result from tests.run_steps_until_finished('ttl', 2, '2026-06-01 07:00+00') order by n;

select is((select result ->> 'action' from step_results where n = 1), 'started', 'the first call starts a run');
select ok((select count(*) from step_results) >= 5, 'the run took several calls (ttl_batch_pages 1, 2 batches per call)');
select is_empty($$select n from step_results where n > 1 and result ->> 'action' <> 'continued'$$, 'every later call continues the run');
select is((select count(distinct result -> 'run' ->> 'clock') from step_results), 1::bigint, 'every call used the run''s clock');

select is(tests.lifecycle_state('30000000-') -> 'memories', (:'one_shot_state'::jsonb) -> 'memories',
          'same soft-deletes and purge_at as one run_ttl with the run''s clock');
select is(tests.lifecycle_state('30000000-') -> 'history', (:'one_shot_state'::jsonb) -> 'history', 'same history rows (TTL events)');
select is(tests.lifecycle_state('30000000-') -> 'change_log', (:'one_shot_state'::jsonb) -> 'change_log',
          'same change-log rows (delta header) with the same revisions');
select is(tests.lifecycle_state('30000000-') -> 'revisions', (:'one_shot_state'::jsonb) -> 'revisions', 'same thread revisions per tenant');
select is((select result -> 'run' -> 'totals' from step_results order by n desc limit 1), :'one_shot_counts'::jsonb,
          'the run''s totals are the one-shot count');
select ok((select count(*) from public.memory_history where owner_id::text like '30000000-%' and event = 'TTL') > 10,
          'the data really has soft-deletes (TTL events)');
select is_empty($$select m.id from public.devai_memories m
                   where m.owner_id::text like '30000000-%' and m.state = 'soft_deleted'
                     and (select count(*) from public.memory_history h where h.memory_id = m.id and h.event = 'TTL') <> 1
                      or m.owner_id::text like '30000000-%' and m.state = 'soft_deleted'
                     and (select count(*) from public.memory_change_log c where c.memory_id = m.id and c.event = 'soft_deleted') <> 1$$,
                'one TTL history row and one soft_deleted change-log entry per soft-deleted memory');
select is_empty($$select memory_id, actor from public.memory_history
                   where owner_id::text like '30000000-%' and event = 'TTL' and actor <> 'cron:ttl'$$,
                'every TTL event is by cron:ttl');

-- after the night's run: no-ops until 20 hours after the run's clock
create temporary table after_night_1 on commit drop as select tests.lifecycle_state('30000000-') as state,
  (select to_jsonb(r) from memory_private.lifecycle_runs r where r.job = 'ttl') as run;
select is(memory_private.run_ttl_step(2, '2026-06-01 04:59+00') - 'run',
          '{"job": "ttl", "action": "idle", "batches": 0, "soft_deleted": 0}'::jsonb, 'a call after the run finished: idle');
select is(memory_private.run_ttl_step(2, '2026-06-01 23:59+00') ->> 'action', 'idle', '19 h 59 min after the run''s clock: still idle');
select is(tests.lifecycle_state('30000000-'), (select state from after_night_1), 'the idle calls changed nothing');
select is((select to_jsonb(r) from memory_private.lifecycle_runs r where r.job = 'ttl'), (select run from after_night_1),
          'the idle calls did not touch the progress row');

-- the next run, 20 hours later, with its own clock: the 61-day rows are now idle for more than 61 days
select is((memory_private.run_ttl_step(100000, '2026-06-02 00:00+00') -> 'run' ->> 'clock')::timestamptz, '2026-06-02 00:00+00'::timestamptz,
          '20 h after the first run: a new run starts with its own clock');
select ok((select (totals ->> 'soft_deleted')::bigint > 0 and finished_at is not null from memory_private.lifecycle_runs where job = 'ttl')
          and (select count(*) from public.devai_memories where owner_id::text like '30000000-%' and purge_at = '2026-07-02 00:00+00')
              = (select (totals ->> 'soft_deleted')::bigint from memory_private.lifecycle_runs where job = 'ttl'),
          'the second run soft-deletes more, with purge_at = its clock + 30 days');

select throws_ok($$select memory_private.run_ttl_step(0)$$, '22023', null, 'p_batches must be at least 1');

select * from finish();
rollback;
