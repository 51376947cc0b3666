-- Decay is idempotent (ARCHITECTURE.md "Decay must not compound"): strength = base_strength *
-- 0.95 ^ (full days since last access), whatever the number, timing or gaps of the runs.
-- Time is shifted through run_decay's p_now; t0 = 2026-01-01 00:00 UTC is the last access.
begin;
set local timezone to 'UTC';
select plan(16);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace, base_strength, strength, last_accessed_at) values
  ('20000000-0000-4000-8000-000000000001', '20000000-0000-4000-8000-0000000000aa', 'decay A: on-time runs', 'semantic', 'devai/global', 1.0, 1.0, '2026-01-01 00:00+00'),
  ('20000000-0000-4000-8000-000000000002', '20000000-0000-4000-8000-0000000000aa', 'decay B: base 0.8', 'semantic', 'devai/global', 0.8, 0.8, '2026-01-01 00:00+00'),
  ('20000000-0000-4000-8000-000000000003', '20000000-0000-4000-8000-0000000000aa', 'decay C: accessed later', 'semantic', 'devai/global', 1.0, 1.0, '2026-01-02 12:00+00');

create temporary table strengths on commit drop as
  select id, strength from public.devai_memories where false;

-- day 1
select is(memory_private.run_decay('2026-01-02 00:00+00') ->> 'decayed', '2', 'day 1: the two memories idle for a full day decay; C (accessed later) is untouched');
select is(round((select strength from public.devai_memories where id = '20000000-0000-4000-8000-000000000001')::numeric, 12),
          round(0.95::numeric, 12), 'day 1: strength = 1.0 * 0.95^1');
select is(round((select strength from public.devai_memories where id = '20000000-0000-4000-8000-000000000002')::numeric, 12),
          round((0.8 * 0.95)::numeric, 12), 'day 1: strength = base_strength 0.8 * 0.95^1');
select is((select base_strength from public.devai_memories where id = '20000000-0000-4000-8000-000000000001'), 1.0::double precision,
          'decay never changes base_strength');

-- day 2 skipped (missed night), day 3 run twice
select is(memory_private.run_decay('2026-01-04 03:00+00') ->> 'decayed', '3', 'day 3 after a missed day 2: every idle memory changes once');
insert into strengths select id, strength from public.devai_memories where id::text like '20000000-%';
select is(memory_private.run_decay('2026-01-04 03:00+00') ->> 'decayed', '0', 'day 3 run twice: the second run writes nothing');
select results_eq(
  $$select id, strength from public.devai_memories where id::text like '20000000-%' order by id$$,
  $$select id, strength from strengths order by id$$,
  'day 3 run twice: same strengths as one run');
select is(round((select strength from public.devai_memories where id = '20000000-0000-4000-8000-000000000001')::numeric, 12),
          round(power(0.95::numeric, 3), 12), 'day 3: strength = 0.95^3 (not the seed''s compounding 0.95^6)');
select isnt(round((select strength from public.devai_memories where id = '20000000-0000-4000-8000-000000000001')::numeric, 12),
          round(power(0.95::numeric, 6), 12), 'day 3: no compounding');
select is(round((select strength from public.devai_memories where id = '20000000-0000-4000-8000-000000000003')::numeric, 12),
          round(power(0.95::numeric, 1), 12), 'C, last accessed 1.6 days before: one full day of decay');

-- a late run (day 3, 23:59) still counts 3 full days; day 4 counts 4
select is(memory_private.run_decay('2026-01-04 23:59+00') ->> 'decayed', '1', 'late run on day 3: only C crossed a day boundary');
select is(round((select strength from public.devai_memories where id = '20000000-0000-4000-8000-000000000001')::numeric, 12),
          round(power(0.95::numeric, 3), 12), 'late run: still 0.95^3');
select memory_private.run_decay('2026-01-05 00:00+00');
select is(round((select strength from public.devai_memories where id = '20000000-0000-4000-8000-000000000001')::numeric, 12),
          round(power(0.95::numeric, 4), 12), 'day 4: 0.95^4');

-- running "on time" every day gives the same as jumping straight to the day
select memory_private.run_decay(d) from generate_series('2026-01-06 00:00+00'::timestamptz, '2026-01-11 00:00+00', interval '1 day') as d;
select is(round((select strength from public.devai_memories where id = '20000000-0000-4000-8000-000000000001')::numeric, 12),
          round(power(0.95::numeric, 10), 12), 'ten nightly runs: 0.95^10, the same as one run on day 10');

-- the inlined expression in decay_page_range agrees with public.memory_decayed_strength
select is(
  (select count(*) from public.devai_memories m
    where m.id::text like '20000000-%'
      and m.strength <> public.memory_decayed_strength(m.base_strength, m.last_accessed_at, '2026-01-11 00:00+00', 0.95)),
  0::bigint, 'stored strength equals public.memory_decayed_strength for every row');

-- plain decay is bookkeeping, not an audited write
select is((select count(*) from public.memory_history where memory_id::text like '20000000-%' and event <> 'ADD'),
          0::bigint, 'decay above the prune threshold writes no history rows');

select * from finish();
rollback;
