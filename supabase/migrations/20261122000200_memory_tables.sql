-- Layer 2: tables. Every column of the seed's devai_memories, plus what real use needs
-- (tenant, lifecycle, model bookkeeping, hybrid search, idempotent decay).

-- sha256 of the lower-cased, whitespace-collapsed content: the exact-duplicate fast path.
-- Declared immutable although convert_to is only stable: the database encoding (UTF8) never
-- changes for a database, so the result is fixed. Used by the generated content_hash column.
create or replace function memory_private.content_hash(p_content text)
returns text
language sql
immutable
parallel safe
set search_path = ''
as $$
  select encode(sha256(convert_to(lower(btrim(regexp_replace(p_content, '\s+', ' ', 'g'))), 'UTF8')), 'hex')
$$;
grant execute on function memory_private.content_hash(text) to authenticated, service_role;

create table public.devai_memories (
  -- seed columns
  id               uuid primary key default gen_random_uuid(),
  content          text not null,
  embedding        extensions.vector(512),
  memory_type      text not null,
  namespace        text not null,
  priority         text not null default 'medium',
  source           text,
  strength         double precision not null default 1.0,
  access_count     integer not null default 0,
  last_accessed_at timestamptz not null default now(),
  session_id       text,
  is_valid         boolean not null default true,
  superseded_by    uuid,
  created_at       timestamptz not null default now(),
  updated_at       timestamptz not null default now(),
  -- additions (ARCHITECTURE.md)
  owner_id         uuid not null default auth.uid(),
  importance       smallint not null default 3,
  pinned           boolean not null default false,
  state            text not null default 'active',
  purge_at         timestamptz,
  embedding_model  text,
  -- Strength right after the last access; decay derives strength from it, so re-running the
  -- decay job (or running it late) never compounds: strength = base_strength * 0.95^days.
  base_strength    double precision not null default 1.0,
  metadata         jsonb not null default '{}'::jsonb,
  content_hash     text generated always as (memory_private.content_hash(content)) stored,
  fts              tsvector generated always as (to_tsvector('english'::regconfig, content)) stored,

  constraint devai_memories_content_length check (char_length(btrim(content)) between 1 and 8000),
  constraint devai_memories_memory_type_check check (memory_type in ('semantic', 'episodic', 'procedural')),
  constraint devai_memories_priority_check check (priority in ('highest', 'high', 'medium', 'low')),
  constraint devai_memories_source_check check (
    source is null or source in ('user_stated', 'error_resolution', 'pattern', 'discovery', 'correction', 'compaction', 'import')),
  constraint devai_memories_state_check check (state in ('active', 'soft_deleted')),
  constraint devai_memories_purge_at_only_when_soft_deleted check ((state = 'soft_deleted') = (purge_at is not null)),
  constraint devai_memories_strength_range check (strength >= 0 and strength <= 1),
  constraint devai_memories_base_strength_range check (base_strength >= 0 and base_strength <= 1),
  constraint devai_memories_access_count_nonnegative check (access_count >= 0),
  constraint devai_memories_importance_range check (importance between 1 and 5),
  -- Slash-separated segments, no empty, '.' or '..' segment, no control characters.
  constraint devai_memories_namespace_shape check (
    char_length(namespace) between 1 and 256
    and namespace !~ '[[:cntrl:]]'
    and namespace ~ '^[^/]+(/[^/]+)*$'
    and namespace !~ '(^|/)\.{1,2}(/|$)'),
  constraint devai_memories_embedding_has_model check (embedding is null or embedding_model is not null),
  constraint devai_memories_metadata_is_object check (jsonb_typeof(metadata) = 'object'),
  constraint devai_memories_not_superseded_by_itself check (superseded_by is distinct from id),
  -- Lets relations reference (id, owner_id) so an edge can never join two tenants.
  constraint devai_memories_id_owner_key unique (id, owner_id)
);

-- Composite key: a memory can only be superseded by one of the same tenant, and the check cannot
-- be used to probe whether another tenant's id exists.
alter table public.devai_memories
  add constraint devai_memories_superseded_by_fkey
  foreign key (superseded_by, owner_id) references public.devai_memories (id, owner_id)
  on delete set null (superseded_by);

comment on table public.devai_memories is
  'Long-term memories of the coding agent, one row per fact/episode/procedure, scoped by owner_id (tenant) and namespace.';
comment on column public.devai_memories.base_strength is
  'Strength right after the last access; decay sets strength = base_strength * 0.95^(days since last access), so it never compounds.';
comment on column public.devai_memories.content_hash is
  'sha256 of the lower-cased, whitespace-normalised content: the exact-duplicate fast path.';

-- HNSW cosine index (seed: m=16, ef_construction=64).
create index devai_memories_embedding_hnsw on public.devai_memories
  using hnsw (embedding extensions.vector_cosine_ops) with (m = 16, ef_construction = 64);
-- Owner + namespace prefix + validity: serves scoped retrieval when the filter is selective.
create index devai_memories_owner_namespace on public.devai_memories (owner_id, namespace text_pattern_ops)
  where is_valid and state = 'active';
create index devai_memories_owner_created on public.devai_memories (owner_id, created_at desc, id desc);
create index devai_memories_owner_hash on public.devai_memories (owner_id, content_hash);
create index devai_memories_superseded_by on public.devai_memories (superseded_by, owner_id);
create index devai_memories_purge_at on public.devai_memories (purge_at) where state = 'soft_deleted';
create index devai_memories_last_accessed on public.devai_memories (last_accessed_at)
  where is_valid and state = 'active';
create index devai_memories_fts on public.devai_memories using gin (fts);

-- Seed 001 §2: lightweight graph edges between memories of one tenant.
create table public.memory_relations (
  id            uuid primary key default gen_random_uuid(),
  owner_id      uuid not null default auth.uid(),
  from_id       uuid not null,
  to_id         uuid not null,
  relation_type text not null default 'related_to',
  strength      real not null,
  created_at    timestamptz not null default now(),
  constraint memory_relations_from_fkey foreign key (from_id, owner_id)
    references public.devai_memories (id, owner_id) on delete cascade,
  constraint memory_relations_to_fkey foreign key (to_id, owner_id)
    references public.devai_memories (id, owner_id) on delete cascade,
  constraint memory_relations_no_self_edge check (from_id <> to_id),
  constraint memory_relations_strength_range check (strength >= 0 and strength <= 1),
  constraint memory_relations_type_check check (
    relation_type in ('related_to', 'supersedes', 'derived_from', 'contradicts')),
  constraint memory_relations_unique_edge unique (from_id, to_id, relation_type)
);
create index memory_relations_from on public.memory_relations (from_id, owner_id);
create index memory_relations_to on public.memory_relations (to_id, owner_id);

-- Seed 001 §8: audit log of every write. No foreign key: history outlives purged memories.
create table public.memory_history (
  id          uuid primary key default gen_random_uuid(),
  owner_id    uuid not null,
  memory_id   uuid not null,
  event       text not null,
  old_ref     uuid,
  new_ref     uuid,
  actor       text,
  old_content text,
  new_content text,
  meta        jsonb not null default '{}'::jsonb,
  ts          timestamptz not null default now(),
  constraint memory_history_event_check check (
    event in ('ADD', 'UPDATE', 'DELETE', 'MERGE', 'LINK', 'DECAY', 'TTL', 'RESTORE', 'PURGE'))
);
create index memory_history_memory_ts on public.memory_history (memory_id, ts desc);
create index memory_history_owner_ts on public.memory_history (owner_id, ts desc);

-- Seed 001 §1: per-thread revision and the change log the delta header reads.
create table public.memory_thread_revisions (
  owner_id   uuid not null,
  thread_id  text not null,
  revision   bigint not null default 0,
  updated_at timestamptz not null default now(),
  primary key (owner_id, thread_id),
  constraint memory_thread_revisions_thread_id_shape check (char_length(thread_id) between 1 and 200)
);

create table public.memory_change_log (
  id        uuid primary key default gen_random_uuid(),
  owner_id  uuid not null,
  thread_id text not null,
  revision  bigint not null,
  memory_id uuid not null,
  event     text not null,
  summary   text,
  meta      jsonb not null default '{}'::jsonb,
  ts        timestamptz not null default now(),
  constraint memory_change_log_event_check check (
    event in ('created', 'updated', 'merged', 'deleted', 'soft_deleted', 'restored')),
  constraint memory_change_log_thread_fkey foreign key (owner_id, thread_id)
    references public.memory_thread_revisions (owner_id, thread_id) on delete cascade
);
create index memory_change_log_thread_rev on public.memory_change_log (owner_id, thread_id, revision desc);

-- Durable work queue: extraction, dedup and compaction follow-ups are rows before any 202.
create table public.memory_jobs (
  id              uuid primary key default gen_random_uuid(),
  owner_id        uuid not null default auth.uid(),
  kind            text not null,
  status          text not null default 'queued',
  payload         jsonb not null default '{}'::jsonb,
  idempotency_key text not null,
  attempts        integer not null default 0,
  max_attempts    integer not null default 5,
  run_after       timestamptz not null default now(),
  locked_until    timestamptz,
  locked_by       text,
  last_error      text,
  result          jsonb,
  created_at      timestamptz not null default now(),
  updated_at      timestamptz not null default now(),
  finished_at     timestamptz,
  constraint memory_jobs_kind_check check (kind in ('extract', 'dedup')),
  constraint memory_jobs_status_check check (status in ('queued', 'running', 'done', 'dead')),
  constraint memory_jobs_attempts_range check (attempts >= 0 and max_attempts between 1 and 50),
  constraint memory_jobs_idempotency_key_shape check (char_length(idempotency_key) between 1 and 300),
  constraint memory_jobs_unique_key unique (owner_id, kind, idempotency_key)
);
create index memory_jobs_claimable on public.memory_jobs (run_after) where status = 'queued';
create index memory_jobs_running_lease on public.memory_jobs (locked_until) where status = 'running';

-- Layer 2 of the seed: the running summary of a long session, merged at each compaction.
create table public.memory_session_summaries (
  id          uuid primary key default gen_random_uuid(),
  owner_id    uuid not null default auth.uid(),
  session_id  text not null,
  summary     text not null,
  token_count integer not null default 0,
  compactions integer not null default 1,
  created_at  timestamptz not null default now(),
  updated_at  timestamptz not null default now(),
  constraint memory_session_summaries_unique_session unique (owner_id, session_id),
  constraint memory_session_summaries_session_id_shape check (char_length(session_id) between 1 and 200)
);

-- Seed 001 §14: operational events by node and operation.
create table public.memory_events (
  id        uuid primary key default gen_random_uuid(),
  owner_id  uuid not null default auth.uid(),
  thread_id text,
  node      text not null,
  op        text not null,
  status    text not null,
  memory_id uuid,
  category  text,
  sim       real,
  meta      jsonb not null default '{}'::jsonb,
  ts        timestamptz not null default now(),
  constraint memory_events_node_check check (node in ('hotpath', 'context', 'episodic', 'worker')),
  constraint memory_events_op_check check (
    op in ('classify', 'search', 'create', 'update', 'merge', 'delete', 'link', 'ttl', 'extract', 'compact')),
  constraint memory_events_status_check check (status in ('ok', 'error', 'skipped'))
);
create index memory_events_owner_ts on public.memory_events (owner_id, ts desc);
create index memory_events_node_ts on public.memory_events (node, ts desc);
