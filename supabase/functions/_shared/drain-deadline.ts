// A drain's deadline: the wall-clock budget one run of the worker has (WORKER_DRAIN_BUDGET_MS,
// 120 s by default). On hosted Supabase the memory-worker edge function is stopped at its
// wall-clock limit (150 s on the Free plan, 400 s on paid ones): a provider that hangs held the
// first job of a drain for 4 x LLM_TIMEOUT_MS, the backoff and the probe (about 260 s), so the
// runtime killed the worker before the job was postponed, the expired lease counted the attempt,
// and five such drains killed the job: an outage still killed jobs there.
//
// So a drain keeps its work inside the budget (drain-queue.ts): no job is claimed once less than
// half of the job window is left; at the cut (the budget less a reserve, 20 s or a quarter of a
// smaller budget) the running job's model and embedding requests are aborted and no new one is
// sent (a DrainCutError, a failure as a timeout's); the reserve holds the probe (llm-outage.ts,
// given what is left of it but for a quarter) and the hand-back (postpone_job or fail_job).
// docs/operations.md#a-drains-deadline.
import { type Embedder, EmbeddingError, type EmbedOptions } from "./embeddings.ts";
import { LlmRequestError, type LlmUsage } from "./llm.ts";

/** Safely under the lowest hosted limit (150 s): the cut at 100 s, a probe of 15 s, 5 s to hand back. */
export const DEFAULT_DRAIN_BUDGET_MS = 120_000;

/** The most of the budget kept for the probe (15 s, PROBE_TIMEOUT_MS) and the hand-back after the cut. */
const MAX_RESERVE_MS = 20_000;

/** A model request the drain's deadline cut (or did not send): as a timeout, the provider said nothing of the job. */
export class DrainCutError extends LlmRequestError {
  override name = "DrainCutError";
  constructor(usage: LlmUsage) {
    super("LLM request cut by the drain's deadline (WORKER_DRAIN_BUDGET_MS)", undefined, true, usage);
  }
}

/** An embedding request the drain's deadline cut: transient, as a timeout (llm-outage.ts embeddingsUnavailable). */
export class EmbeddingCutError extends EmbeddingError {
  override name = "EmbeddingCutError";
  constructor() {
    super("embedding request cut by the drain's deadline (WORKER_DRAIN_BUDGET_MS)", undefined, true);
  }
}

/**
 * A job's pass over its transcript that waited for its tenant's turn (heavy-turns.ts) until the cut:
 * it ran nothing and asked nothing, and is handed back as a job whose requests were cut.
 */
export class TurnCutError extends Error {
  override name = "TurnCutError";
  constructor(waitedMs: number) {
    super(
      `waited ${waitedMs} ms for a heavy turn until the drain's deadline (WORKER_DRAIN_BUDGET_MS); nothing was run`,
    );
  }
}

/**
 * Whether a job failed because the drain's deadline cut one of its requests (or its wait for a turn) (report.cut), not of its
 * own after the cut (a refusal, a bad payload, a lease lost): the cut's errors, found through the
 * causes a job's failure wraps them in (ModelPartError's modelError, Error.cause).
 */
export function cutByTheDeadline(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 10; depth++) {
    if (e instanceof DrainCutError || e instanceof EmbeddingCutError || e instanceof TurnCutError) return true;
    e = (e as { modelError?: unknown }).modelError ?? e.cause;
  }
  return false;
}

/**
 * The drain's clock: the time in ms, and a timer on that time. The real one reads performance.now()
 * and sets a setTimeout; tests pass one they move by hand, so what a drain does at its cut is
 * counted, not timed on a machine whose load moves the cut (tests/support/clock.ts).
 */
export interface DrainClock {
  now(): number;
  /** Calls `fire` once the clock reads `at` or later; returns what cancels it. */
  at(at: number, fire: () => void): () => void;
}

export const realClock: DrainClock = {
  now: () => performance.now(),
  at(at, fire) {
    // A delay past 2^31 - 1 ms would fire at once (setTimeout's limit): such a budget never cuts.
    const timer = setTimeout(fire, Math.min(Math.max(0, at - performance.now()), 2 ** 31 - 1));
    return () => clearTimeout(timer);
  },
};

export class DrainDeadline {
  private readonly start: number;
  private readonly reserveMs: number;
  private readonly controller = new AbortController();
  private readonly cancelCut: () => void;

  /** `requestTimeoutMs`: how long one model request may take on its own (LLM_TIMEOUT_MS). */
  constructor(
    readonly budgetMs: number,
    private readonly clock: DrainClock = realClock,
    private readonly requestTimeoutMs = 0,
  ) {
    this.start = clock.now();
    this.reserveMs = Math.min(MAX_RESERVE_MS, budgetMs / 4);
    this.cancelCut = clock.at(this.start + budgetMs - this.reserveMs, () => this.controller.abort());
  }

  /** Aborts the running job's requests at the cut. */
  get cut(): AbortSignal {
    return this.controller.signal;
  }

  /** Ms until the cut. */
  untilCut(): number {
    return this.start + this.budgetMs - this.reserveMs - this.clock.now();
  }

  /**
   * Whether a job may be claimed: while half of the window before the cut is left, and at least one
   * model request's own timeout and 5 s more (so a slow provider that answers within its timeout
   * is not cut for the drain's lateness: with a provider that answers the probe, a cut counts the
   * attempt). The drain's first job is claimed whatever is left (drain-queue.ts).
   */
  roomForAJob(): boolean {
    const window = this.budgetMs - this.reserveMs;
    return this.untilCut() >= Math.max(window / 2, this.requestTimeoutMs + 5_000);
  }

  /** How long a probe may take now: the time left but the last quarter of the reserve, kept to hand the job back. */
  probeRoom(): number {
    return this.start + this.budgetMs - this.reserveMs / 4 - this.clock.now();
  }

  /** The cut in epoch ms, for the clients: no retry is started whose wait would end past it. */
  cutAt(): number {
    return Date.now() + this.untilCut();
  }

  /** The request's own signal and the cut's. */
  signal(own?: AbortSignal): AbortSignal {
    return own ? AbortSignal.any([own, this.cut]) : this.cut;
  }

  end(): void {
    this.cancelCut();
  }
}

/** The embedder as a drain's jobs see it: its requests aborted at the cut, none sent after it. */
export function embedderUntil(embedder: Embedder, deadline: DrainDeadline): Embedder {
  return {
    provider: embedder.provider,
    model: embedder.model,
    dimensions: embedder.dimensions,
    async embed(texts: string[], opts?: EmbedOptions) {
      if (deadline.cut.aborted) throw new EmbeddingCutError();
      try {
        return await embedder.embed(texts, { signal: deadline.signal(opts?.signal), deadline: deadline.cutAt() });
      } catch (err) {
        if (deadline.cut.aborted && !opts?.signal?.aborted) throw new EmbeddingCutError();
        throw err;
      }
    },
  };
}
