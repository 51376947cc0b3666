// The 'vector_index' job: builds or drops a big tenant's own HNSW index
// (docs/operations.md#a-dedicated-vector-index-for-a-big-tenant), queued hourly by
// memory_private.enqueue_vector_index_jobs. CREATE INDEX CONCURRENTLY cannot run in a transaction
// (so in no function, migration or job of the database's own): the worker runs it here as a
// statement of its own on its privileged connection, and every tenant's reads and writes go on
// while it builds. The statements are idempotent (IF NOT EXISTS, IF EXISTS), so a job run twice
// (a lost lease, a retry) changes nothing the first run did not. A concurrent build that fails
// leaves an invalid index behind, which the searches ignore (public.memory_vector_index_of) and
// which would make IF NOT EXISTS skip every later build: a build drops it first. Before acting the
// job asks memory_private.vector_index_plan again, with the threshold it was queued with: a job
// that waited while its tenant changed, or finds another session building the index, completes
// without a statement (and without spending an attempt).
import { z } from "zod";
import type { WorkerDeps } from "./drain-queue.ts";
import { completeJob, type Job, LeaseLostError, PermanentJobError } from "./jobs.ts";

const PayloadSchema = z.object({ action: z.enum(["build", "drop"]), min_rows: z.number().int().positive() }).strict();

interface IndexState {
  build: string;
  drop: string;
  /** null: no such index; false: invalid (being built, or a failed build). */
  valid: boolean | null;
  /** A CREATE INDEX is under way on the table for this index (pg_stat_progress_create_index). */
  building: boolean;
}

export async function processVectorIndexJob(deps: WorkerDeps, job: Job, workerId: string): Promise<void> {
  const parsed = PayloadSchema.safeParse(job.payload);
  if (!parsed.success) throw new PermanentJobError(`invalid vector_index payload: ${parsed.error.message}`);
  const { action, min_rows: minRows } = parsed.data;
  const complete = async (result: Record<string, unknown>) => {
    const ok = await completeJob(deps.sql, job.id, workerId, { action, ...result });
    if (!ok) {
      throw new LeaseLostError(`job ${job.id}: lease lost before completion (the index statement is idempotent)`);
    }
  };
  const [planned] = await deps.sql<{ action: string }[]>`
    select p.action from memory_private.vector_index_plan(${minRows}::int) p where p.owner_id = ${job.owner_id}::uuid`;
  if (planned?.action !== action) return await complete({ skipped: "no longer planned for this tenant" });
  const before = await indexState(deps, job.owner_id);
  if (before.building) return await complete({ skipped: "being built by another session" });
  if (action === "drop") {
    await deps.sql.unsafe(before.drop);
  } else {
    if (before.valid === false) await deps.sql.unsafe(before.drop); // a failed build's leftover
    await deps.sql.unsafe(before.build);
  }
  const after = await indexState(deps, job.owner_id);
  if (action === "build" && after.valid !== true) throw new Error("the tenant's index was not valid after its build");
  await complete({ valid: after.valid });
}

async function indexState(deps: WorkerDeps, ownerId: string): Promise<IndexState> {
  const [s] = await deps.sql<IndexState[]>`
    select public.memory_dedicated_vector_index_sql(${ownerId}::uuid) as build,
           public.memory_dedicated_vector_index_sql(${ownerId}::uuid, true) as drop,
           (select i.indisvalid from pg_catalog.pg_index i where i.indexrelid = x.ix) as valid,
           exists (select from pg_catalog.pg_stat_progress_create_index p where p.index_relid = x.ix) as building
      from (select to_regclass('public.devai_memories_hnsw_owner_' || replace(${ownerId}::text, '-', '')) as ix) x`;
  return s!;
}
