// Queueing candidates for dedup: in jobs of at most DEDUP_BATCH candidates each. One job took
// them all before, and the worker refuses a dedup payload of more than DEDUP_BATCH (its work, an
// embedding call and up to one LLM judgement per candidate, must fit in one job's lease): a
// transcript with 101 "remember …" statements queued a job that died at once, and every one of
// them was lost while the extraction reported them stored. The worker's run of such a job
// (processDedupJob, drain-queue.ts) is here too.
import { z } from "zod";
import type { Tx } from "./db.ts";
import { withTenant } from "./db.ts";
import { CandidateSchema } from "./candidates.ts";
import { dedupCandidates, type DedupProgress } from "./dedup.ts";
import type { WorkerDeps } from "./drain-queue.ts";
import { completeJobInTx, enqueueJob, type Job, PermanentJobError, recordJobProgress } from "./jobs.ts";
import { queuedCodeOrigin } from "./schemas.ts";
import { nameText } from "./name-form.ts";

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

/** Payload of a 'dedup' job (from extraction, compaction or the memory-dedup endpoint). */
export const DedupJobPayloadSchema = z.object({
  candidates: z.array(CandidateSchema).max(DEDUP_BATCH),
  session_id: z.string().max(200).optional(),
  thread_id: z.string().max(200).optional(),
  // Read in NFC as a request's project is: a job queued before names were (name-form.ts).
  project: nameText().max(140).optional(),
  origin: z.enum(["extract", "compact", "api"]).default("api"),
  source_job_id: z.string().optional(),
  lineage: queuedCodeOrigin.optional(),
});

/** The worker's 'dedup' job: each candidate applied once (dedup.ts), the job completed with its report. */
export async function processDedupJob(deps: WorkerDeps, job: Job, workerId: string): Promise<void> {
  const parsed = DedupJobPayloadSchema.safeParse(job.payload);
  if (!parsed.success) throw new PermanentJobError(`invalid dedup payload: ${parsed.error.message}`);
  const payload = parsed.data;
  const vectors = payload.candidates.length > 0
    ? await deps.embedder.embed(payload.candidates.map((c) => c.content))
    : [];
  // Each candidate's passes run in short transactions (dedup.ts); each one that applies records
  // the candidates done in the job's progress, in that transaction: a retried job (a crash, a lost
  // lease, a failed model) goes on from there and applies nothing twice.
  const tenant = { tenantId: job.owner_id, actor: "worker:dedup" };
  const opts = { threadId: payload.thread_id };
  const report = await dedupCandidates(
    {
      transaction: (work) => withTenant(deps.sql, tenant, work, opts),
      applied: (tx, progress) => recordJobProgress(tx, job.id, workerId, { dedup: progress }, { inTenantTx: true }),
      resume: (job.result as { dedup?: DedupProgress } | null)?.dedup,
      handBackCuts: job.attempts < job.max_attempts,
    },
    { embedder: deps.embedder, llm: deps.llm, config: deps.config },
    {
      ownerId: job.owner_id,
      sessionId: payload.session_id,
      threadId: payload.thread_id,
      origin: payload.origin,
      jobId: job.id,
      lineage: payload.lineage,
    },
    payload.candidates,
    vectors,
  );
  await withTenant(deps.sql, tenant, (tx) => completeJobInTx(tx, job.id, workerId, report), opts);
}
