-- Background intelligence, part 1: what the nightly consolidation, the contradiction scanner,
-- insights, consent for sensitive facts, the redactor's counts, the checkpointer and re-embedding
-- keep. Layers: CHECK lists → settings → tables → RLS and grants. The functions and schedules are
-- in 20261124700100_background_intelligence_jobs.sql. See docs/consolidation.md.
--
-- This replaces four CHECK lists of allowed values:
--   devai_memories.memory_type  + 'insight' (Theory-of-Mind insights about how the user works)
--   memory_jobs.kind            + 'nightly_consolidation', 'contradiction_check', 'insight', 'reindex'
--   memory_history.event        + 'PROPOSE', 'ACCEPT', 'REJECT', 'LAPSE' (consent decisions)
--   memory_events.op            + 'redact' (secrets the redactor replaced, per write)

-- 1. CHECK lists ---------------------------------------------------------------------------------

alter table public.devai_memories drop constraint devai_memories_memory_type_check;
alter table public.devai_memories add constraint devai_memories_memory_type_check check (
  memory_type in ('semantic', 'episodic', 'procedural', 'insight'));

alter table public.memory_jobs drop constraint memory_jobs_kind_check;
alter table public.memory_jobs add constraint memory_jobs_kind_check check (
  kind in ('extract', 'dedup', 'embed', 'consolidate', 'enrich', 'causal',
           'nightly_consolidation', 'contradiction_check', 'insight', 'reindex'));

alter table public.memory_history drop constraint memory_history_event_check;
alter table public.memory_history add constraint memory_history_event_check check (
  event in ('ADD', 'UPDATE', 'DELETE', 'MERGE', 'LINK', 'DECAY', 'TTL', 'RESTORE', 'PURGE', 'PIN', 'UNPIN', 'CONFIRM',
            'PROPOSE', 'ACCEPT', 'REJECT', 'LAPSE'));

alter table public.memory_events drop constraint memory_events_op_check;
alter table public.memory_events add constraint memory_events_op_check check (
  op in ('classify', 'search', 'create', 'update', 'merge', 'delete', 'link', 'ttl', 'extract', 'compact', 'redact'));

-- Insights are filed under their own category (memory.query serves it to the agents allowed it).
insert into public.memory_categories (name, context, rag_length, kind) values
  ('relationship_dynamic', 'rag', 5, 'system')
on conflict (name) do nothing;
insert into public.memory_agent_allowlists (agent, category) values
  ('supervisor', 'relationship_dynamic')
on conflict do nothing;

-- 2. Settings (read at every run; docs/consolidation.md#settings) ----------------------------------

insert into public.memory_settings (name, value, description) values
  ('consolidation_pairs_per_night', 50,
   'Pairs of memories the nightly consolidation shows the LLM per tenant per UTC day (the API run shares the budget).'),
  ('consolidation_tokens_per_night', 20000,
   'LLM tokens the nightly consolidation (pairs, episode summaries) may spend per tenant per UTC day.'),
  ('consolidation_pairs_per_prompt', 8,
   'Pairs judged in one LLM call (5-10).'),
  ('consolidation_pool_per_night', 500,
   'Memories whose neighbours consolidation looks at per tenant and run: recent first, then important, then often retrieved.'),
  ('consolidation_recent_hours', 72,
   'Memories created or updated within this many hours are in the consolidation pool.'),
  ('consolidation_recency_days', 90,
   'A pair is only checked when its older memory was created, updated or retrieved within this many days.'),
  ('consolidation_fingerprint_days', 14,
   'A pair checked with the same rounded similarity is not checked again for this many days.'),
  ('consolidation_forget_superseded_days', 30,
   'Memories superseded more than this many days ago and never retrieved are soft-deleted (TTL path) by consolidation.'),
  ('consolidation_window_minutes', 60,
   'The nightly jobs of all tenants are spread over this many minutes after the schedule fires.'),
  ('episode_summary_days', 7,
   'Sessions ended more than this many days ago get a summary (an LLM is needed).'),
  ('episode_compress_days', 30,
   'Sessions ended more than this many days ago get their summary compressed to one line (an LLM is needed).'),
  ('episode_sessions_per_night', 20,
   'Sessions summarised or compressed per tenant per night, at most.'),
  ('insight_interval_hours', 24,
   'At most one Theory-of-Mind insight run per tenant in this many hours.'),
  ('proposal_days', 7,
   'A sensitive fact proposed by a model waits this many days for the user''s consent, then lapses.'),
  ('reindex_per_night', 5000,
   'Memories re-embedded with the configured embedding model per tenant per UTC day.'),
  ('reindex_batch_size', 100,
   'Memories re-embedded per provider call and transaction.')
on conflict (name) do nothing;

alter table public.memory_settings
  add constraint memory_settings_background_values_range check (
    case name
      when 'consolidation_pairs_per_night'        then value >= 0 and value <= 1000 and value = trunc(value)
      when 'consolidation_tokens_per_night'       then value >= 0 and value <= 10000000 and value = trunc(value)
      when 'consolidation_pairs_per_prompt'       then value >= 5 and value <= 10 and value = trunc(value)
      when 'consolidation_pool_per_night'         then value >= 1 and value <= 20000 and value = trunc(value)
      when 'consolidation_recent_hours'           then value >= 1
      when 'consolidation_recency_days'           then value >= 1
      when 'consolidation_fingerprint_days'       then value >= 0
      when 'consolidation_forget_superseded_days' then value >= 1
      when 'consolidation_window_minutes'         then value >= 0 and value <= 720
      when 'episode_summary_days'                 then value >= 1
      when 'episode_compress_days'                then value >= 1
      when 'episode_sessions_per_night'           then value >= 0 and value <= 500 and value = trunc(value)
      when 'insight_interval_hours'               then value >= 1
      when 'proposal_days'                        then value >= 1 and value <= 365
      when 'reindex_per_night'                    then value >= 0 and value <= 1000000 and value = trunc(value)
      when 'reindex_batch_size'                   then value >= 1 and value <= 1000 and value = trunc(value)
      else true
    end);

-- 3. Tables --------------------------------------------------------------------------------------

-- One row per consolidation run of a tenant (nightly job or POST memory/consolidate; a dry run
-- writes none). What today's runs spent is what the night's caps have left. At most one run of a
-- tenant is under way (finished_at null) at a time.
create table public.memory_consolidation_runs (
  id            uuid primary key default gen_random_uuid(),
  owner_id      uuid not null default auth.uid(),
  trigger       text not null,
  job_id        uuid,
  started_at    timestamptz not null default now(),
  finished_at   timestamptz,
  pairs_checked integer not null default 0,
  tokens_used   integer not null default 0,
  result        jsonb,
  constraint memory_consolidation_runs_trigger_check check (trigger in ('nightly', 'api')),
  constraint memory_consolidation_runs_counts_nonnegative check (pairs_checked >= 0 and tokens_used >= 0),
  constraint memory_consolidation_runs_result_is_object check (result is null or jsonb_typeof(result) = 'object')
);
create unique index memory_consolidation_runs_one_under_way on public.memory_consolidation_runs (owner_id) where finished_at is null;
create index memory_consolidation_runs_owner_started on public.memory_consolidation_runs (owner_id, started_at desc);
comment on table public.memory_consolidation_runs is
  'Consolidation runs per tenant (nightly or on demand): pairs checked and LLM tokens spent, the result. See docs/consolidation.md.';

-- Pairs already looked at: consolidation's fingerprints (same pair, same similarity rounded to two
-- decimals: not checked again for consolidation_fingerprint_days) and the write-time contradiction
-- judge's cache (a pair is judged once). id_a < id_b. No foreign keys: a row outlives its memories
-- (consolidation deletes its old fingerprints).
create table public.memory_pair_checks (
  owner_id   uuid not null default auth.uid(),
  kind       text not null,
  id_a       uuid not null,
  id_b       uuid not null,
  score      numeric(3, 2) not null,
  verdict    text not null,
  checked_at timestamptz not null default now(),
  primary key (owner_id, kind, id_a, id_b),
  constraint memory_pair_checks_kind_check check (kind in ('consolidation', 'contradiction')),
  constraint memory_pair_checks_ordered check (id_a < id_b),
  constraint memory_pair_checks_score_range check (score >= 0 and score <= 1),
  constraint memory_pair_checks_verdict_check check (verdict in ('verbatim', 'same', 'refines', 'contradiction', 'different'))
);
comment on table public.memory_pair_checks is
  'Pairs of memories already checked (consolidation fingerprints, the write-time contradiction judge''s cache). See docs/consolidation.md#pairs.';

-- Contradictions between two memories of a tenant, found by the nightly consolidation or by the
-- write-time check, open until the user resolves them (docs/consolidation.md#contradictions).
-- memory_a is the older memory, memory_b the newer. One row per pair, whichever order.
create table public.memory_contradictions (
  id          uuid primary key default gen_random_uuid(),
  owner_id    uuid not null default auth.uid(),
  memory_a    uuid not null,
  memory_b    uuid not null,
  detected_at timestamptz not null default now(),
  detected_by text not null,
  reason      text,
  resolution  text,
  resolved_at timestamptz,
  resolved_by text,
  note        text,
  merged_id   uuid,
  constraint memory_contradictions_a_fkey foreign key (memory_a, owner_id)
    references public.devai_memories (id, owner_id) on delete cascade,
  constraint memory_contradictions_b_fkey foreign key (memory_b, owner_id)
    references public.devai_memories (id, owner_id) on delete cascade,
  constraint memory_contradictions_merged_fkey foreign key (merged_id, owner_id)
    references public.devai_memories (id, owner_id) on delete set null (merged_id),
  constraint memory_contradictions_two_memories check (memory_a <> memory_b),
  constraint memory_contradictions_detected_by_check check (detected_by in ('consolidation', 'write')),
  constraint memory_contradictions_resolution_check check (
    resolution is null or resolution in ('a_wins', 'b_wins', 'both_valid', 'merged')),
  constraint memory_contradictions_resolved_together check ((resolution is null) = (resolved_at is null)),
  constraint memory_contradictions_merged_only_when_merged check (merged_id is null or resolution = 'merged'),
  constraint memory_contradictions_reason_length check (reason is null or char_length(reason) <= 1000),
  constraint memory_contradictions_note_length check (note is null or char_length(note) <= 1000)
);
create unique index memory_contradictions_pair
  on public.memory_contradictions (owner_id, least(memory_a, memory_b), greatest(memory_a, memory_b));
create index memory_contradictions_open on public.memory_contradictions (owner_id, detected_at desc) where resolution is null;
create index memory_contradictions_a on public.memory_contradictions (memory_a, owner_id);
create index memory_contradictions_b on public.memory_contradictions (memory_b, owner_id);
create index memory_contradictions_merged on public.memory_contradictions (merged_id, owner_id) where merged_id is not null;
comment on table public.memory_contradictions is
  'Contradictions between two memories (a older, b newer), open until resolved: a_wins | b_wins | both_valid | merged. See docs/consolidation.md#contradictions.';

-- Sensitive facts (the user's preferred name, pronouns, city, language, employer) a model proposed:
-- pending until the user accepts or rejects them, lapsed after proposal_days. Every decision is a
-- history row (PROPOSE, ACCEPT, REJECT, LAPSE) under the proposal's id, written by a trigger.
create table public.memory_proposals (
  id          uuid primary key default gen_random_uuid(),
  owner_id    uuid not null default auth.uid(),
  field       text not null,
  content     text not null,
  memory_type text not null default 'semantic',
  namespace   text not null,
  importance  smallint not null default 3,
  priority    text not null default 'medium',
  source      text not null default 'discovery',
  category    text,
  session_id  text,
  thread_id   text,
  origin      jsonb not null default '{}'::jsonb,
  status      text not null default 'pending',
  created_at  timestamptz not null default now(),
  expires_at  timestamptz not null,
  decided_at  timestamptz,
  decided_by  text,
  memory_id   uuid,
  constraint memory_proposals_memory_fkey foreign key (memory_id, owner_id)
    references public.devai_memories (id, owner_id) on delete set null (memory_id),
  constraint memory_proposals_field_check check (field in ('preferred_name', 'pronouns', 'city', 'language', 'employer')),
  constraint memory_proposals_content_length check (char_length(btrim(content)) between 1 and 2000),
  constraint memory_proposals_memory_type_check check (memory_type in ('semantic', 'episodic', 'procedural')),
  constraint memory_proposals_priority_check check (priority in ('high', 'medium', 'low')),
  constraint memory_proposals_importance_range check (importance between 1 and 5),
  constraint memory_proposals_status_check check (status in ('pending', 'accepted', 'rejected', 'lapsed')),
  constraint memory_proposals_decided_together check ((status = 'pending') = (decided_at is null)),
  constraint memory_proposals_origin_is_object check (jsonb_typeof(origin) = 'object')
);
create unique index memory_proposals_pending_content
  on public.memory_proposals (owner_id, md5(lower(btrim(content)))) where status = 'pending';
create index memory_proposals_owner_created on public.memory_proposals (owner_id, created_at desc);
create index memory_proposals_pending_expiry on public.memory_proposals (expires_at) where status = 'pending';
create index memory_proposals_memory on public.memory_proposals (memory_id, owner_id) where memory_id is not null;
comment on table public.memory_proposals is
  'Sensitive facts a model proposed, waiting for the user''s consent (pending → accepted | rejected | lapsed). See docs/consolidation.md#consent.';

-- The agent's persistent checkpointer: one state per (tenant, thread), versioned for optimistic
-- concurrency (a write names the version it read; a stale one is refused).
create table public.supervisor_checkpoints (
  id         uuid primary key default gen_random_uuid(),
  owner_id   uuid not null default auth.uid(),
  thread_id  text not null,
  version    bigint not null default 1,
  state      jsonb not null,
  size_bytes integer not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint supervisor_checkpoints_unique_thread unique (owner_id, thread_id),
  constraint supervisor_checkpoints_thread_id_shape check (char_length(thread_id) between 1 and 200),
  constraint supervisor_checkpoints_version_positive check (version >= 1),
  constraint supervisor_checkpoints_state_is_object check (jsonb_typeof(state) = 'object'),
  constraint supervisor_checkpoints_size_nonnegative check (size_bytes >= 0)
);
create index supervisor_checkpoints_updated on public.supervisor_checkpoints (updated_at desc);
comment on table public.supervisor_checkpoints is
  'The agent''s checkpoints: one JSON state per (tenant, thread), with a version for optimistic concurrency. See docs/consolidation.md#checkpoints.';

create trigger supervisor_checkpoints_touch_updated_at
  before update on public.supervisor_checkpoints
  for each row execute function memory_private.touch_updated_at();

-- Episode compression: a session's summary (a memory retrieval finds) and its one-line form.
alter table public.memory_sessions
  add column summary           text,
  add column summary_memory_id uuid,
  add column summarised_at     timestamptz,
  add column compressed        text,
  add column compressed_at     timestamptz,
  add constraint memory_sessions_summary_length check (summary is null or char_length(summary) between 1 and 2000),
  add constraint memory_sessions_compressed_length check (compressed is null or char_length(compressed) between 1 and 200),
  add constraint memory_sessions_summary_memory_fkey foreign key (summary_memory_id, owner_id)
    references public.devai_memories (id, owner_id) on delete set null (summary_memory_id);
create index memory_sessions_summary_memory on public.memory_sessions (summary_memory_id, owner_id) where summary_memory_id is not null;
create index memory_sessions_to_compress on public.memory_sessions (owner_id, ended_at) where ended_at is not null and compressed is null;

-- 4. RLS and grants --------------------------------------------------------------------------------

alter table public.memory_consolidation_runs enable row level security;
alter table public.memory_pair_checks enable row level security;
alter table public.memory_contradictions enable row level security;
alter table public.memory_proposals enable row level security;
alter table public.supervisor_checkpoints enable row level security;

revoke all on table public.memory_consolidation_runs, public.memory_pair_checks, public.memory_contradictions,
  public.memory_proposals, public.supervisor_checkpoints from anon, authenticated, public;
grant all on table public.memory_consolidation_runs, public.memory_pair_checks, public.memory_contradictions,
  public.memory_proposals, public.supervisor_checkpoints to service_role;

-- Consolidation runs: the worker (as the tenant) and the API open, finish and read a tenant's runs.
grant select on public.memory_consolidation_runs to authenticated;
grant insert (owner_id, trigger, job_id) on public.memory_consolidation_runs to authenticated;
grant update (finished_at, pairs_checked, tokens_used, result) on public.memory_consolidation_runs to authenticated;
create policy "Owners can read their consolidation runs" on public.memory_consolidation_runs
  for select to authenticated using (owner_id = (select auth.uid()));
create policy "Owners can start consolidation runs" on public.memory_consolidation_runs
  for insert to authenticated with check (owner_id = (select auth.uid()));
create policy "Owners can finish their consolidation runs" on public.memory_consolidation_runs
  for update to authenticated
  using (owner_id = (select auth.uid())) with check (owner_id = (select auth.uid()));

-- Pair checks: written and aged out by the tenant's own consolidation and contradiction checks.
grant select, delete on public.memory_pair_checks to authenticated;
grant insert (owner_id, kind, id_a, id_b, score, verdict, checked_at) on public.memory_pair_checks to authenticated;
grant update (score, verdict, checked_at) on public.memory_pair_checks to authenticated;
create policy "Owners can read their pair checks" on public.memory_pair_checks
  for select to authenticated using (owner_id = (select auth.uid()));
create policy "Owners can record pair checks" on public.memory_pair_checks
  for insert to authenticated with check (owner_id = (select auth.uid()));
create policy "Owners can update their pair checks" on public.memory_pair_checks
  for update to authenticated
  using (owner_id = (select auth.uid())) with check (owner_id = (select auth.uid()));
create policy "Owners can age out their pair checks" on public.memory_pair_checks
  for delete to authenticated using (owner_id = (select auth.uid()));

-- Contradictions: detected and resolved as the tenant; the pair never changes after detection.
grant select on public.memory_contradictions to authenticated;
grant insert (owner_id, memory_a, memory_b, detected_by, reason) on public.memory_contradictions to authenticated;
grant update (resolution, resolved_at, resolved_by, note, merged_id) on public.memory_contradictions to authenticated;
create policy "Owners can read their contradictions" on public.memory_contradictions
  for select to authenticated using (owner_id = (select auth.uid()));
create policy "Owners can record contradictions" on public.memory_contradictions
  for insert to authenticated with check (owner_id = (select auth.uid()));
create policy "Owners can resolve their contradictions" on public.memory_contradictions
  for update to authenticated
  using (owner_id = (select auth.uid())) with check (owner_id = (select auth.uid()));

-- Proposals: queued by the tenant's writers, decided by the tenant; what was proposed never changes.
grant select on public.memory_proposals to authenticated;
grant insert (owner_id, field, content, memory_type, namespace, importance, priority, source, category, session_id,
              thread_id, origin, expires_at)
  on public.memory_proposals to authenticated;
grant update (status, decided_at, decided_by, memory_id) on public.memory_proposals to authenticated;
create policy "Owners can read their proposals" on public.memory_proposals
  for select to authenticated using (owner_id = (select auth.uid()));
create policy "Owners can queue proposals" on public.memory_proposals
  for insert to authenticated with check (owner_id = (select auth.uid()) and status = 'pending');
create policy "Owners can decide their proposals" on public.memory_proposals
  for update to authenticated
  using (owner_id = (select auth.uid())) with check (owner_id = (select auth.uid()));

-- Checkpoints: the tenant's own, read and written whole.
grant select on public.supervisor_checkpoints to authenticated;
grant insert (owner_id, thread_id, state, size_bytes) on public.supervisor_checkpoints to authenticated;
grant update (state, version, size_bytes) on public.supervisor_checkpoints to authenticated;
create policy "Owners can read their checkpoints" on public.supervisor_checkpoints
  for select to authenticated using (owner_id = (select auth.uid()));
create policy "Owners can save checkpoints" on public.supervisor_checkpoints
  for insert to authenticated with check (owner_id = (select auth.uid()));
create policy "Owners can update their checkpoints" on public.supervisor_checkpoints
  for update to authenticated
  using (owner_id = (select auth.uid())) with check (owner_id = (select auth.uid()));

-- Sessions: consolidation writes the summary columns as the tenant.
grant update (summary, summary_memory_id, summarised_at, compressed, compressed_at) on public.memory_sessions to authenticated;
