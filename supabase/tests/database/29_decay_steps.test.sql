-- The step form of decay (what pg_cron runs): run_decay_step continues one run per night over
-- several calls, each its own transaction in production, with the run's clock fixed when it
-- starts. Its result must be exactly one run_decay with that clock: same strengths, the same
-- invalidations, one DECAY history row per invalidation and the same change log and revisions.
-- The one-shot run is done first and captured (psql \gset), then rolled back to a savepoint, and
-- the same data is decayed again by steps. Clock of the night: C = 2026-03-01 03:00 UTC. Each row
-- was last accessed C - k days + 2 h, so a step that used its own, later p_now (03:00 + 3 h
-- onwards) instead of the run's clock would see one more idle day and store other strengths.
begin;
set local timezone to 'UTC';
select plan(39);

delete from memory_private.lifecycle_runs;
-- one heap page per batch, so the table spans many batches and a step of 3 batches many calls
update public.memory_settings set value = 1 where name = 'decay_batch_pages';

-- 3 tenants, 240 memories idle 0..79 days (invalidated from day 59 on with base 1.0), bases 0.5-0.9
-- and 1.0, some highest / pinned (never decay), some soft-deleted or already invalid (untouched).
insert into public.devai_memories (id, owner_id, content, memory_type, namespace, priority, pinned, state, purge_at, is_valid,
                                   base_strength, strength, last_accessed_at)
select ('29000000-0000-4000-8000-' || lpad(g::text, 12, '0'))::uuid,
       ('29000000-0000-4000-8000-0000000000a' || (g % 3))::uuid,
       'decay steps memory ' || g || repeat(' padding that fills the heap page', 8),
       'semantic', 'devai/global',
       case when g % 17 = 0 then 'highest' else 'medium' end,
       g % 13 = 0,
       case when g % 19 = 0 then 'soft_deleted' else 'active' end,
       case when g % 19 = 0 then timestamptz '2026-04-01 00:00+00' end,
       g % 23 <> 0,
       case when g % 2 = 0 then 1.0 else 0.5 + (g % 5) / 10.0 end,
       case when g % 2 = 0 then 1.0 else 0.5 + (g % 5) / 10.0 end,
       timestamptz '2026-03-01 03:00+00' - make_interval(days => g % 80) + interval '2 hours'
  from generate_series(1, 240) as g;

create temporary table step_results (n serial primary key, result jsonb not null) on commit drop;

-- the reference: one run_decay with the night's clock, captured, then undone
savepoint before_runs;
select memory_private.run_decay('2026-03-01 03:00+00') - 'batches' - 'pages' as one_shot_counts \gset
select tests.lifecycle_state('29000000-') as one_shot_state \gset
rollback to savepoint before_runs;

-- night 1: the first call starts the run, later calls (other p_now) continue it
insert into step_results (result) select memory_private.run_decay_step(3, '2026-03-01 03:00+00');

-- a call that fails (here: rolled back) leaves no trace, progress included: the next call
-- redoes the same pages with the same result
select next_page as next_page_before_failed_call from memory_private.lifecycle_runs where job = 'decay' \gset
savepoint failed_call;
select memory_private.run_decay_step(3, '2026-03-01 03:01+00') - 'run' as failed_call_counts \gset
select next_page as next_page_after_failed_call from memory_private.lifecycle_runs where job = 'decay' \gset
rollback to savepoint failed_call;
insert into step_results (result) select result from tests.run_steps_until_finished('decay', 3, '2026-03-01 06:00+00') order by n;

select is((select result ->> 'action' from step_results where n = 1), 'started', 'the first call starts a run');
select is((select (result -> 'run' ->> 'clock')::timestamptz from step_results where n = 1), '2026-03-01 03:00+00'::timestamptz,
          'the run''s clock is the p_now of the call that started it');
select ok((select count(*) from step_results) >= 5, 'the run took several calls (decay_batch_pages 1, 3 batches per call)');
select ok(:next_page_after_failed_call > :next_page_before_failed_call, 'the failed call had processed pages before it was rolled back');
select is((select result - 'run' from step_results where n = 2), :'failed_call_counts'::jsonb,
          'after a failed call, the next call redoes the same pages: same counts');
select is((select (result -> 'run' ->> 'next_page')::bigint from step_results where n = 2), :next_page_after_failed_call::bigint,
          '... and reaches the same page');

select is_empty($$select n from step_results where n > 1 and result ->> 'action' <> 'continued'$$, 'every later call continues the run');
select is_empty($$select n from step_results where (result ->> 'batches')::int > 3$$, 'no call processes more than p_batches page ranges');
select is((select count(distinct result -> 'run' ->> 'clock') from step_results), 1::bigint, 'every call used the run''s clock');
select is_empty($$select a.n from step_results a join step_results b on b.n = a.n + 1
                   where (b.result -> 'run' ->> 'next_page')::bigint <= (a.result -> 'run' ->> 'next_page')::bigint$$,
                'next_page moves forward at every call');
select ok((select (result -> 'run' ->> 'next_page') = (result -> 'run' ->> 'total_pages') and (result -> 'run' ->> 'finished')::boolean
             from step_results order by n desc limit 1), 'the last call reaches total_pages and finishes the run');

-- exactly the one-shot result
select is(tests.lifecycle_state('29000000-') -> 'memories', (:'one_shot_state'::jsonb) -> 'memories',
          'same strengths, validity and state as one run_decay with the run''s clock');
select is(tests.lifecycle_state('29000000-') -> 'history', (:'one_shot_state'::jsonb) -> 'history',
          'same history rows (DECAY events, actor, snapshots)');
select is(tests.lifecycle_state('29000000-') -> 'change_log', (:'one_shot_state'::jsonb) -> 'change_log',
          'same change-log rows (delta header) with the same revisions');
select is(tests.lifecycle_state('29000000-') -> 'revisions', (:'one_shot_state'::jsonb) -> 'revisions', 'same thread revisions per tenant');
select is((select result -> 'run' -> 'totals' from step_results order by n desc limit 1), :'one_shot_counts'::jsonb,
          'the run''s totals are the one-shot counts');
select is((select jsonb_build_object('decayed', sum((result ->> 'decayed')::bigint), 'invalidated', sum((result ->> 'invalidated')::bigint))
             from step_results), :'one_shot_counts'::jsonb, 'the calls'' own counts add up to the same');
select ok((select count(*) from public.memory_history where owner_id::text like '29000000-%' and event = 'DECAY') > 10,
          'the data really has invalidations (DECAY events)');
select is_empty($$select memory_id from public.memory_history where owner_id::text like '29000000-%' and event = 'DECAY'
                   group by memory_id having count(*) <> 1$$, 'one DECAY event per invalidated memory');
select is_empty($$select memory_id, actor from public.memory_history
                   where owner_id::text like '29000000-%' and event = 'DECAY' and actor <> 'cron:decay'$$,
                'every DECAY event is by cron:decay');
select is((select count(*) from public.memory_change_log where owner_id::text like '29000000-%' and event = 'deleted'),
          (select count(*) from public.memory_history where owner_id::text like '29000000-%' and event = 'DECAY'),
          'one change-log entry per invalidation');

-- after the night's run: calls are no-ops until 20 hours after the run's clock
create temporary table after_night_1 on commit drop as select tests.lifecycle_state('29000000-') as state,
  (select to_jsonb(r) from memory_private.lifecycle_runs r where r.job = 'decay') as run;
select is(memory_private.run_decay_step(3, '2026-03-01 03:59+00') - 'run',
          '{"job": "decay", "action": "idle", "batches": 0, "decayed": 0, "invalidated": 0}'::jsonb,
          'a call after the run finished, the same night: idle');
select is(memory_private.run_decay_step(3, '2026-03-01 22:59+00') ->> 'action', 'idle', '19 h 59 min after the run''s clock: still idle');
select is(tests.lifecycle_state('29000000-'), (select state from after_night_1), 'the idle calls changed no memory, history or revision');
select is((select to_jsonb(r) from memory_private.lifecycle_runs r where r.job = 'decay'), (select run from after_night_1),
          'the idle calls did not touch the progress row');

-- night 2 starts 20 hours after the first run's clock, with its own clock
select is((memory_private.run_decay_step(3, '2026-03-01 23:00+00') -> 'run' ->> 'clock')::timestamptz, '2026-03-01 23:00+00'::timestamptz,
          '20 h after the first run: a new run starts with its own clock');
select memory_private.run_decay_step(100000, '2026-03-01 23:30+00');
select is((select finished_at is not null and next_page = total_pages from memory_private.lifecycle_runs where job = 'decay'), true,
          'the second run finishes');
select is((select count(*) from public.devai_memories m
            where m.owner_id::text like '29000000-%' and m.is_valid and m.state = 'active' and m.priority <> 'highest' and not m.pinned
              and m.strength <> public.memory_decayed_strength(m.base_strength, m.last_accessed_at, '2026-03-01 23:00+00', 0.95)),
          0::bigint, 'after night 2 every decaying memory has the strength of the second run''s clock');
select is_empty($$select memory_id from public.memory_history where owner_id::text like '29000000-%' and event = 'DECAY'
                   group by memory_id having count(*) <> 1$$, 'still one DECAY event per invalidated memory after two nights');


-- A run that spans nights, and rows inserted during a run. Night 3 (clock 03-02 23:00) does two
-- calls of one batch and stops unfinished; meanwhile a new tenant's idle memories are inserted,
-- many enough to add pages after total_pages.
select memory_private.run_decay_step(1, '2026-03-02 23:00+00');
select memory_private.run_decay_step(1, '2026-03-02 23:01+00');
select total_pages as night_3_total_pages from memory_private.lifecycle_runs where job = 'decay' \gset
do $$
begin
  -- until the free space of the existing pages is used up and the table has grown
  for i in 1..1000 loop
    insert into public.devai_memories (owner_id, content, memory_type, namespace, base_strength, strength, last_accessed_at)
    select '29000000-0000-4000-8000-0000000000b0', 'inserted during the run ' || i || '.' || g || repeat(' padding that fills the heap page', 8),
           'semantic', 'devai/global', 1.0, 1.0, timestamptz '2026-02-20 00:00+00'
      from generate_series(1, 50) as g;
    exit when exists (select from public.devai_memories
                       where owner_id = '29000000-0000-4000-8000-0000000000b0'
                         and (ctid::text::point)[0] >= (select total_pages from memory_private.lifecycle_runs where job = 'decay'));
  end loop;
end $$;
select ok((select count(*) from public.devai_memories
            where owner_id = '29000000-0000-4000-8000-0000000000b0' and (ctid::text::point)[0] >= :night_3_total_pages) > 0,
          'some of the rows inserted during the run are on pages after the run''s total_pages');

-- the next night's first call continues the unfinished run, with its clock, up to total_pages
select is(memory_private.run_decay_step(1, '2026-03-03 23:00+00') ->> 'action', 'continued',
          'the next night''s first call continues the unfinished run');
select memory_private.run_decay_step(100000, '2026-03-03 23:05+00');
select is((select jsonb_build_object('clock', clock, 'total_pages', total_pages, 'done', finished_at is not null and next_page = total_pages)
             from memory_private.lifecycle_runs where job = 'decay'),
          jsonb_build_object('clock', '2026-03-02 23:00+00'::timestamptz, 'total_pages', :night_3_total_pages, 'done', true),
          'the run ends with its own clock and total_pages, whatever was added meanwhile');
select is((select count(*) from public.devai_memories
            where owner_id = '29000000-0000-4000-8000-0000000000b0' and (ctid::text::point)[0] >= :night_3_total_pages
              and strength <> 1.0), 0::bigint,
          'rows on pages added during the run wait for the next run');

-- the run finished late, more than step_new_run_after_hours after its clock: the next call starts
-- tonight's run, which covers everything with tonight's clock
select is(memory_private.run_decay_step(100000, '2026-03-03 23:10+00') ->> 'action', 'started',
          'once the late run is done, the next call starts tonight''s run');
select is((select count(*) from public.devai_memories m
            where m.owner_id::text like '29000000-%' and m.is_valid and m.state = 'active' and m.priority <> 'highest' and not m.pinned
              and m.strength <> public.memory_decayed_strength(m.base_strength, m.last_accessed_at, '2026-03-03 23:10+00', 0.95)),
          0::bigint, 'after it, every decaying memory (the ones inserted during the last run too) has tonight''s strength');
select is((select count(*) from public.devai_memories where owner_id = '29000000-0000-4000-8000-0000000000b0' and strength = 1.0), 0::bigint,
          'the inserted idle memories are decayed by tonight''s run');

select throws_ok($$select memory_private.run_lifecycle_step('purge', 1, now())$$, '22023', null, 'only decay and ttl are step jobs');
select throws_ok($$select memory_private.run_decay_step(0)$$, '22023', null, 'p_batches must be at least 1');
select throws_ok($$select memory_private.run_decay_step(1, null)$$, '22023', null, 'p_now must not be null');

select * from finish();
rollback;
