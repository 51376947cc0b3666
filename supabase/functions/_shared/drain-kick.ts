// The drain a write starts after its answer (memory-extract, memory-dedup, memory-compact, and the
// memory API's writes that queue work), bounded per function instance: at most
// WORKER_KICKED_DRAINS (default 1) run at once. Each drain asks the model one job at a time, so
// unbounded kicks made a flooding tenant's POSTs (60 extracts a minute) as many requests to the
// provider at once, whose 429s postpone every tenant's jobs (llm-outage.ts), and grew the
// instance's memory with the flood. A write that arrives while the drains run starts none: it is
// owed a round, which a running drain runs once its own round ends — so its job is still taken by
// this instance, not left for the next cron tick. A round that came back full (maxJobs claimed,
// more may wait) goes on too, up to one round per write taken in, as the writes' own drains would.
// docs/operations.md#drains-after-a-write.
import { runInBackground } from "./jobs.ts";

/** The jobs one kicked drain claims at most before it looks again for writes that came in. */
export const KICK_MAX_JOBS = 10;
export const DEFAULT_KICKED_DRAINS = 1;

type Drain = () => Promise<unknown>;

let running = 0;
/** Writes that came in while `running` drains were at the bound, and the latest one's drain. */
let owed = 0;
let waiting: Drain | undefined;

/**
 * Drains the queue after a write queued work, outside the request (runInBackground); or, when
 * `limit` drains of this instance already run, leaves it to them.
 */
export function kickDrain(drain: Drain, label: string, limit = DEFAULT_KICKED_DRAINS): void {
  if (running >= limit) {
    owed++;
    waiting = drain;
    return;
  }
  running++;
  runInBackground(() => drainWhileQueued(drain, label), label);
}

/** How many kicked drains this instance runs now (tests, logs). */
export function kickedDrainsRunning(): number {
  return running;
}

/**
 * Rounds of `drain` while writes come in, and while a round comes back full, as many rounds as
 * writes were taken in: no more than the drains those writes started before the bound, one after
 * the other instead of at once.
 */
async function drainWhileQueued(first: Drain, label: string): Promise<void> {
  try {
    let next: Drain | undefined = first;
    let rounds = 1;
    while (next) {
      // The writes so far queued their jobs before this round looks: it takes them in.
      rounds += owed - 1;
      owed = 0;
      const report = await next().catch((err) => {
        console.error(JSON.stringify({ level: "warn", msg: `${label} failed`, error: String(err) }));
      });
      if (owed > 0) next = waiting;
      else if (!cameBackFull(report) || rounds === 0) next = undefined;
    }
  } finally {
    // In the same step as the last look at `owed`: a write after it finds a free slot.
    running--;
  }
}

/** A drain report that claimed its maxJobs within its time: the queue may hold more. */
function cameBackFull(report: unknown): boolean {
  if (!report || typeof report !== "object" || !("claimed" in report)) return false;
  const r = report as { claimed: number; out_of_time?: true };
  return r.claimed >= KICK_MAX_JOBS && !r.out_of_time;
}
