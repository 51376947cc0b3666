// Calling a handler directly with a Request, and Deno.test settings for tests that hold a
// postgres.js pool open across tests (the resource sanitizer would flag the pool's sockets).
export type Handler = (req: Request) => Promise<Response>;

export interface CallResult<T = unknown> {
  status: number;
  body: T;
  headers: Headers;
}

/** Sends a JSON body (an object is stringified; a string is sent as is, e.g. malformed JSON). */
// deno-lint-ignore no-explicit-any -- tests read answers of many shapes; each asserts what it reads
export async function callJson<T = any>(
  handler: Handler,
  url: string,
  opts: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
): Promise<CallResult<T>> {
  const body = opts.body === undefined
    ? undefined
    : typeof opts.body === "string"
    ? opts.body
    : JSON.stringify(opts.body);
  const res = await handler(new Request(url, { method: opts.method ?? "POST", headers: opts.headers, body }));
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text.length > 0 ? JSON.parse(text) : null;
  } catch { /* not JSON: keep the text */ }
  return { status: res.status, body: parsed as T, headers: res.headers };
}

/** Deno.test for handler tests against real Postgres: sanitizers off (the pool stays open). */
export function dbTest(name: string, fn: () => Promise<void>): void {
  Deno.test({ name, fn, sanitizeResources: false, sanitizeOps: false });
}

/**
 * A loopback port nothing listens on, below the kernel's ephemeral range (32768-60999): free to
 * listen on, and a connection to it is refused. A port the kernel hands out (port 0) lies in that
 * range, where an outgoing connection's local end may take it before the test's server (the pooler
 * test's PgBouncer) binds it; below the range only another listener can, and trying to listen
 * finds that out.
 */
export function freePort(): number {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = 20000 + Math.floor(Math.random() * 12000);
    try {
      Deno.listen({ hostname: "127.0.0.1", port }).close();
      return port;
    } catch (error) {
      if (!(error instanceof Deno.errors.AddrInUse)) throw error;
    }
  }
  throw new Error("no free loopback port found between 20000 and 32000 in 100 tries");
}
