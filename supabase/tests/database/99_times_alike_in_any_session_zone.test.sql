-- What the database stores and decides does not depend on the session's TimeZone (Supabase's is
-- UTC by default; `alter database ... set timezone`, a pooler or a client may set another):
-- history meta gives its times as a UTC session would, and the nightly consolidation counts its
-- days in 86,400 seconds across a daylight-saving change, as the job that writes the summaries does.
begin;
select plan(4);

-- Pacific/Chatham is UTC+13:45 in November.
set local timezone to 'Pacific/Chatham';
insert into public.devai_memories (id, owner_id, content, memory_type, namespace, valid_from) values
  ('79000000-0000-4000-8000-000000000001', '79000000-0000-4000-8000-00000000000a', 'ci runs on node 22', 'semantic', 'devai/global', '2026-11-01T00:30:00Z'),
  ('79000000-0000-4000-8000-000000000002', '79000000-0000-4000-8000-00000000000a', 'ci runs on node 20', 'semantic', 'devai/global', '2026-11-01T00:30:00Z');
insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength, valid_until) values
  ('79000000-0000-4000-8000-00000000000a', '79000000-0000-4000-8000-000000000001', '79000000-0000-4000-8000-000000000002', 'related_to', 0.8, '2026-12-01T08:00:00Z');

set local timezone to 'UTC';
select is((select h.meta ->> 'created_at' from public.memory_history h
            where h.memory_id = '79000000-0000-4000-8000-000000000001' and h.event = 'ADD'),
          (select to_jsonb(m.created_at) #>> '{}' from public.devai_memories m where m.id = '79000000-0000-4000-8000-000000000001'),
          'a history row written in another zone gives created_at as in UTC');
select is((select h.meta ->> 'valid_from' from public.memory_history h
            where h.memory_id = '79000000-0000-4000-8000-000000000001' and h.event = 'ADD'),
          '2026-11-01T00:30:00+00:00', 'and valid_from');
select is((select h.meta ->> 'valid_until' from public.memory_history h
            where h.memory_id = '79000000-0000-4000-8000-000000000001' and h.event = 'LINK'),
          '2026-12-01T08:00:00+00:00', 'a relation''s history row gives valid_until as in UTC');

-- America/St_Johns went back from -02:30 to -03:30 on 2026-11-01. A session that ended 7 days
-- and 30 minutes (of 86,400 s each) before the night is due for its summary (episode_summary_days 7);
-- 7 calendar days back in that zone is 7 days and an hour.
set local timezone to 'America/St_Johns';
update public.memory_settings set value = 7 where name = 'episode_summary_days';
insert into public.memory_sessions (owner_id, session_id, namespace, episode_count, ended_at, end_reason) values
  ('79000000-0000-4000-8000-00000000000b', 's-dst', 'devai/user/episodes', 3,
   '2026-10-29T06:15:00Z', 'idle');
create temporary table queued on commit drop as select memory_private.enqueue_nightly_consolidation('2026-11-05T06:45:00Z') as r;
select is((select count(*)::int from public.memory_jobs
            where owner_id = '79000000-0000-4000-8000-00000000000b' and kind = 'nightly_consolidation'),
          1, 'a session due by 7 × 86,400 s is queued for the night in a zone that changed its clocks that week');

select * from finish();
rollback;
