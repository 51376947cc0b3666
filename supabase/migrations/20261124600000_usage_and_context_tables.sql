-- Living context, part 1: settings, tables, row level security and indexes for context assembly
-- (POST context/assemble, context/predict) and usage feedback (POST memory/usage). Layers:
-- settings → tables → RLS and grants → indexes. The functions are in the next migration.
-- docs/context.md explains every table.

-- 1. Settings ------------------------------------------------------------------------------------

insert into public.memory_settings (name, value, description) values
  ('context_prefetch_ttl_seconds', 30,
   'A context/predict result serves the session''s next context/assemble without a lookup while younger than this; older, it is still served once and refreshed after the answer (lazy refresh).'),
  ('context_prefetch_max_age_seconds', 600,
   'A prefetch older than this is not served: context/assemble looks the signal up itself.'),
  ('citation_reinforce_step', 0.2,
   'Strength a memory gains each time a usage report says it was cited (on top of its decayed strength, capped at 1). A memory retrieved but not cited gains nothing beyond the reinforcement of the retrieval itself.'),
  ('context_session_retention_hours', 48,
   'Prefetch and injection records of a session are deleted this long after they were written (devai-context-prune).')
on conflict (name) do nothing;

alter table public.memory_settings add constraint memory_settings_context_range check (
  case name
    when 'context_prefetch_ttl_seconds'     then value >= 1 and value <= 3600
    when 'context_prefetch_max_age_seconds' then value >= 1 and value <= 86400
    when 'citation_reinforce_step'          then value >= 0 and value <= 1
    when 'context_session_retention_hours'  then value >= 1 and value <= 8760
    else true
  end);

-- 2. Tables --------------------------------------------------------------------------------------

-- What agents reported about each memory they were given: retrieved (injected into their
-- context), cited (it influenced what they did) or ignored (retrieved, not cited). Every report
-- counts a retrieval, and exactly one of a citation or an ignore, so the counts always add up.
create table public.memory_usage (
  memory_id        uuid primary key,
  owner_id         uuid not null default auth.uid(),
  retrieval_count  integer not null default 0,
  citation_count   integer not null default 0,
  ignore_count     integer not null default 0,
  last_reported_at timestamptz not null default now(),
  last_cited_at    timestamptz,
  constraint memory_usage_memory_fkey foreign key (memory_id, owner_id)
    references public.devai_memories (id, owner_id) on delete cascade,
  constraint memory_usage_counts_nonnegative check (retrieval_count >= 0 and citation_count >= 0 and ignore_count >= 0),
  constraint memory_usage_counts_add_up check (citation_count + ignore_count = retrieval_count)
);
comment on table public.memory_usage is
  'Per memory: how often agents reported it retrieved, cited and ignored (POST memory/usage). Ranking demotes memories injected often and never cited; docs/context.md#usage-feedback.';

-- Per tenant: the totals behind memory/stats' usage block (prediction accuracy, share of injected
-- tokens that were cited).
create table public.memory_usage_totals (
  owner_id                    uuid primary key default auth.uid(),
  reports                     bigint not null default 0,
  retrieved                   bigint not null default 0,
  cited                       bigint not null default 0,
  cited_in_predicted_sessions bigint not null default 0,
  cited_prefetched            bigint not null default 0,
  injected_tokens             bigint not null default 0,
  cited_tokens                bigint not null default 0,
  updated_at                  timestamptz not null default now(),
  constraint memory_usage_totals_nonnegative check (
    reports >= 0 and retrieved >= 0 and cited >= 0 and cited_in_predicted_sessions >= 0
    and cited_prefetched >= 0 and injected_tokens >= 0 and cited_tokens >= 0),
  constraint memory_usage_totals_order check (
    cited <= retrieved and cited_prefetched <= cited_in_predicted_sessions
    and cited_in_predicted_sessions <= cited and cited_tokens <= injected_tokens)
);
comment on table public.memory_usage_totals is
  'Per tenant usage totals: prediction accuracy = cited_prefetched / cited_in_predicted_sessions, cited token share = cited_tokens / injected_tokens (memory/stats).';

-- The per-session prefetch cache: what context/predict found for one signal (a file opened, a
-- branch checked out, an error on screen), served to the session's next context/assemble.
-- memory_ids: the predicted memories (what prediction accuracy is measured against); refs: why
-- each was found ({id, kind, weight, detail?, coverage?}), what assembly ranks them by.
create table public.context_prefetch (
  owner_id    uuid not null default auth.uid(),
  session_id  text not null,
  signal_key  text not null,
  memory_ids  uuid[] not null,
  refs        jsonb not null,
  confidence  real not null,
  computed_at timestamptz not null default now(),
  primary key (owner_id, session_id, signal_key),
  constraint context_prefetch_session_shape check (char_length(session_id) between 1 and 200),
  constraint context_prefetch_signal_key_shape check (signal_key ~ '^(file|branch|error):' and char_length(signal_key) <= 600),
  constraint context_prefetch_refs_shape check (
    cardinality(memory_ids) <= 100 and jsonb_typeof(refs) = 'array' and jsonb_array_length(refs) <= 300),
  constraint context_prefetch_confidence_range check (confidence >= 0 and confidence <= 1)
);
comment on table public.context_prefetch is
  'Per-session prefetch cache of context/predict, one row per signal (file:, branch:, error:); fresh for context_prefetch_ttl_seconds. docs/context.md#prefetch.';

-- What context/assemble injected into a session, at which tier and level and for how many tokens:
-- the usage report's token shares are measured against it.
create table public.context_injections (
  owner_id    uuid not null default auth.uid(),
  session_id  text not null,
  memory_id   uuid not null,
  tier        text not null,
  level       text not null,
  tokens      integer not null,
  injected_at timestamptz not null default now(),
  primary key (owner_id, session_id, memory_id),
  constraint context_injections_memory_fkey foreign key (memory_id, owner_id)
    references public.devai_memories (id, owner_id) on delete cascade,
  constraint context_injections_session_shape check (char_length(session_id) between 1 and 200),
  constraint context_injections_tier_check check (tier in ('critical', 'relevant', 'background', 'index')),
  constraint context_injections_level_check check (level in ('full', 'summary', 'compressed', 'index')),
  constraint context_injections_tokens_range check (tokens between 0 and 32000)
);
comment on table public.context_injections is
  'What context/assemble last injected into each session (tier, compression level, tokens); read by POST memory/usage.';

-- 3. Row level security --------------------------------------------------------------------------

alter table public.memory_usage enable row level security;
alter table public.memory_usage_totals enable row level security;
alter table public.context_prefetch enable row level security;
alter table public.context_injections enable row level security;

revoke all on table public.memory_usage, public.memory_usage_totals, public.context_prefetch, public.context_injections
  from anon, authenticated, public;
grant all on table public.memory_usage, public.memory_usage_totals, public.context_prefetch, public.context_injections
  to service_role;

-- Owners read their rows and write them through the functions of the next migration (security
-- invoker, so these grants and policies are what they run under). Nothing may be deleted by a
-- tenant: old sessions are pruned by the nightly job.
grant select on public.memory_usage to authenticated;
grant insert (memory_id, owner_id, retrieval_count, citation_count, ignore_count, last_reported_at, last_cited_at)
  on public.memory_usage to authenticated;
grant update (retrieval_count, citation_count, ignore_count, last_reported_at, last_cited_at)
  on public.memory_usage to authenticated;
create policy "Owners can read their memory usage" on public.memory_usage
  for select to authenticated using (owner_id = (select auth.uid()));
create policy "Owners can record usage of their memories" on public.memory_usage
  for insert to authenticated with check (owner_id = (select auth.uid()));
create policy "Owners can update usage of their memories" on public.memory_usage
  for update to authenticated
  using (owner_id = (select auth.uid())) with check (owner_id = (select auth.uid()));

grant select on public.memory_usage_totals to authenticated;
grant insert (owner_id, reports, retrieved, cited, cited_in_predicted_sessions, cited_prefetched, injected_tokens,
              cited_tokens, updated_at)
  on public.memory_usage_totals to authenticated;
grant update (reports, retrieved, cited, cited_in_predicted_sessions, cited_prefetched, injected_tokens, cited_tokens,
              updated_at)
  on public.memory_usage_totals to authenticated;
create policy "Owners can read their usage totals" on public.memory_usage_totals
  for select to authenticated using (owner_id = (select auth.uid()));
create policy "Owners can start their usage totals" on public.memory_usage_totals
  for insert to authenticated with check (owner_id = (select auth.uid()));
create policy "Owners can update their usage totals" on public.memory_usage_totals
  for update to authenticated
  using (owner_id = (select auth.uid())) with check (owner_id = (select auth.uid()));

grant select on public.context_prefetch to authenticated;
grant insert (owner_id, session_id, signal_key, memory_ids, refs, confidence, computed_at)
  on public.context_prefetch to authenticated;
grant update (memory_ids, refs, confidence, computed_at) on public.context_prefetch to authenticated;
create policy "Owners can read their prefetch cache" on public.context_prefetch
  for select to authenticated using (owner_id = (select auth.uid()));
create policy "Owners can fill their prefetch cache" on public.context_prefetch
  for insert to authenticated with check (owner_id = (select auth.uid()));
create policy "Owners can refresh their prefetch cache" on public.context_prefetch
  for update to authenticated
  using (owner_id = (select auth.uid())) with check (owner_id = (select auth.uid()));

grant select on public.context_injections to authenticated;
grant insert (owner_id, session_id, memory_id, tier, level, tokens, injected_at) on public.context_injections to authenticated;
grant update (tier, level, tokens, injected_at) on public.context_injections to authenticated;
create policy "Owners can read their context injections" on public.context_injections
  for select to authenticated using (owner_id = (select auth.uid()));
create policy "Owners can record their context injections" on public.context_injections
  for insert to authenticated with check (owner_id = (select auth.uid()));
create policy "Owners can update their context injections" on public.context_injections
  for update to authenticated
  using (owner_id = (select auth.uid())) with check (owner_id = (select auth.uid()));

-- 4. Indexes -------------------------------------------------------------------------------------

-- The foreign key's lookup when a memory is purged, and the nightly prune.
create index memory_usage_memory_owner on public.memory_usage (memory_id, owner_id);
create index context_injections_memory on public.context_injections (memory_id, owner_id);
create index context_injections_injected_at on public.context_injections (injected_at);
create index context_prefetch_computed_at on public.context_prefetch (computed_at);

-- Code lineage: the memories recorded on a branch (context/predict on a checkout, the relevant
-- tier), only for the rows that name one.
create index devai_memories_owner_branch on public.devai_memories (owner_id, (metadata ->> 'branch'))
  where metadata ? 'branch' and is_valid and state = 'active';

-- The background tier: a project's conventions and workflows by category (the category as
-- memory.query reads it: procedural memories count as 'procedural'), the most important first.
create index devai_memories_owner_category on public.devai_memories
  (owner_id, (case when memory_type = 'procedural' then 'procedural' else metadata ->> 'category' end),
   importance desc, created_at desc)
  where is_valid and state = 'active';

-- Open contradictions of a tenant (the critical tier).
create index memory_relations_contradicts on public.memory_relations (owner_id, created_at desc)
  where relation_type = 'contradicts';
