// A drain's clock the test moves (drain-deadline.ts DrainClock): the drain's cut comes when the test
// says, after the event it waits on (the fake provider received the request), never after a share
// of a wall-clock budget that a loaded machine may spend before the request is even sent.
import type { DrainClock } from "../../supabase/functions/_shared/drain-deadline.ts";
import {
  type DrainOptions,
  drainQueue,
  type DrainReport,
  type WorkerDeps,
} from "../../supabase/functions/_shared/drain-queue.ts";
import type { FakeOpenAI } from "../fake_openai.ts";

export class ManualClock implements DrainClock {
  private t = 0;
  private readonly timers = new Set<{ at: number; fire: () => void }>();

  /** `tick`: how far the clock moves each time it is read (a drain whose reads spend its budget). */
  constructor(private readonly tick = 0) {}

  now(): number {
    if (this.tick) this.set(this.t + this.tick);
    return this.t;
  }

  at(at: number, fire: () => void): () => void {
    const timer = { at, fire };
    this.timers.add(timer);
    return () => this.timers.delete(timer);
  }

  /** Sets the time; the timers now due fire, in their order. */
  set(t: number): void {
    this.t = t;
    const due = [...this.timers].filter((timer) => timer.at <= t).sort((a, b) => a.at - b.at);
    for (const timer of due) {
      this.timers.delete(timer);
      timer.fire();
    }
  }

  /** Moves the clock to its next timer (a drain's cut) and fires it; the time it fired at. */
  toNextTimer(): number {
    const next = Math.min(...[...this.timers].map((timer) => timer.at));
    if (!Number.isFinite(next)) throw new Error("ManualClock: no timer is set");
    this.set(next);
    return next;
  }
}

/**
 * A drain on the test's clock whose job's model request hangs: once the fake provider has received
 * `requests` chat requests in all (the hanging one the last), the clock is moved to the drain's cut.
 * Without `requests` the drain runs uncut. Returns the report and the time of the cut.
 */
export async function drainCutAt(
  env: { deps: WorkerDeps; fake: FakeOpenAI },
  opts: Omit<DrainOptions, "clock">,
  requests?: number,
): Promise<{ report: DrainReport; cutAt?: number }> {
  const clock = new ManualClock();
  const drained = drainQueue(env.deps, { ...opts, clock });
  if (requests === undefined) return { report: await drained };
  await Promise.race([env.fake.chatRequestsReceived(requests), drained]);
  const cutAt = clock.toNextTimer();
  return { report: await drained, cutAt };
}
