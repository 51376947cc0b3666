-- A compaction sent again (its answer lost: a client's timeout, a dropped connection) is answered
-- from the summary as it was before that compaction, not merged into its own result
-- (README "POST memory-compact"). The running summary already held the part the compaction
-- replaced, and the retry merged the same part into it again: the extractive summary listed the
-- part's lines twice, then three times, each "Earlier:" nesting the one before it, the model was
-- shown the part twice, and the compaction was counted twice. The summary now records the digest
-- of the part its last compaction replaced (the one the dedup jobs are keyed by) and the summary
-- before it; a compaction of the same part starts again from that one, and counts once.
alter table public.memory_session_summaries
  add column chunk_hash text,
  add column prior_summary text,
  add constraint memory_session_summaries_chunk_hash_shape
    check (chunk_hash is null or chunk_hash ~ '^[0-9a-f]{64}$');

comment on column public.memory_session_summaries.chunk_hash is
  'sha256 of the part of the conversation the last compaction replaced (its JSON); null: none recorded yet.';
comment on column public.memory_session_summaries.prior_summary is
  'The summary before the last compaction (null: it had none): a retry of that compaction starts from it.';

-- The tenant writes its summaries (memory-compact runs as the tenant, RLS applies).
grant insert (chunk_hash, prior_summary) on public.memory_session_summaries to authenticated;
grant update (chunk_hash, prior_summary) on public.memory_session_summaries to authenticated;
