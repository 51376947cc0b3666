// The queue worker the local server runs: memory-worker's drainQueue on a short timer, as pg_cron +
// pg_net call the memory-worker endpoint in production. (The maintenance jobs pg_cron runs are in
// maintenance-scheduler.ts.)
import { drainQueue, type DrainReport, type WorkerDeps } from "../../supabase/functions/_shared/drain-queue.ts";
import type { Log } from "./maintenance-scheduler.ts";

export interface QueueWorker {
  /** Stops the timer; resolves once the drain in flight (if any) has ended. */
  stop(): Promise<void>;
}

/** A line worth logging: a drain that did work or had failures. */
function summarize(report: DrainReport): string | undefined {
  const numbers = Object.entries(report).filter(([, v]) => typeof v === "number") as [string, number][];
  if (!numbers.some(([, v]) => v > 0)) return undefined;
  // Jobs postponed because the model provider is down or refuses the key: the log says why.
  const unavailable = report.provider_unavailable ? ` provider unavailable: ${report.provider_unavailable}` : "";
  return numbers.map(([k, v]) => `${k}=${v}`).join(" ") + unavailable;
}

/** Distinct failure messages kept per outage: each was logged once; one dropped may be logged again. */
export const MAX_FAILURES_SAID = 100;

/**
 * The failures of the drains since the last one that succeeded: each distinct message is logged
 * once, not every 2 s. Compared with the last message only, two errors that take turns (an exited
 * embedded backend: "terminating connection … restart the server", then "This socket has been ended
 * by the other party") were logged at every drain. Only the last MAX_FAILURES_SAID messages are kept:
 * an outage whose every drain fails with a new message (one naming a time or a port) grew the set by
 * one entry a drain, every 2 s for as long as it lasted.
 */
export class DrainFailures {
  /** Failed drains in a row. */
  drains = 0;
  readonly #said = new Set<string>();

  /** Counts a failed drain; whether its message is to be logged (not said in this outage yet). */
  failed(message: string): boolean {
    this.drains++;
    if (this.#said.has(message)) return false;
    this.#said.add(message);
    if (this.#said.size > MAX_FAILURES_SAID) this.#said.delete(this.#said.values().next().value!);
    return true;
  }

  /** A drain succeeded: how many had failed in a row before it (the outage is over). */
  succeeded(): number {
    const failed = this.drains;
    this.drains = 0;
    this.#said.clear();
    return failed;
  }

  /** How many messages are kept (tests). */
  get said(): number {
    return this.#said.size;
  }
}

export function startQueueWorker(opts: {
  deps: WorkerDeps;
  intervalMs: number;
  maxJobs?: number;
  workerId: string;
  log: Log;
  /** Only this tenant's jobs (tests). */
  ownerId?: string;
}): QueueWorker {
  let stopped = false;
  let running: Promise<void> | undefined;
  const failing = new DrainFailures();
  const tick = () => {
    if (stopped || running) return; // never two drains at once
    running = (async () => {
      const started = performance.now();
      try {
        const summary = summarize(
          await drainQueue(opts.deps, { maxJobs: opts.maxJobs ?? 25, workerId: opts.workerId, ownerId: opts.ownerId }),
        );
        const failed = failing.succeeded();
        if (failed > 0) opts.log(`[worker] draining again after ${failed} failed drain(s)`);
        if (summary) opts.log(`[worker] ${summary} (${Math.round(performance.now() - started)}ms)`);
      } catch (err) {
        const message = (err as Error).message ?? String(err);
        if (failing.failed(message)) opts.log(`[worker] drain failed: ${message}`);
      }
    })().finally(() => {
      running = undefined;
    });
  };
  const timer = setInterval(tick, opts.intervalMs);
  opts.log(`[worker] draining memory_jobs every ${opts.intervalMs / 1000}s as ${opts.workerId}`);
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
