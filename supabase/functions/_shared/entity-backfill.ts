// The entity pass of memories that never had one (written before graph memory existed):
// migrations/20261129500000 put them in memory_private.entity_pass_pending, and devai-entity-backfill
// queues one 'entity_backfill' job per tenant in it. A job links one batch of its tenant's memories
// exactly as the write path links a new memory (rules on the content, the files its metadata
// cites), takes them out of the set, and queues the tenant's next batch if any are left, all in the
// transaction that completes it: a batch is applied once, and a memory that names nothing leaves
// the set too. docs/graph.md#entities.
import { asService, withTenant } from "./db.ts";
import type { WorkerDeps } from "./drain-queue.ts";
import { linkEntities, linkEntitiesByRules } from "./entities.ts";
import { citedFileLinks, filesOf } from "./context/lineage.ts";
import { completeJobInTx, enqueueJob, type Job } from "./jobs.ts";

export async function runEntityBackfill(deps: WorkerDeps, job: Job, workerId: string): Promise<void> {
  const tenant = { tenantId: job.owner_id, actor: "worker:entity_backfill" };
  await withTenant(deps.sql, tenant, async (tx) => {
    // The set is the service's (tenants cannot read or empty it); the memories are read as the tenant.
    // The batch is materialized first: as `memory_id in (subquery with limit)` a nested-loop semi
    // join may run the subquery again per row (stale statistics) and delete far more than a batch.
    const taken = await asService(tx, () =>
      tx<{ memory_id: string }[]>`
        with batch as materialized (
          select q.memory_id from memory_private.entity_pass_pending q
           where q.owner_id = ${job.owner_id}
           order by q.memory_id
           limit public.memory_setting('entity_backfill_batch_size')::int
             for update skip locked)
        delete from memory_private.entity_pass_pending p using batch
         where p.owner_id = ${job.owner_id} and p.memory_id = batch.memory_id
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
      const next = await enqueueJob(tx, {
        ownerId: job.owner_id,
        kind: "entity_backfill",
        idempotencyKey: `entity_backfill:after:${job.id}`,
        payload: {},
      });
      // The fair key ignores the owner's running job (docs/operations.md#job-queue), so the next
      // batch would start at the queue's head: two backfilling tenants would take turns ahead of
      // every other tenant's overdue jobs. It takes the tenant's next turn instead, a step after this one.
      await asService(tx, () =>
        tx`
          update public.memory_jobs n
             set fair_key = greatest(n.fair_key, c.fair_key + make_interval(
                   secs => public.memory_setting('job_fair_step_seconds')::double precision))
            from public.memory_jobs c
           where n.id = ${next.id} and n.status = 'queued' and c.id = ${job.id}`);
    }
    await completeJobInTx(tx, job.id, workerId, { scanned: memories.length, linked, more: left!.more });
  });
}
