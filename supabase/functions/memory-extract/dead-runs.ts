// The messages dead parts held that a POST queues again (next-part.ts), split into runs: each run
// is what one dead part held last, so it is queued as a job of its own. One job for all of them
// let a message that always kills its job take down messages that died with another job (an
// outage), and give them up with it after three jobs (docs/extraction.md#a-message-that-always-kills-its-job).
import type { Tx } from "../_shared/db.ts";

/** Uncovered messages [from, to) that one dead part (not given up) held last, and the tries of the job that queues them again. */
export interface DeadRun {
  from: number;
  to: number;
  tries: number;
  /** The job of the dead part that held them last (null: a deleted job's). */
  job: string | null;
}

/**
 * The uncovered positions up to the last one a dead part held (`[i, dead part, its tries]`, i from
 * coveredFrom's `from`) as runs of contiguous messages one dead part held last: a run ends where the
 * positions stop being contiguous (a covering part holds the messages between) or another dead part
 * starts holding them. A position no dead part held (a deleted job's) stays in the run it lies in.
 */
export function deadRuns(from: number, gaps: readonly [number, string | null, number | null][]): DeadRun[] {
  const runs: DeadRun[] = [];
  for (const [i, job, tries] of gaps) {
    const run = runs.at(-1);
    if (run && run.to === from + i - 1 && (job === null || run.job === null || job === run.job)) {
      run.to = from + i;
      run.job ??= job;
      run.tries = Math.max(run.tries, (tries ?? 0) + 1);
    } else runs.push({ from: from + i - 1, to: from + i, tries: (tries ?? 0) + 1, job });
  }
  return runs;
}

/**
 * Of these dead extract jobs, those whose last attempt failed on a request without the context
 * (extract-job.ts records `result.model.failed_without_context` with the attempt): their messages
 * fail on their own. The others' request without the context was answered (the one with it then
 * failed as a busy provider fails, extraction.ts failsForContext) or never asked: their last
 * attempt was stopped before it, a worker killed or past a wall-clock limit, and recorded nothing
 * (or a key was refused). Only those queue a part's last job without the context (next-part.ts).
 * One lookup by key a job.
 */
export async function failedOnTheirOwn(tx: Tx, jobs: readonly string[]): Promise<Set<string>> {
  if (jobs.length === 0) return new Set();
  const rows = await tx<{ id: string }[]>`
    select j.id from unnest(${jobs as string[]}::uuid[]) as d(id)
     cross join lateral (select j.id, j.attempts, j.result -> 'model' as model
                           from public.memory_jobs j where j.id = d.id limit 1) as j
     where j.model ->> 'status' = 'failed' and (j.model ->> 'attempt')::int = j.attempts
       and j.model -> 'failed_without_context' = 'true'::jsonb`;
  return new Set(rows.map((r) => r.id));
}
