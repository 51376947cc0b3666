// Long work of one request in slices: other tenants' requests on the same server are answered
// between them instead of waiting for the whole (a compaction counts and redacts up to 8 MiB).
// One slice for all the work of a request, not one a text: a request of thousands of small
// messages, each counted in under a slice, gave the event loop back never (300 ms stretches).

/** Longest stretch of work before other requests get the event loop back. */
export const SLICE_MS = 10;

/**
 * How long the queue worker's passes rest after each slice (extract-job.ts, consolidation.ts): the
 * worker is background work, so it takes at most half the loop, and a request's next step (a
 * database answer) is handled in the rest instead of after the next slice. While twenty queued
 * 7.7 MB extractions were drained, another tenant's retrieval took p50 52 ms, p95 143 ms without
 * the rest; 18-21 ms, 41-55 ms with it (docs/operations.md#heavy-requests-take-turns).
 */
export const BACKGROUND_REST_MS = SLICE_MS;

export class EventLoopSlice {
  #since = performance.now();

  /** `restMs`: how long yield() gives the loop (0: one turn of it; background work: BACKGROUND_REST_MS). */
  constructor(private readonly restMs = 0) {}

  /** Whether the slice is used up (a check cheap enough for every step of a loop). */
  due(): boolean {
    return performance.now() - this.#since > SLICE_MS;
  }

  /** Gives the event loop back, and starts a new slice. */
  async yield(): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, this.restMs));
    this.#since = performance.now();
  }
}
