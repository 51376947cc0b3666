// The rows a dedup decision writes: the new memory (with its entity and file links) and the
// memory_events that record each step (dedup.ts).
import type { Tx } from "./db.ts";
import { type Candidate, isProtected } from "./candidates.ts";
import { effectiveCategory } from "./categories.ts";
import { linkEntities, linkEntitiesByRules } from "./entities.ts";
import { citedFileLinks, contextMetadata } from "./context/lineage.ts";
import type { DedupContext } from "./dedup.ts";

export async function insertMemory(
  tx: Tx,
  ctx: DedupContext,
  c: Candidate,
  content: string,
  vec: string,
  model: string,
): Promise<string> {
  const base = {
    origin: ctx.origin,
    ...(ctx.jobId ? { job_id: ctx.jobId } : {}),
    ...(c.category ? { category: c.category } : {}),
  };
  const metadata = { ...base, ...contextMetadata(c, content, ctx.lineage) };
  const [row] = await tx<{ id: string }[]>`
    insert into public.devai_memories
      (owner_id, content, embedding, embedding_model, memory_type, namespace, priority, source, importance,
       session_id, metadata)
    values
      (${ctx.ownerId}, ${content}, ${vec}::extensions.vector, ${model}, ${c.type}, ${c.namespace}, ${c.priority},
       ${c.source}, ${c.importance}, ${ctx.sessionId ?? null}, ${tx.json(metadata)})
    returning id`;
  await linkEntitiesByRules(tx, [{ id: row!.id, content }]);
  await linkEntities(tx, citedFileLinks(row!.id, c.files));
  return row!.id;
}

export async function event(
  tx: Tx,
  ctx: DedupContext,
  op: "classify" | "search" | "create" | "merge" | "delete" | "link",
  status: "ok" | "error" | "skipped",
  memoryId: string | null,
  c: Candidate,
  sim: number | null,
  meta: Record<string, unknown>,
): Promise<void> {
  await tx`
    insert into public.memory_events (owner_id, thread_id, node, op, status, memory_id, category, sim, meta)
    values (${ctx.ownerId}, ${ctx.threadId ?? null}, 'worker', ${op}, ${status}, ${memoryId}, ${
    effectiveCategory(c.type, c.category)
  },
            ${sim}, ${
    tx.json(
      {
        ...meta,
        origin: ctx.origin,
        job_id: ctx.jobId ?? null,
        namespace: c.namespace,
        memory_type: c.type,
        protected: isProtected(c),
      } as never,
    )
  })`;
}
