// The request bodies the local server is receiving, bounded (docs/operations.md#pending-request-bodies).
// A client that sends a request's headers and part of its body, then nothing, kept its request in
// the server until it went away: the red team's 3,000 such connections grew the process from 148 to
// 780 MB (about 210 KB each: the connection, and the request waiting in its function's handler for
// the rest of the body), and it stayed there. The server now bounds them itself:
// * a body from which nothing arrives for BODY_IDLE_TIMEOUT_MS (10 s) fails its read: the function
//   answers 408 request_timeout, nothing written (a slow client that still sends is not cut: only
//   silence counts);
// * at most MAX_OPEN_BODIES (512) requests with a body are in the server at once, from their arrival
//   until their body is read or their answer is out; the next is answered 503 server_busy with
//   Retry-After at once, before any work.
// The connections themselves are bounded by the connection guard (connection-guard.ts): Deno's
// server has no idle timeout of its own. Capping connections per client is a proxy's job.
// Hosted functions are behind Supabase's gateway, which bounds them itself.
import { ConfigError } from "../../supabase/functions/_shared/env.ts";
import { HttpError } from "../../supabase/functions/_shared/http.ts";

export const DEFAULT_BODY_IDLE_TIMEOUT_MS = 10_000;
export const DEFAULT_MAX_OPEN_BODIES = 512;
/** Seconds a refused client is told to wait: about what a body in flight takes to arrive. */
const BUSY_RETRY_AFTER_SECONDS = 1;

/** The answer to a request over the cap (its body is never read). */
export function serverBusy(max: number): HttpError {
  return new HttpError(
    503,
    "server_busy",
    `the server is receiving as many request bodies as it takes at once (${max}, MAX_OPEN_BODIES); nothing was read or written, send it again`,
    undefined,
    { "retry-after": String(BUSY_RETRY_AFTER_SECONDS) },
  );
}

function bodyTimedOut(idleMs: number): HttpError {
  return new HttpError(
    408,
    "request_timeout",
    `nothing of the request body arrived for ${idleMs} ms (BODY_IDLE_TIMEOUT_MS); nothing was written, send it again`,
  );
}

export class RequestBodies {
  #open = 0;

  constructor(readonly max: number, readonly idleTimeoutMs: number) {}

  /** Requests with a body in the server now (tests). */
  get open(): number {
    return this.#open;
  }

  /**
   * The request's body as the function reads it: failing with a 408 once nothing arrives for the
   * idle timeout. `release` ends its place among the open bodies (called once its answer is out; the
   * body's end does it too). Undefined when MAX_OPEN_BODIES are open: answer serverBusy.
   */
  admit(body: ReadableStream<Uint8Array>): { body: ReadableStream<Uint8Array>; release: () => void } | undefined {
    if (this.#open >= this.max) return undefined;
    this.#open++;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.#open--;
    };
    const reader = body.getReader();
    const idleMs = this.idleTimeoutMs;
    const bounded = new ReadableStream<Uint8Array>({
      async pull(controller) {
        let timer: ReturnType<typeof setTimeout> | undefined;
        const silence = new Promise<never>((
          _,
          reject,
        ) => (timer = setTimeout(() => reject(bodyTimedOut(idleMs)), idleMs)));
        try {
          const next = await Promise.race([reader.read(), silence]);
          if (next.done) {
            release();
            controller.close();
          } else {
            controller.enqueue(next.value);
          }
        } catch (err) {
          release();
          reader.cancel().catch(() => {});
          controller.error(err);
        } finally {
          clearTimeout(timer);
        }
      },
      cancel(reason) {
        release();
        return reader.cancel(reason);
      },
    });
    return { body: bounded, release };
  }
}

/** The server's bounds: the options', else BODY_IDLE_TIMEOUT_MS and MAX_OPEN_BODIES, else the defaults. */
export function requestBodiesFrom(
  env: Record<string, string | undefined>,
  opts: { bodyIdleTimeoutMs?: number; maxOpenBodies?: number },
): RequestBodies {
  const setting = (name: string, text: string | undefined, fallback: number) => {
    if (text === undefined || text === "") return fallback;
    const n = Number(text);
    if (!Number.isInteger(n) || n < 1) throw new ConfigError(`invalid ${name}: ${text} (a positive integer)`);
    return n;
  };
  return new RequestBodies(
    opts.maxOpenBodies ?? setting("MAX_OPEN_BODIES", env.MAX_OPEN_BODIES, DEFAULT_MAX_OPEN_BODIES),
    opts.bodyIdleTimeoutMs ?? setting("BODY_IDLE_TIMEOUT_MS", env.BODY_IDLE_TIMEOUT_MS, DEFAULT_BODY_IDLE_TIMEOUT_MS),
  );
}
