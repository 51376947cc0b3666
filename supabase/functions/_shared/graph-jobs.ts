// The graph's job kinds, dispatched here by the worker (drain-queue.ts):
//   embed        episodes stored without a vector (remote embedder): embedded, then updated
//   consolidate  one session's episodes → facts with provenance (consolidation.ts)
//   enrich       nightly entity summaries (graph-maintenance.ts)
//   causal       nightly causal inference over consecutive episode pairs (graph-maintenance.ts)
//   entity_backfill  one batch of memories never linked to entities (entity-backfill.ts)
// Each job's writes run as its tenant (RLS) and commit with the job's completion.
import { z } from "zod";
import { uuid } from "./schemas.ts";
import { consolidateSession } from "./consolidation.ts";
import { toVectorLiteral, withTenant } from "./db.ts";
import type { WorkerDeps } from "./drain-queue.ts";
import { enrichEntities, inferCauses } from "./graph-maintenance.ts";
import { runEntityBackfill } from "./entity-backfill.ts";
import { completeJobInTx, type Job, type JobKind, PermanentJobError } from "./jobs.ts";

export const GRAPH_JOB_KINDS = [
  "embed",
  "consolidate",
  "enrich",
  "causal",
  "entity_backfill",
] as const satisfies readonly JobKind[];

export function isGraphJob(kind: string): boolean {
  return (GRAPH_JOB_KINDS as readonly string[]).includes(kind);
}

export const EmbedJobPayloadSchema = z.object({ memory_ids: z.array(uuid).min(1).max(100) }).strict();

export async function processGraphJob(deps: WorkerDeps, job: Job, workerId: string): Promise<void> {
  switch (job.kind) {
    case "embed":
      return await embedMemories(deps, job, workerId);
    case "consolidate":
      return await consolidateSession(deps, job, workerId);
    case "enrich":
      return await enrichEntities(deps, job, workerId);
    case "causal":
      return await inferCauses(deps, job, workerId);
    case "entity_backfill":
      return await runEntityBackfill(deps, job, workerId);
    default:
      throw new PermanentJobError(`unknown graph job kind '${job.kind}'`);
  }
}

/**
 * Embeds the job's memories that still have no vector. A row whose content changed meanwhile
 * (content_hash differs) or that got a vector meanwhile is left alone.
 */
async function embedMemories(deps: WorkerDeps, job: Job, workerId: string): Promise<void> {
  const parsed = EmbedJobPayloadSchema.safeParse(job.payload);
  if (!parsed.success) throw new PermanentJobError(`invalid embed payload: ${parsed.error.message}`);
  const tenant = { tenantId: job.owner_id, actor: "worker:embed" };
  const rows = await withTenant(deps.sql, tenant, (tx) =>
    tx<{ id: string; content: string; content_hash: string }[]>`
      select id, content, content_hash from public.devai_memories
       where id = any (${parsed.data.memory_ids}::uuid[]) and embedding is null
       order by id`);
  const vectors = rows.length > 0 ? await deps.embedder.embed(rows.map((r) => r.content)) : [];
  await withTenant(deps.sql, tenant, async (tx) => {
    const values = rows.map((r, i) => ({
      id: r.id,
      content_hash: r.content_hash,
      embedding: toVectorLiteral(vectors[i]!),
    }));
    const updated = values.length === 0 ? [] : await tx`
      update public.devai_memories m
         set embedding = v.embedding::extensions.vector, embedding_model = ${deps.embedder.model}
        from json_to_recordset(${tx.json(values as never)}::json) as v(id uuid, content_hash text, embedding text)
       where m.id = v.id and m.embedding is null and m.content_hash = v.content_hash
      returning m.id`;
    await completeJobInTx(tx, job.id, workerId, { embedded: updated.length, model: deps.embedder.model });
  });
}
