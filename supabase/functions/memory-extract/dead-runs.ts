// The messages dead parts held that a POST queues again (next-part.ts), split into runs: each run
// is what one dead part held last, so it is queued as a job of its own. One job for all of them
// let a message that always kills its job take down messages that died with another job (an
// outage), and give them up with it after three jobs (docs/extraction.md#a-message-that-always-kills-its-job).

/** Uncovered messages [from, to) that one dead part (not given up) held last, and the tries of the job that queues them again. */
export interface DeadRun {
  from: number;
  to: number;
  tries: number;
}

/**
 * The uncovered positions up to the last one a dead part held (`[i, dead part, its tries]`, i from
 * coveredFrom's `from`) as runs of contiguous messages one dead part held last: a run ends where the
 * positions stop being contiguous (a covering part holds the messages between) or another dead part
 * starts holding them. A position no dead part held (a deleted job's) stays in the run it lies in.
 */
export function deadRuns(from: number, gaps: readonly [number, string | null, number | null][]): DeadRun[] {
  const runs: (DeadRun & { job: string | null })[] = [];
  for (const [i, job, tries] of gaps) {
    const run = runs.at(-1);
    if (run && run.to === from + i - 1 && (job === null || run.job === null || job === run.job)) {
      run.to = from + i;
      run.job ??= job;
      run.tries = Math.max(run.tries, (tries ?? 0) + 1);
    } else runs.push({ from: from + i - 1, to: from + i, tries: (tries ?? 0) + 1, job });
  }
  return runs.map(({ job: _, ...run }) => run);
}
