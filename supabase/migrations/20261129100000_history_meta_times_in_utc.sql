-- History rows' meta gives its times in UTC, whatever the writer's session time zone.
--
-- memory_private.history_snapshot (every memory history row's meta: created_at, valid_from,
-- valid_until) and memory_private.record_relation_write (a LINK/DELETE row's valid_until) put
-- timestamptz values into jsonb, which renders them in the session's TimeZone. The database's zone
-- is UTC by default on Supabase, but `alter database postgres set timezone = ...`, a pooler or a
-- client session may set another: then the meta stored, and shown by GET memory/{id}/history and
-- the export, read '2026-11-28T14:41:16.994536+13:45' (Pacific/Chatham) beside the
-- '...+00:00' of every row written in UTC, the instant the same, the text not, so readers that sort
-- or compare the text were wrong. history_snapshot was also declared immutable while its result
-- depended on a setting. Both now run with TimeZone = UTC, so meta reads as it always did on a UTC
-- database ('+00:00'); rows already written keep their text. The SET clause costs about 3 µs a
-- call (100k history_snapshot calls: 1.30 s -> 1.61 s), small beside the history row's insert.
alter function memory_private.history_snapshot(public.devai_memories) set timezone to 'UTC';
alter function memory_private.record_relation_write() set timezone to 'UTC';
