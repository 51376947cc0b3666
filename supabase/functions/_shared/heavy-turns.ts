// Turns for the heavy requests' passes over their whole body (memory-extract, memory-compact: up
// to 8 MiB read, parsed, redacted or counted). That work is CPU on the process's one event loop,
// which every tenant's requests share; each pass gives the loop back every few milliseconds, but
// with many passes at once another request waits for a slice of each of them at every step it
// takes. Twenty 7.7 MB compactions of one tenant at once (its heavy burst) held another tenant's
// retrieval up to 5.5 s; taking turns, 0.22 s. So the passes take turns, as the pool's
// connections do (tenant-share.ts): at most HEAVY_TURNS at once in the process and one of a tenant,
// the tenant with the fewest running next. Running more at once finishes none sooner (one CPU).
// A request waits for its turn once its body is received (withBodyRead), so a client still sending
// holds no turn, and at most HEAVY_TURN_WAIT_FACTOR statement timeouts: then it is a 503
// heavy_busy, nothing written (docs/operations.md#heavy-requests-take-turns).
// The queue worker's passes over a queued transcript (extraction's rules and chunking, a session's
// consolidation) take the same turns, as the job's tenant: while the worker extracted twenty queued
// 7.7 MB transcripts of one tenant without them, another tenant's retrieval p95 reached 250 ms. Its
// wait holds the job's lease (renewed meanwhile, job-lease.ts) and ends at its drain's cut at the
// latest: then the job is handed back as a cut one (drain-queue.ts), having run nothing.
import { TurnCutError } from "./drain-deadline.ts";
import { HttpError } from "./http.ts";
import { AdmissionTimeout, TenantShares } from "./tenant-share.ts";

/** Heavy passes running at once in the process: one tenant's, and one left for another tenant's. */
export const HEAVY_TURNS = 2;
/** How many of the pool's statement timeouts a heavy request may wait for its turn (60 s by default). */
export const HEAVY_TURN_WAIT_FACTOR = 4;
/** Seconds a request that waited too long is told to wait: about one 8 MiB pass. */
const HEAVY_RETRY_AFTER_SECONDS = 2;

/** The process's turns (tests read their load). */
export const heavyTurns = new TenantShares(HEAVY_TURNS);

/** Runs a heavy request's pass over its body in the tenant's turn; 503 heavy_busy when none came in time. */
export async function inHeavyTurn<T>(tenantId: string, statementTimeoutMs: number, work: () => Promise<T>): Promise<T> {
  let admitted = false; // a database admission timing out inside the work is the work's own failure
  try {
    return await heavyTurns.run(tenantId, () => {
      admitted = true;
      return work();
    }, HEAVY_TURN_WAIT_FACTOR * statementTimeoutMs);
  } catch (err) {
    if (admitted || !(err instanceof AdmissionTimeout)) throw err;
    throw new HttpError(
      503,
      "heavy_busy",
      `waited ${err.waitedMs} ms behind other extract and compaction requests (one of a tenant at a time); nothing was written, send it again`,
      undefined,
      { "retry-after": String(HEAVY_RETRY_AFTER_SECONDS) },
    );
  }
}

/**
 * Runs a queued job's pass over its whole transcript in its tenant's turn, waiting at most until
 * `cut` (its drain's deadline; none outside a drain): then TurnCutError, the pass not run.
 */
export async function inWorkerTurn<T>(
  tenantId: string,
  cut: AbortSignal | undefined,
  work: () => Promise<T>,
): Promise<T> {
  let admitted = false;
  try {
    return await heavyTurns.run(
      tenantId,
      () => {
        admitted = true;
        return work();
      },
      Infinity,
      cut,
    );
  } catch (err) {
    if (admitted || !(err instanceof AdmissionTimeout)) throw err;
    throw new TurnCutError(err.waitedMs);
  }
}
