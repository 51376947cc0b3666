-- A compaction summary stays on the thread its session's first compaction named (README
-- "POST memory-compact", as a session's episodes do): memory-compact kept one summary a session id
-- whatever the thread, so a second thread reusing the session id had its conversation compacted
-- with the first thread's summary as the prior one, and the merged summary, shown to it and stored
-- over the first thread's (tests/compaction_threads.test.ts). The summary now records its thread;
-- a compaction naming another one is a 409 that writes nothing. A summary stored before this
-- migration records none, and takes the thread of its next compaction that names one.
alter table public.memory_session_summaries
  add column thread_id text,
  add constraint memory_session_summaries_thread_id_shape
    check (thread_id is null or char_length(thread_id) between 1 and 200);

comment on column public.memory_session_summaries.thread_id is
  'The thread the session''s compactions name (the first that named one); null: none named yet.';

-- The tenant writes its summaries (memory-compact runs as the tenant, RLS applies).
grant insert (thread_id) on public.memory_session_summaries to authenticated;
grant update (thread_id) on public.memory_session_summaries to authenticated;
