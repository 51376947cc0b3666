// The queue worker: claim → process → complete/fail, one job at a time, until the queue is empty or
// maxJobs were handled. Claiming and failing use the worker's privileged connection (they cross
// tenants); each job's effects run in a transaction AS the job's owner (RLS), and that same
// transaction marks the job done, so a job is either fully applied and done, or not applied at all
// (crash, error, lost lease) and claimed again later — never applied twice.
//
// Run by: the memory-worker endpoint (pg_cron + pg_net in production), the local server's timer,
// and the background kick after each enqueue.
import { z } from "zod";
import type { Sql } from "./db.ts";
import { withTenant } from "./db.ts";
import type { Embedder } from "./embeddings.ts";
import type { Config } from "./env.ts";
import { claimJobs, completeJobInTx, enqueueJob, failJob, type Job, type JobKind, LeaseLostError, PermanentJobError } from "./jobs.ts";
import { type Llm, LlmOutputError, LlmRequestError } from "./llm.ts";
import { codeOrigin } from "./schemas.ts";
import { CandidateSchema } from "./candidates.ts";
import { loadCategoryNames } from "./categories.ts";
import { ExtractJobPayloadSchema, runExtraction } from "./extraction.ts";
import { dedupCandidates } from "./dedup.ts";
import { isGraphJob, processGraphJob } from "./graph-jobs.ts";

export interface WorkerDeps {
  sql: Sql;
  config: Config;
  embedder: Embedder;
  llm?: Llm;
  clock?: () => Date;
}

/** What a function that queues write jobs needs: the worker's dependencies and how to start it. */
export interface QueueingDeps extends WorkerDeps {
  /** Starts draining the queue after a 202; defaults to an in-process drain. Tests pass a no-op. */
  kickWorker?: () => Promise<unknown>;
}

export interface DrainOptions {
  maxJobs?: number;
  workerId?: string;
  leaseSeconds?: number;
  /** First retry delay; doubles per attempt (fail_job). */
  backoffBaseMs?: number;
  kinds?: JobKind[];
  /** Only this tenant's jobs (tests, per-tenant drains). */
  ownerId?: string;
}

export interface DrainReport {
  claimed: number;
  done: number;
  retried: number;
  dead: number;
  lease_lost: number;
  jobs: { id: string; kind: string; status: string; error?: string }[];
}

/** Payload of a 'dedup' job (from extraction, compaction or the memory-dedup endpoint). */
export const DedupJobPayloadSchema = z.object({
  candidates: z.array(CandidateSchema).max(100),
  session_id: z.string().max(200).optional(),
  thread_id: z.string().max(200).optional(),
  project: z.string().max(140).optional(),
  origin: z.enum(["extract", "compact", "api"]).default("api"),
  source_job_id: z.string().optional(),
  lineage: codeOrigin.optional(),
});

export function defaultWorkerId(): string {
  return `worker:${Deno.env.get("SB_EXECUTION_ID") ?? Deno.hostname?.() ?? "local"}:${crypto.randomUUID().slice(0, 8)}`;
}

export async function drainQueue(deps: WorkerDeps, opts: DrainOptions = {}): Promise<DrainReport> {
  const workerId = opts.workerId ?? defaultWorkerId();
  const maxJobs = opts.maxJobs ?? 25;
  const report: DrainReport = { claimed: 0, done: 0, retried: 0, dead: 0, lease_lost: 0, jobs: [] };
  while (report.claimed < maxJobs) {
    const [job] = await claimJobs(deps.sql, { workerId, limit: 1, leaseSeconds: opts.leaseSeconds ?? 300, kinds: opts.kinds, ownerId: opts.ownerId });
    if (!job) break;
    report.claimed++;
    try {
      await processJob(deps, job, workerId);
      report.done++;
      report.jobs.push({ id: job.id, kind: job.kind, status: "done" });
    } catch (err) {
      if (err instanceof LeaseLostError) {
        // Another worker owns it now; our writes were rolled back with the completion.
        report.lease_lost++;
        report.jobs.push({ id: job.id, kind: job.kind, status: "lease_lost", error: err.message });
        continue;
      }
      const message = describeError(err);
      const retryable = !(err instanceof PermanentJobError) && !(err instanceof LlmRequestError && !err.retryable);
      const status = await failJob(deps.sql, job.id, workerId, message, { retryable, backoffBaseMs: opts.backoffBaseMs });
      if (status === "dead") report.dead++;
      else report.retried++;
      report.jobs.push({ id: job.id, kind: job.kind, status: status ?? "lease_lost", error: message });
      await recordFailure(deps, job, status ?? "unknown", message).catch(() => {});
    }
  }
  return report;
}

export async function processJob(deps: WorkerDeps, job: Job, workerId: string): Promise<void> {
  if (job.kind === "extract") return await processExtract(deps, job, workerId);
  if (job.kind === "dedup") return await processDedup(deps, job, workerId);
  if (isGraphJob(job.kind)) return await processGraphJob(deps, job, workerId);
  throw new PermanentJobError(`unknown job kind '${job.kind}'`);
}

async function processExtract(deps: WorkerDeps, job: Job, workerId: string): Promise<void> {
  const parsed = ExtractJobPayloadSchema.safeParse(job.payload);
  if (!parsed.success) throw new PermanentJobError(`invalid extract payload: ${parsed.error.message}`);
  const payload = parsed.data;
  // The LLM calls happen outside any transaction: no locks are held while the model thinks.
  const categories = await loadCategoryNames(deps.sql);
  const extraction = await runExtraction(payload, { llm: deps.llm, namespaceRoot: deps.config.namespaceRoot, categories });
  await withTenant(deps.sql, { tenantId: job.owner_id, actor: "worker:extract" }, async (tx) => {
    let dedupJobId: string | null = null;
    if (extraction.candidates.length > 0) {
      const queued = await enqueueJob(tx, {
        ownerId: job.owner_id,
        kind: "dedup",
        idempotencyKey: `extract:${job.id}`,
        payload: {
          candidates: extraction.candidates,
          session_id: payload.session_id,
          thread_id: payload.thread_id,
          project: payload.project,
          origin: "extract",
          source_job_id: job.id,
          lineage: payload.lineage,
        },
      });
      dedupJobId = queued.id;
    }
    await tx`
      insert into public.memory_events (owner_id, thread_id, node, op, status, meta)
      values (${job.owner_id}, ${payload.thread_id ?? null}, 'worker', 'extract', 'ok',
              ${tx.json({ job_id: job.id, session_id: payload.session_id, offset: payload.offset, messages: payload.messages.length, mode: extraction.mode, candidates: extraction.candidates.length, stats: extraction.stats, tokens: extraction.usage?.totalTokens ?? 0 } as never)})`;
    await completeJobInTx(tx, job.id, workerId, {
      mode: extraction.mode,
      offset: payload.offset,
      messages: payload.messages.length,
      candidates: extraction.candidates.length,
      dedup_job_id: dedupJobId,
      stats: extraction.stats,
      usage: extraction.usage ?? null,
    });
  }, { threadId: payload.thread_id });
}

async function processDedup(deps: WorkerDeps, job: Job, workerId: string): Promise<void> {
  const parsed = DedupJobPayloadSchema.safeParse(job.payload);
  if (!parsed.success) throw new PermanentJobError(`invalid dedup payload: ${parsed.error.message}`);
  const payload = parsed.data;
  const vectors = payload.candidates.length > 0 ? await deps.embedder.embed(payload.candidates.map((c) => c.content)) : [];
  await withTenant(deps.sql, { tenantId: job.owner_id, actor: "worker:dedup" }, async (tx) => {
    const report = await dedupCandidates(
      tx,
      { embedder: deps.embedder, llm: deps.llm, config: deps.config },
      { ownerId: job.owner_id, sessionId: payload.session_id, threadId: payload.thread_id, origin: payload.origin, jobId: job.id, lineage: payload.lineage },
      payload.candidates,
      vectors,
    );
    await completeJobInTx(tx, job.id, workerId, report);
  }, { threadId: payload.thread_id });
}

function describeError(err: unknown): string {
  if (err instanceof LlmOutputError) return `${err.name}: ${err.message}; last output: ${err.raw.slice(0, 300)}`;
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  return String(err);
}

/** An 'error' event in the tenant's log, so a failed job is visible without reading worker logs. */
async function recordFailure(deps: WorkerDeps, job: Job, status: string, message: string): Promise<void> {
  await withTenant(deps.sql, { tenantId: job.owner_id, actor: "worker" }, async (tx) => {
    await tx`
      insert into public.memory_events (owner_id, node, op, status, meta)
      values (${job.owner_id}, 'worker', ${job.kind === "extract" ? "extract" : "merge"}, 'error',
              ${tx.json({ job_id: job.id, job_status: status, attempts: job.attempts, error: message.slice(0, 1000) } as never)})`;
  });
}
