// Durable jobs on public.memory_jobs (SQL side: migrations/20261122002000_job_queue.sql).
//
// - enqueueJob runs inside the caller's tenant transaction, so the job exists before any 202 goes
//   out, as the service (tenants only read their jobs); the idempotency key makes re-submission a
//   no-op that returns the existing job.
// - claimJobs / failJob run on the worker's privileged connection (they cross tenants).
// - completeJobInTx is called at the END of the tenant transaction that applied the job's effects:
//   effects and completion commit together, and a worker that lost its lease (a slow worker whose
//   job was re-claimed) rolls its writes back instead of writing twice.
import { outsideShares } from "./tenant-share.ts";
import { asService, type Sql, type Tx } from "./db.ts";
import { inRequest, outsideRequest } from "./rate-limit.ts";
import { HttpError } from "./http.ts";
import { storableJson } from "./unsafe-characters.ts";

/** memory_jobs.kind: the write path's extract and dedup, the graph's jobs (graph-jobs.ts), the background ones (background-jobs.ts), a tenant's own vector index (vector-index-job.ts), the entity pass of memories never linked (entity-backfill.ts). */
export type JobKind =
  | "extract"
  | "dedup"
  | "embed"
  | "consolidate"
  | "enrich"
  | "causal"
  | "nightly_consolidation"
  | "contradiction_check"
  | "insight"
  | "reindex"
  | "vector_index"
  | "entity_backfill";
export type JobStatus = "queued" | "running" | "done" | "dead";

export interface Job<P = Record<string, unknown>> {
  id: string;
  owner_id: string;
  kind: JobKind;
  status: JobStatus;
  payload: P;
  idempotency_key: string;
  attempts: number;
  max_attempts: number;
  run_after: Date;
  locked_until: Date | null;
  locked_by: string | null;
  last_error: string | null;
  result: unknown;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
}

export interface EnqueueResult {
  id: string;
  status: JobStatus;
  /** True when a job with the same idempotency key already existed (nothing new was queued). */
  deduplicated: boolean;
}

/**
 * Queues a job for the transaction's tenant, or returns the existing one with that key. Tenants
 * cannot insert jobs themselves: memory_private.enqueue_job runs as the service (asService), and
 * the queue's fair order (fair_key) is set there by a trigger. docs/operations.md#job-queue.
 * Inside a tenant's request a new job is queued within the tenant's bound (enqueue_tenant_job):
 * past it the request is a 429 queue_full and its transaction writes nothing. The worker's own jobs
 * (outside any request) are not bounded. docs/operations.md#a-tenants-queued-jobs.
 */
export async function enqueueJob(
  tx: Tx,
  job: { ownerId: string; kind: JobKind; idempotencyKey: string; payload: unknown; maxAttempts?: number },
): Promise<EnqueueResult> {
  const enqueue = inRequest() ? tx`memory_private.enqueue_tenant_job` : tx`memory_private.enqueue_job`;
  const [row] = await asService(tx, () =>
    tx<(EnqueueResult & { retry_after?: number })[]>`
      select *
        from ${enqueue}(${job.ownerId}, ${job.kind}, ${job.idempotencyKey},
                        ${tx.json(job.payload as never)}, ${job.maxAttempts ?? 5})`);
  if (row?.retry_after) throw queueFull(row.retry_after);
  // Only when each of enqueue_job's tries met a job that was deleted before it was read (docs/operations.md#job-queue).
  if (!row) throw new Error("enqueueJob: no job queued or found");
  return { id: row.id, status: row.status, deduplicated: row.deduplicated };
}

/** 429 queue_full: the tenant has job_queue_tenant_max jobs queued (docs/operations.md#a-tenants-queued-jobs). */
export function queueFull(retryAfterSeconds: number): HttpError {
  return new HttpError(
    429,
    "queue_full",
    `this tenant has as many jobs queued as it may (job_queue_tenant_max); retry after ${retryAfterSeconds} s`,
    undefined,
    { "retry-after": String(retryAfterSeconds) },
  );
}

/** The job as its owner sees it (RLS), or undefined. */
export async function getJob(tx: Tx, id: string): Promise<Job | undefined> {
  const rows = await tx<Job[]>`select * from public.memory_jobs where id = ${id}`;
  return rows[0];
}

/** Public view of a job for API answers (no lease bookkeeping). */
export function jobView(job: Job) {
  return {
    job_id: job.id,
    kind: job.kind,
    status: job.status,
    attempts: job.attempts,
    max_attempts: job.max_attempts,
    last_error: job.last_error,
    result: job.result ?? null,
    created_at: job.created_at,
    updated_at: job.updated_at,
    finished_at: job.finished_at,
  };
}

export async function claimJobs(
  sql: Sql | Tx,
  opts: { workerId: string; limit?: number; leaseSeconds?: number; kinds?: JobKind[]; ownerId?: string },
): Promise<Job[]> {
  const lease = `${opts.leaseSeconds ?? 300} seconds`;
  return await sql<Job[]>`
    select * from memory_private.claim_jobs(${opts.workerId}, ${opts.limit ?? 1}, ${lease}::interval, ${
    opts.kinds ?? null
  }::text[], ${opts.ownerId ?? null}::uuid)`;
}

/** Completes on the privileged connection (for jobs with no tenant writes). */
export async function completeJob(sql: Sql | Tx, id: string, workerId: string, result: unknown): Promise<boolean> {
  const rows = await sql<{ ok: boolean }[]>`
    select memory_private.complete_job(${id}, ${workerId}, ${sql.json((result ?? null) as never)}) as ok`;
  return rows[0]?.ok === true;
}

export class LeaseLostError extends Error {
  override name = "LeaseLostError";
}

/** A job that can never succeed as it is (bad payload, unknown kind): parked as dead, not retried. */
export class PermanentJobError extends Error {
  override name = "PermanentJobError";
}

/** Leaves the tenant role for the rest of the transaction: SET LOCAL ROLE NONE returns to the worker's privileged role. */
async function leaveTenantRole(tx: Tx): Promise<void> {
  await tx`select set_config('role', 'none', true)`;
}

/**
 * Completes the job inside a tenant transaction (see module comment): leaves the tenant role for
 * the rest of the transaction and throws LeaseLostError, rolling everything back, if the worker
 * no longer holds the job.
 */
export async function completeJobInTx(tx: Tx, id: string, workerId: string, result: unknown): Promise<void> {
  await leaveTenantRole(tx);
  const ok = await completeJob(tx, id, workerId, result);
  if (!ok) throw new LeaseLostError(`job ${id}: lease lost before completion; effects rolled back`);
}

/**
 * Merges `progress` into the running job's result (what its parts did so far; it outlives retries).
 * In a tenant transaction (inTenantTx) it leaves the tenant role first and throws LeaseLostError,
 * rolling back, when the worker no longer holds the job; else it returns whether it did.
 */
export async function recordJobProgress(
  sql: Sql | Tx,
  id: string,
  workerId: string,
  progress: Record<string, unknown>,
  opts: { inTenantTx?: boolean } = {},
): Promise<boolean> {
  if (opts.inTenantTx) await leaveTenantRole(sql as Tx);
  const rows = await sql<{ ok: boolean }[]>`
    select memory_private.record_job_progress(${id}, ${workerId}, ${sql.json(storableJson(progress) as never)}) as ok`;
  const ok = rows[0]?.ok === true;
  if (!ok && opts.inTenantTx) throw new LeaseLostError(`job ${id}: lease lost; this part was rolled back`);
  return ok;
}

/** Extends the worker's lease on a running job; false when it no longer holds the job. */
export async function renewJobLease(sql: Sql, id: string, workerId: string, leaseSeconds: number): Promise<boolean> {
  const rows = await sql<{ ok: boolean }[]>`
    select memory_private.renew_job_lease(${id}, ${workerId}, ${`${leaseSeconds} seconds`}::interval) as ok`;
  return rows[0]?.ok === true;
}

export async function failJob(
  sql: Sql | Tx,
  id: string,
  workerId: string,
  error: string,
  opts: { retryable?: boolean; backoffBaseMs?: number; backoffMaxMs?: number } = {},
): Promise<JobStatus | undefined> {
  const base = `${(opts.backoffBaseMs ?? 10_000) / 1000} seconds`;
  const max = `${(opts.backoffMaxMs ?? 3_600_000) / 1000} seconds`;
  const rows = await sql<{ status: JobStatus | null }[]>`
    select memory_private.fail_job(${id}, ${workerId}, ${error}, ${
    opts.retryable ?? true
  }, ${base}::interval, ${max}::interval) as status`;
  return rows[0]?.status ?? undefined;
}

/**
 * Queues the running job again with its attempt given back, after a wait that doubles each time in
 * a row (from backoffBaseMs, 30 s, up to backoffMaxMs, 15 min): the model provider could not serve
 * it (llm-outage.ts), which says nothing of the job. Its result says so (provider_unavailable). The
 * job's status, or undefined when the worker no longer holds it. docs/operations.md#job-queue.
 */
export async function postponeJob(
  sql: Sql | Tx,
  id: string,
  workerId: string,
  error: string,
  opts: { backoffBaseMs?: number; backoffMaxMs?: number } = {},
): Promise<JobStatus | undefined> {
  const base = `${(opts.backoffBaseMs ?? 30_000) / 1000} seconds`;
  const max = `${(opts.backoffMaxMs ?? 900_000) / 1000} seconds`;
  const rows = await sql<{ status: JobStatus | null }[]>`
    select memory_private.postpone_job(${id}, ${workerId}, ${error}, ${base}::interval, ${max}::interval) as status`;
  return rows[0]?.status ?? undefined;
}

/**
 * A job the drain's deadline cut (drain-deadline.ts): when its model work advanced since it was
 * claimed (memory_private.job_progress: candidates applied, chunks answered, a proposal saved), queued
 * again at once with its attempt given back, so a job needing more drain windows than it has
 * attempts is not killed while it advances. 'queued'; 'unchanged' when it made no progress (the
 * caller fails it as before); undefined when the worker no longer holds it. A job that `ranNothing`
 * (its pass waited for a turn until the cut) is queued again whatever its progress.
 * docs/operations.md#a-drains-deadline.
 */
export async function handBackCutJob(
  sql: Sql | Tx,
  job: Pick<Job, "id" | "result">,
  workerId: string,
  error: string,
  ranNothing = false,
): Promise<"queued" | "unchanged" | undefined> {
  if (ranNothing) {
    // It waited for its heavy turn until the cut (heavy-turns.ts): queued again, its attempt given back.
    const [row] = await sql<{ status: "queued" | null }[]>`
      select memory_private.hand_back_unrun_job(${job.id}, ${workerId}, ${error}) as status`;
    return row?.status ?? undefined;
  }
  const rows = await sql<{ status: "queued" | "unchanged" | null }[]>`
    select memory_private.hand_back_cut_job(${job.id}, ${workerId}, ${
    job.result == null ? null : sql.json(job.result as never)
  }::jsonb, ${error}) as status`;
  return rows[0]?.status ?? undefined;
}

declare const EdgeRuntime: { waitUntil(p: Promise<unknown>): void } | undefined;

/**
 * Runs work after the response: EdgeRuntime.waitUntil on Supabase (keeps the isolate alive until it
 * settles), else a detached promise (local server). Failures are logged, never thrown: the job is
 * already durable and the next drain picks it up. The work is no part of the request: it is never
 * charged to the tenant's rate limit.
 */
export function runInBackground(work: () => Promise<unknown>, label = "background"): void {
  // Outside the request and outside any pool admission it holds (tenant-share.ts): it outlives them.
  const p = outsideShares(() =>
    outsideRequest(async () => {
      try {
        await work();
      } catch (err) {
        console.error(JSON.stringify({ level: "warn", msg: `${label} failed`, error: String(err) }));
      }
    })
  );
  if (typeof EdgeRuntime !== "undefined" && EdgeRuntime && typeof EdgeRuntime.waitUntil === "function") {
    EdgeRuntime.waitUntil(p);
  }
}
