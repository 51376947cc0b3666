// The entity pass of memories that never had one (written before graph memory existed):
// migrations/20261129500000 put them in memory_private.entity_pass_pending and queued one
// 'entity_backfill' job per tenant. A job links one batch of its tenant's memories exactly as the
// write path links a new memory (rules on the content, the files its metadata cites), takes them
// out of the set, and queues the tenant's next batch if any are left, all in the transaction that
// completes it: a batch is applied once, the fair queue lets other tenants' jobs run between two
// batches, and a memory that names nothing leaves the set too. docs/graph.md#entities.
import { asService, withTenant } from "./db.ts";
import type { WorkerDeps } from "./drain-queue.ts";
import { linkEntities, linkEntitiesByRules } from "./entities.ts";
import { citedFileLinks, filesOf } from "./context/lineage.ts";
import { completeJobInTx, enqueueJob, type Job } from "./jobs.ts";

export async function runEntityBackfill(deps: WorkerDeps, job: Job, workerId: string): Promise<void> {
  const tenant = { tenantId: job.owner_id, actor: "worker:entity_backfill" };
  await withTenant(deps.sql, tenant, async (tx) => {
    // The set is the service's (tenants cannot read or empty it); the memories are read as the tenant.
    const taken = await asService(tx, () =>
      tx<{ memory_id: string }[]>`
        delete from memory_private.entity_pass_pending p
         where p.owner_id = ${job.owner_id}
           and p.memory_id in (select q.memory_id from memory_private.entity_pass_pending q
                                where q.owner_id = ${job.owner_id}
                                order by q.memory_id
                                limit public.memory_setting('entity_backfill_batch_size')::int
                                  for update skip locked)
        returning p.memory_id`);
    const memories = await tx<{ id: string; content: string; metadata: Record<string, unknown> | null }[]>`
      select id, content, metadata from public.devai_memories
       where id = any (${taken.map((t) => t.memory_id)}::uuid[])
       order by id`;
    const linked = await linkEntitiesByRules(tx, memories) +
      await linkEntities(tx, memories.flatMap((m) => citedFileLinks(m.id, filesOf(m.metadata))));
    const [left] = await asService(tx, () =>
      tx<{ more: boolean }[]>`
        select exists (select from memory_private.entity_pass_pending where owner_id = ${job.owner_id}) as more`);
    if (left!.more) {
      await enqueueJob(tx, {
        ownerId: job.owner_id,
        kind: "entity_backfill",
        idempotencyKey: `entity_backfill:after:${job.id}`,
        payload: {},
      });
    }
    await completeJobInTx(tx, job.id, workerId, { scanned: memories.length, linked, more: left!.more });
  });
}
