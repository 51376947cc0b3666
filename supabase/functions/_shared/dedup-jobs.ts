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
  /** Candidates in jobs queued by this call (not in jobs an earlier call with the same key queued). */
  queued: number;
}

/**
 * Queues `candidates` as dedup jobs of at most DEDUP_BATCH, in `tx`. The first job takes
 * `idempotencyKey`, the next ones `<key>:batch<n>`: calling again with the same key and candidates
 * (a retried extraction, a repeated compaction) queues nothing new.
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
    out.jobIds.push(queued.id);
    if (!queued.deduplicated) out.queued += candidates.length;
  }
  return out;
}
