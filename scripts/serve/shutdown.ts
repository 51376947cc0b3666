// The local server's close(), a step at a time (scripts/serve.ts): stop the background loops, stop
// listening, let requests in flight answer, write the searches' writes still waiting, let the work
// run after answers finish, end the pools. Each step is given at most CLOSE_STEP_MS. A step that
// does not finish in time is named in the error close() rejects with, with what it still waited
// for, and the steps after it run anyway (the pools are ended). Unbounded, a step that waited on a
// promise nothing would settle was a process that ended with nothing said (Deno's "Promise
// resolution is still pending but the event loop has already resolved"), as after a database
// restart in tests/db_outage.test.ts (docs/operations.md#database-outages).

/** The longest one step of a server's close() waits: more than the pool's own end (10 s flush + 5 s). */
export const CLOSE_STEP_MS = 30_000;

/** One step of a close: its name, its work, and what it still waits for (said when it times out). */
export interface CloseStep {
  name: string;
  run: () => Promise<unknown>;
  pending?: () => string;
}

/** The error of a close whose steps did not all finish: which ones, and what each still waited for or failed with. */
export class CloseIncompleteError extends Error {
  constructor(readonly unfinished: string[]) {
    super(`close(): ${unfinished.join("; ")}`);
    this.name = "CloseIncompleteError";
  }
}

/** Runs the steps in order, each for at most `ms`; rejects with CloseIncompleteError naming the late or failed ones. */
export async function closeInSteps(steps: CloseStep[], ms = CLOSE_STEP_MS): Promise<void> {
  const unfinished: string[] = [];
  for (const step of steps) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<{ late: true }>((resolve) => (timer = setTimeout(() => resolve({ late: true }), ms)));
    const done = step.run().then(() => ({ failed: undefined }), (err: unknown) => ({ failed: err ?? "failed" }));
    const outcome = await Promise.race([done, late]);
    clearTimeout(timer);
    if ("late" in outcome) {
      unfinished.push(`${step.name} did not finish within ${ms} ms${step.pending ? ` (${step.pending()})` : ""}`);
    } else if (outcome.failed !== undefined) unfinished.push(`${step.name} failed: ${String(outcome.failed)}`);
  }
  if (unfinished.length > 0) throw new CloseIncompleteError(unfinished);
}
