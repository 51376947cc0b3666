// A worker holds a job by a lease: the job is claimable again once locked_until passes. The lease
// is short and renewed while the worker works on the job (a heartbeat), so a worker that dies (a
// killed server, an edge function stopped at its time limit) gives its jobs back within one lease,
// while a slow one (a long model call) keeps them. The job's effects commit with its completion,
// which checks the lease, so a job is never applied twice (docs/operations.md#stale-job-leases).
import type { Sql } from "./db.ts";
import { renewJobLease } from "./jobs.ts";

/** How long a claim lasts without a renewal: a dead worker's jobs resume within it. */
export const DEFAULT_LEASE_SECONDS = 20;

export interface LeaseOptions {
  leaseSeconds: number;
  /** Called after each renewal with whether the worker still held the job (tests count them). */
  onRenewed?: (held: boolean) => void;
}

/** Runs work while renewing the job's lease every third of it; the renewals stop when work ends. */
export async function whileHoldingLease<T>(
  sql: Sql,
  jobId: string,
  workerId: string,
  opts: LeaseOptions,
  work: () => Promise<T>,
): Promise<T> {
  let renewal: Promise<void> | undefined;
  let warned = false;
  const timer = setInterval(() => {
    if (renewal) return; // the previous renewal is still waiting for the database
    renewal = renewJobLease(sql, jobId, workerId, opts.leaseSeconds)
      .then((held) => opts.onRenewed?.(held))
      .catch((err) => {
        if (!warned) {
          console.error(
            JSON.stringify({ level: "warn", msg: "job lease renewal failed", job_id: jobId, error: String(err) }),
          );
        }
        warned = true;
      })
      .finally(() => (renewal = undefined));
  }, (opts.leaseSeconds * 1000) / 3);
  try {
    return await work();
  } finally {
    clearInterval(timer);
    await renewal;
  }
}
