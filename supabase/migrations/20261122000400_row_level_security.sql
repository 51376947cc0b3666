-- Layer 4: row level security and grants. RLS is the tenant boundary: every request's transaction
-- runs as `authenticated` with the tenant's JWT claims, so a query bug cannot cross tenants.
-- `anon` gets nothing. service_role (server-side only) bypasses RLS, as on Supabase.

alter table public.devai_memories enable row level security;
alter table public.memory_relations enable row level security;
alter table public.memory_history enable row level security;
alter table public.memory_thread_revisions enable row level security;
alter table public.memory_change_log enable row level security;
alter table public.memory_jobs enable row level security;
alter table public.memory_session_summaries enable row level security;
alter table public.memory_events enable row level security;

-- Start from nothing (Supabase's default privileges grant everything to anon and authenticated).
revoke all on table
  public.devai_memories, public.memory_relations, public.memory_history, public.memory_thread_revisions,
  public.memory_change_log, public.memory_jobs, public.memory_session_summaries, public.memory_events
  from anon, authenticated, public;
grant all on table
  public.devai_memories, public.memory_relations, public.memory_history, public.memory_thread_revisions,
  public.memory_change_log, public.memory_jobs, public.memory_session_summaries, public.memory_events
  to service_role;

-- devai_memories: owners read, add and change their memories. No delete: forgetting is a soft
-- delete (state), removal is the purge job's. Ids and owner are never written by the client, so
-- an insert cannot be used to probe another tenant's ids; generated columns are not writable.
grant select on public.devai_memories to authenticated;
grant insert (content, embedding, memory_type, namespace, priority, source, strength, access_count,
              last_accessed_at, session_id, is_valid, superseded_by, owner_id, importance, pinned,
              state, purge_at, embedding_model, base_strength, metadata)
  on public.devai_memories to authenticated;
grant update (content, embedding, memory_type, namespace, priority, source, strength, access_count,
              last_accessed_at, session_id, is_valid, superseded_by, importance, pinned,
              state, purge_at, embedding_model, base_strength, metadata)
  on public.devai_memories to authenticated;

create policy "Owners can read their memories" on public.devai_memories
  for select to authenticated using (owner_id = (select auth.uid()));
create policy "Owners can add memories" on public.devai_memories
  for insert to authenticated with check (owner_id = (select auth.uid()));
create policy "Owners can change their memories" on public.devai_memories
  for update to authenticated
  using (owner_id = (select auth.uid())) with check (owner_id = (select auth.uid()));

-- memory_relations: owners read and add edges between their own memories (the composite foreign
-- keys make cross-tenant edges impossible) and may re-weight them.
grant select on public.memory_relations to authenticated;
grant insert (owner_id, from_id, to_id, relation_type, strength) on public.memory_relations to authenticated;
grant update (strength) on public.memory_relations to authenticated;
create policy "Owners can read their relations" on public.memory_relations
  for select to authenticated using (owner_id = (select auth.uid()));
create policy "Owners can link their memories" on public.memory_relations
  for insert to authenticated with check (owner_id = (select auth.uid()));
create policy "Owners can re-weight their relations" on public.memory_relations
  for update to authenticated
  using (owner_id = (select auth.uid())) with check (owner_id = (select auth.uid()));

-- memory_history, revisions, change log: written by triggers only; owners read their own.
grant select on public.memory_history, public.memory_thread_revisions, public.memory_change_log to authenticated;
create policy "Owners can read their memory history" on public.memory_history
  for select to authenticated using (owner_id = (select auth.uid()));
create policy "Owners can read their thread revisions" on public.memory_thread_revisions
  for select to authenticated using (owner_id = (select auth.uid()));
create policy "Owners can read their change log" on public.memory_change_log
  for select to authenticated using (owner_id = (select auth.uid()));

-- memory_jobs: owners enqueue (queued, never pre-claimed) and read their jobs; workers run as a
-- privileged role and claim across tenants.
grant select on public.memory_jobs to authenticated;
grant insert (owner_id, kind, payload, idempotency_key, max_attempts) on public.memory_jobs to authenticated;
create policy "Owners can read their jobs" on public.memory_jobs
  for select to authenticated using (owner_id = (select auth.uid()));
create policy "Owners can enqueue jobs" on public.memory_jobs
  for insert to authenticated with check (owner_id = (select auth.uid()));

-- memory_session_summaries: the owner's compaction summaries.
grant select on public.memory_session_summaries to authenticated;
grant insert (owner_id, session_id, summary, token_count, compactions) on public.memory_session_summaries to authenticated;
grant update (summary, token_count, compactions) on public.memory_session_summaries to authenticated;
create policy "Owners can read their session summaries" on public.memory_session_summaries
  for select to authenticated using (owner_id = (select auth.uid()));
create policy "Owners can add session summaries" on public.memory_session_summaries
  for insert to authenticated with check (owner_id = (select auth.uid()));
create policy "Owners can update their session summaries" on public.memory_session_summaries
  for update to authenticated
  using (owner_id = (select auth.uid())) with check (owner_id = (select auth.uid()));

-- memory_events: append-only operational log.
grant select on public.memory_events to authenticated;
grant insert (owner_id, thread_id, node, op, status, memory_id, category, sim, meta) on public.memory_events to authenticated;
create policy "Owners can read their events" on public.memory_events
  for select to authenticated using (owner_id = (select auth.uid()));
create policy "Owners can record their events" on public.memory_events
  for insert to authenticated with check (owner_id = (select auth.uid()));
