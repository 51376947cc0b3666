// Long work of one request in slices: other tenants' requests on the same server are answered
// between them instead of waiting for the whole (a compaction counts and redacts up to 8 MiB).
// One slice for all the work of a request, not one a text: a request of thousands of small
// messages, each counted in under a slice, gave the event loop back never (300 ms stretches).

/** Longest stretch of work before other requests get the event loop back. */
export const SLICE_MS = 10;

export class EventLoopSlice {
  #since = performance.now();

  /** Whether the slice is used up (a check cheap enough for every step of a loop). */
  due(): boolean {
    return performance.now() - this.#since > SLICE_MS;
  }

  /** Gives the event loop back, and starts a new slice. */
  async yield(): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 0));
    this.#since = performance.now();
  }
}
