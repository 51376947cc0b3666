// Queueing candidates for dedup: in jobs of at most DEDUP_BATCH candidates each. One job took
// them all before, and the worker refuses a dedup payload of more than DEDUP_BATCH (its work, an
// embedding call and up to one LLM judgement per candidate, must fit in one job's lease): a
// transcript with 101 "remember …" statements queued a job that died at once, and every one of
// them was lost while the extraction reported them stored.
import type { Tx } from "./db.ts";
import { enqueueJob } from "./jobs.ts";

/** Candidates per dedup job: what one job's lease is sized for (DedupJobPayloadSchema's maximum). */
export const DEDUP_BATCH = 100;

export interface QueuedDedup {
  /** The jobs, in the candidates' order (empty without candidates). */
  jobIds: string[];
  /** Candidates in jobs this call queued (0 when an earlier call with the same key had). */
  queued: number;
}

/**
 * Queues `candidates` as dedup jobs of at most DEDUP_BATCH, in `tx`. The first job takes
 * `idempotencyKey`, the next ones `<key>:batch<n>`. When the first key is taken already (a retried
 * extraction, a repeated compaction), nothing is queued and the jobs queued then are returned:
 * the whole call is deduplicated, as one job used to be, even when a model answered the repeat
 * with more candidates than the first time.
 */
export async function enqueueDedupJobs<C>(
  tx: Tx,
  job: { ownerId: string; idempotencyKey: string; payload: Record<string, unknown>; candidates: readonly C[] },
): Promise<QueuedDedup> {
  const out: QueuedDedup = { jobIds: [], queued: 0 };
  for (let start = 0, n = 0; start < job.candidates.length; start += DEDUP_BATCH, n++) {
    const candidates = job.candidates.slice(start, start + DEDUP_BATCH);
    const queued = await enqueueJob(tx, {
      ownerId: job.ownerId,
      kind: "dedup",
      idempotencyKey: n === 0 ? job.idempotencyKey : `${job.idempotencyKey}:batch${n}`,
      payload: { ...job.payload, candidates },
    });
    if (n === 0 && queued.deduplicated) return { jobIds: await queuedBefore(tx, job), queued: 0 };
    out.jobIds.push(queued.id);
    out.queued += candidates.length;
  }
  return out;
}

/** The jobs an earlier call with this key queued, in their batches' order. */
async function queuedBefore(tx: Tx, job: { ownerId: string; idempotencyKey: string }): Promise<string[]> {
  const rows = await tx<{ id: string; batch: number }[]>`
    select id, coalesce(nullif(substr(idempotency_key, length(${job.idempotencyKey}) + 7), '')::integer, 0) as batch
      from public.memory_jobs
     where owner_id = ${job.ownerId} and kind = 'dedup'
       and (idempotency_key = ${job.idempotencyKey} or idempotency_key ^@ ${`${job.idempotencyKey}:batch`})
     order by batch`;
  return rows.map((r) => r.id);
}
