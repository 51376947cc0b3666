// Re-embedding when the embedding model changes (docs/consolidation.md#re-embedding). Search
// compares only vectors of the configured model, so memories embedded by another one (the offline
// embedder before OpenAI, one provider before another) are found only by their words and the graph
// until they are embedded again. A 'reindex' job does that for one tenant, in batches of
// reindex_batch_size: each batch is embedded outside any transaction and committed on its own (with
// a memory_events row counting it), so the work survives a failure and the job resumes where it
// stopped; at most reindex_per_night memories a UTC day; a provider error fails the job, which the
// queue retries with backoff. What is left when the cap is reached is queued again the next night
// (memory_private.enqueue_nightly_consolidation). Raw episodes are not re-embedded (search never
// compares them).
import { type Sql, type TenantContext, toVectorLiteral, type Tx, withTenant } from "./db.ts";
import type { WorkerDeps } from "./drain-queue.ts";
import type { Embedder } from "./embeddings.ts";
import { completeJobInTx, enqueueJob, type Job, jobView } from "./jobs.ts";

export interface ReindexStatus {
  configured_model: string;
  /** Valid, active memories (raw episodes aside) by the model of their vector ('none': no vector). */
  by_model: Record<string, number>;
  to_reindex: number;
  job: ReturnType<typeof jobView> | null;
}

const STALE = (tx: Tx, model: string) =>
  tx`is_valid and state = 'active' and source is distinct from 'conversation' and (embedding is null or embedding_model is distinct from ${model})`;

export async function reindexStatus(tx: Tx, model: string): Promise<ReindexStatus> {
  const rows = await tx<{ model: string; n: number }[]>`
    select coalesce(embedding_model, 'none') as model, count(*)::int as n from public.devai_memories
     where is_valid and state = 'active' and source is distinct from 'conversation' and embedding is not null
     group by 1 order by 1`;
  const [stale] = await tx<{ n: number }[]>`select count(*)::int as n from public.devai_memories where ${
    STALE(tx, model)
  }`;
  const [job] = await tx`select * from public.memory_jobs where kind = 'reindex' order by created_at desc, id limit 1`;
  return {
    configured_model: model,
    by_model: Object.fromEntries(rows.map((r) => [r.model, r.n])),
    to_reindex: stale!.n,
    job: job ? jobView(job as unknown as Job) : null,
  };
}

/**
 * POST memory/reindex: the calling tenant's status, and (unless a dry run) its re-embedding job
 * queued when there is work and none is queued or running. Today's job is one per UTC day: once it
 * is done, what is left continues the next night.
 */
export async function startReindex(
  deps: { sql: Sql; embedder: Embedder },
  tenant: TenantContext,
  opts: { dryRun: boolean; now?: Date },
): Promise<ReindexStatus & { started: boolean; dry_run: boolean }> {
  return await withTenant(deps.sql, tenant, async (tx) => {
    const status = await reindexStatus(tx, deps.embedder.model);
    const busy = status.job && (status.job.status === "queued" || status.job.status === "running");
    if (opts.dryRun || busy || status.to_reindex === 0) return { ...status, started: false, dry_run: opts.dryRun };
    const day = (opts.now ?? new Date()).toISOString().slice(0, 10);
    const queued = await enqueueJob(tx, {
      ownerId: tenant.tenantId,
      kind: "reindex",
      idempotencyKey: `reindex:${day}`,
      payload: { model: deps.embedder.model },
    });
    const [job] = await tx`select * from public.memory_jobs where id = ${queued.id}`;
    return { ...status, job: jobView(job as unknown as Job), started: !queued.deduplicated, dry_run: false };
  });
}

export async function runReindex(deps: WorkerDeps, job: Job, workerId: string): Promise<void> {
  const tenant = { tenantId: job.owner_id, actor: "worker:reindex" };
  const model = deps.embedder.model;
  const [state] = await withTenant(deps.sql, tenant, (tx) =>
    tx<{ done_today: number; cap: number; batch: number }[]>`
      select coalesce((select sum((meta ->> 'count')::int) from public.memory_events
                        where node = 'worker' and op = 'update' and meta ->> 'kind' = 'reindex'
                          and ts >= date_trunc('day', now() at time zone 'UTC') at time zone 'UTC'), 0)::int as done_today,
             public.memory_setting('reindex_per_night')::int as cap,
             public.memory_setting('reindex_batch_size')::int as batch`);
  let budget = Math.max(0, state!.cap - state!.done_today);
  let reindexed = 0, batches = 0;
  while (budget > 0) {
    const rows = await withTenant(deps.sql, tenant, (tx) =>
      tx<{ id: string; content: string; content_hash: string }[]>`
        select id, content, content_hash from public.devai_memories where ${STALE(tx, model)}
         order by id limit ${Math.min(budget, state!.batch)}`);
    if (rows.length === 0) break;
    const vectors = await deps.embedder.embed(rows.map((r) => r.content));
    const updated = await withTenant(deps.sql, tenant, async (tx) => {
      const values = rows.map((r, i) => ({
        id: r.id,
        content_hash: r.content_hash,
        embedding: toVectorLiteral(vectors[i]!),
      }));
      const done = await tx`
        update public.devai_memories m
           set embedding = v.embedding::extensions.vector, embedding_model = ${model}
          from json_to_recordset(${tx.json(values as never)}::json) as v(id uuid, content_hash text, embedding text)
         where m.id = v.id and m.content_hash = v.content_hash and m.embedding_model is distinct from ${model}
        returning m.id`;
      await tx`
        insert into public.memory_events (owner_id, node, op, status, meta)
        values (${job.owner_id}, 'worker', 'update', 'ok', ${
        tx.json({ kind: "reindex", count: rows.length, updated: done.length, model, job_id: job.id })
      })`;
      return done.length;
    });
    reindexed += updated;
    budget -= rows.length;
    batches++;
  }
  await withTenant(deps.sql, tenant, async (tx) => {
    const [left] = await tx<{ n: number }[]>`select count(*)::int as n from public.devai_memories where ${
      STALE(tx, model)
    }`;
    await completeJobInTx(tx, job.id, workerId, {
      model,
      reindexed,
      batches,
      remaining: left!.n,
      capped: budget === 0 && left!.n > 0,
    });
  });
}
