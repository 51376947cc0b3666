// Access reinforcement (seed 000 Retrieval Flow step 5): every memory that was injected gets
// access_count + 1, last_accessed_at = now() and its strength restored, so used memories do not
// decay. Only injected memories: one that did not fit the budget was not used.
//
// The formula belongs to the lifecycle migration (20261122001100_lifecycle_jobs.sql,
// public.reinforce_memories): it reads memory_settings, so decay and reinforcement stay consistent,
// and it skips rows a nightly job holds locked, so retrieval never waits on it.
import type { Tx } from "../db.ts";

/** Reinforces the given memories as the tenant (security invoker + RLS: only the tenant's rows). */
export async function reinforceMemories(tx: Tx, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await tx`select count(*) from public.reinforce_memories(${[...ids]}::uuid[])`;
}
