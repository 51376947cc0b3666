// The queue worker: claim → process → complete/fail, one job at a time, until the queue is empty or
// maxJobs were handled. Claiming and failing use the worker's privileged connection (they cross
// tenants); each job's effects run in a transaction AS the job's owner (RLS), and that same
// transaction marks the job done, so a job is either fully applied and done, or not applied at all
// (crash, error, lost lease) and claimed again later — never applied twice. A claim is a short
// lease (20 s) that a heartbeat renews while the job runs (job-lease.ts): a worker that dies gives
// its jobs back within one lease. An extract job queues the rules' candidates before it asks the
// model, and a failing model retries only its own part (extract-job.ts); a dedup job applies each
// candidate in a transaction of its own that records it in the job's progress (also lease-checked),
// so a retry goes on from the next candidate, again never applying one twice (dedup.ts).
// A job the model provider could not serve (down, or refusing the key) is postponed, not failed:
// queued again with its attempt given back (llm-outage.ts, docs/operations.md#an-outage-of-the-model-provider).
// A drain keeps inside its deadline (WORKER_DRAIN_BUDGET_MS, drain-deadline.ts): it claims no job once too
// little is left, and the running job's requests are cut in time to hand it back before a hosted runtime's
// wall-clock limit stops the worker (docs/operations.md#a-drains-deadline). A job's pass over a whole
// transcript takes its tenant's heavy turn until the cut at most (heavy-turns.ts: `drainCut`).
// Run by: the memory-worker endpoint (pg_cron + pg_net), the local server's timer, the kick after each enqueue.
import type { Sql } from "./db.ts";
import { withTenant } from "./db.ts";
import type { Embedder } from "./embeddings.ts";
import type { Config } from "./env.ts";
import {
  claimJobs,
  failJob,
  handBackCutJob,
  type Job,
  type JobKind,
  LeaseLostError,
  PermanentJobError,
  postponeJob,
} from "./jobs.ts";
import { EmbeddingsWatch, ProviderUnavailableError, ProviderWatch, unavailableProvider } from "./llm-outage.ts";
import { providerName } from "./provider-name.ts";
import { type Llm, LlmOutputError, LlmRequestError } from "./llm.ts";
import { storableJson } from "./unsafe-characters.ts";
import { processDedupJob } from "./dedup-jobs.ts";
import { isGraphJob, processGraphJob } from "./graph-jobs.ts";
import { ModelPartError, processExtract } from "./extract-job.ts";
import { DEFAULT_LEASE_SECONDS, whileHoldingLease } from "./job-lease.ts";
import {
  cutByTheDeadline,
  DEFAULT_DRAIN_BUDGET_MS,
  DrainDeadline,
  embedderUntil,
  TurnCutError,
} from "./drain-deadline.ts";
import { isBackgroundJob, processBackgroundJob } from "./background-jobs.ts";
import { processVectorIndexJob } from "./vector-index-job.ts";

export interface WorkerDeps {
  sql: Sql;
  config: Config;
  embedder: Embedder;
  llm?: Llm;
  clock?: () => Date;
  drainCut?: AbortSignal;
}

/** What a function that queues write jobs needs: the worker's dependencies and how to start it. */
export interface QueueingDeps extends WorkerDeps {
  /** Starts draining the queue after a 202; defaults to an in-process drain. Tests pass a no-op. */
  kickWorker?: () => Promise<unknown>;
}

export interface DrainOptions {
  maxJobs?: number;
  workerId?: string;
  /** How long a claim lasts without a renewal (default 20 s); renewed every third of it while the job runs. */
  leaseSeconds?: number;
  /** Called after each lease renewal (tests count heartbeats). */
  onLeaseRenewed?: (jobId: string, held: boolean) => void;
  /** First retry delay; doubles per attempt (fail_job). */
  backoffBaseMs?: number;
  /** First wait of a job the model provider could not serve (postpone_job, 30 s); doubles each time in a row. */
  outageBackoffBaseMs?: number;
  kinds?: JobKind[];
  /** Only this tenant's jobs (tests, per-tenant drains). */
  ownerId?: string;
  /** The drain's wall-clock budget (default: config.workerDrainBudgetMs, else 120 s; drain-deadline.ts). */
  budgetMs?: number;
  /** The deadline's clock (tests: one they move by hand). */
  clock?: ConstructorParameters<typeof DrainDeadline>[1];
}

export interface DrainReport {
  claimed: number;
  done: number;
  retried: number;
  dead: number;
  /** Queued again, their attempt given back: the model provider was unavailable (llm-outage.ts). */
  postponed: number;
  /** Which provider (the model's, the embeddings', or both, `; ` apart) was found unavailable in this run, and the failure. */
  provider_unavailable?: string;
  lease_lost: number;
  /** Jobs cut after they recorded progress: queued again at once, their attempt given back. */
  handed_back: number;
  /** Jobs that failed because the drain's deadline cut their requests (then postponed, or counted when the probe was answered). */
  cut: number;
  /** Set when the drain stopped claiming because too little of its budget was left. */
  out_of_time?: true;
  jobs: { id: string; kind: string; status: string; error?: string }[];
}

export function defaultWorkerId(): string {
  return `worker:${Deno.env.get("SB_EXECUTION_ID") ?? Deno.hostname?.() ?? "local"}:${crypto.randomUUID().slice(0, 8)}`;
}

export async function drainQueue(deps: WorkerDeps, opts: DrainOptions = {}): Promise<DrainReport> {
  const budgetMs = opts.budgetMs ?? deps.config.workerDrainBudgetMs ?? DEFAULT_DRAIN_BUDGET_MS;
  const deadline = new DrainDeadline(budgetMs, opts.clock, deps.config.llm.timeoutMs);
  try {
    return await drainWithin(deadline, deps, opts);
  } finally {
    deadline.end();
  }
}

async function drainWithin(deadline: DrainDeadline, deps: WorkerDeps, opts: DrainOptions): Promise<DrainReport> {
  const workerId = opts.workerId ?? defaultWorkerId();
  const maxJobs = opts.maxJobs ?? 25;
  const report: DrainReport = {
    claimed: 0,
    done: 0,
    retried: 0,
    dead: 0,
    postponed: 0,
    lease_lost: 0,
    cut: 0,
    handed_back: 0,
    jobs: [],
  };
  // One watch a run, of the model and of the embeddings: once a provider is found unavailable, the
  // run's later jobs do not ask it (nor probe it) again.
  const watch = deps.llm &&
    new ProviderWatch(deps.llm, deadline, providerName("model", { ...deps.config.llm, model: deps.llm.model }));
  const embeddings = new EmbeddingsWatch(
    embedderUntil(deps.embedder, deadline),
    deps.embedder,
    providerName("embeddings", { ...deps.config.embedding, model: deps.embedder.model }),
  );
  const runDeps = { ...deps, llm: watch, embedder: embeddings, drainCut: deadline.cut };
  while (report.claimed < maxJobs) {
    // The first job is claimed whatever the budget (a budget under one request's timeout would claim none).
    if (report.claimed > 0 && !deadline.roomForAJob()) {
      report.out_of_time = true;
      break;
    }
    const leaseSeconds = opts.leaseSeconds ?? DEFAULT_LEASE_SECONDS;
    const [job] = await claimJobs(deps.sql, {
      workerId,
      limit: 1,
      leaseSeconds,
      kinds: opts.kinds,
      ownerId: opts.ownerId,
    });
    if (!job) break;
    report.claimed++;
    try {
      const onRenewed = opts.onLeaseRenewed && ((held: boolean) => opts.onLeaseRenewed!(job.id, held));
      await whileHoldingLease(
        deps.sql,
        job.id,
        workerId,
        { leaseSeconds, onRenewed },
        // Judged while the lease is held: the probe is a request too.
        () =>
          processJob(runDeps, job, workerId).catch(async (err) => {
            const cause = err instanceof ModelPartError ? err.modelError : err;
            if (cutByTheDeadline(err)) report.cut++;
            const provider = await unavailableProvider(watch, embeddings, cause, deadline.probeRoom());
            throw provider ? new ProviderUnavailableError(err, provider) : err;
          }),
      );
      report.done++;
      report.jobs.push({ id: job.id, kind: job.kind, status: "done" });
    } catch (err) {
      if (err instanceof LeaseLostError) {
        // Another worker owns it now; our writes were rolled back with the completion.
        report.lease_lost++;
        report.jobs.push({ id: job.id, kind: job.kind, status: "lease_lost", error: err.message });
        continue;
      }
      if (err instanceof ProviderUnavailableError) {
        const message = `${err.provider}: ${describeError(err.failure)}`;
        const status = await postponeJob(deps.sql, job.id, workerId, message, {
          backoffBaseMs: opts.outageBackoffBaseMs,
        });
        if (status) report.postponed++;
        else report.lease_lost++;
        report.provider_unavailable = [watch?.unavailable, embeddings.unavailable].filter(Boolean).join("; ");
        report.jobs.push({ id: job.id, kind: job.kind, status: status ?? "lease_lost", error: message });
        await recordFailure(deps, job, status ?? "unknown", `provider unavailable: ${message}`).catch(() => {});
        continue;
      }
      const message = describeError(err);
      // Cut after progress: its attempt given back, so a job longer than its attempts' windows goes on.
      const ranNothing = err instanceof TurnCutError;
      if (cutByTheDeadline(err) && await handBackCutJob(deps.sql, job, workerId, message, ranNothing) === "queued") {
        report.handed_back++;
        report.jobs.push({ id: job.id, kind: job.kind, status: "queued", error: message });
        continue;
      }
      const cause = err instanceof ModelPartError ? err.modelError : err;
      const retryable = !(cause instanceof PermanentJobError) &&
        !(cause instanceof LlmRequestError && !cause.retryable);
      const status = await failJob(deps.sql, job.id, workerId, message, {
        retryable,
        backoffBaseMs: opts.backoffBaseMs,
      });
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
  if (job.kind === "dedup") return await processDedupJob(deps, job, workerId);
  if (isGraphJob(job.kind)) return await processGraphJob(deps, job, workerId);
  if (isBackgroundJob(job.kind)) return await processBackgroundJob(deps, job, workerId);
  if (job.kind === "vector_index") return await processVectorIndexJob(deps, job, workerId);
  throw new PermanentJobError(`unknown job kind '${job.kind}'`);
}

/**
 * The failure as the job's last_error records it: storable (no NUL, which Postgres text refuses). A
 * model answer or a provider's error body holding one made fail_job itself fail: the drain threw,
 * its report lost and its later jobs unrun, and the job, left running, did the same at each claim.
 */
function describeError(err: unknown): string {
  return storableJson(describeFailure(err));
}

function describeFailure(err: unknown): string {
  if (err instanceof ModelPartError && err.modelError instanceof LlmOutputError) {
    return `${err.name}: ${err.message}; last output: ${err.modelError.raw.slice(0, 300)}`;
  }
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
              ${
      tx.json({ job_id: job.id, job_status: status, attempts: job.attempts, error: message.slice(0, 1000) } as never)
    })`;
  });
}
