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
 * Where freePort draws from: below the kernel's ephemeral range (32768-60999), and above the fixed
 * ports of the test, bench and eval runs (243xx: tests/support/ports.ts, scripts/test.sh, bench.sh,
 * eval.sh). All test files load in one process before any runs, so a port drawn at load time
 * (transaction_pooler's PgBouncer) would otherwise be free then and taken later by the outage
 * cluster, the replica or a PGlite server started on its fixed port.
 */
export const FREE_PORTS = { from: 25000, to: 32000 } as const;

/**
 * A loopback port nothing listens on, in FREE_PORTS: free to listen on, and a connection to it is
 * refused. A port the kernel hands out (port 0) lies in the ephemeral range, where an outgoing
 * connection's local end may take it before the test's server (the pooler test's PgBouncer) binds
 * it; below the range only another listener can, and trying to listen finds that out.
 */
export function freePort(): number {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = FREE_PORTS.from + Math.floor(Math.random() * (FREE_PORTS.to - FREE_PORTS.from));
    try {
      Deno.listen({ hostname: "127.0.0.1", port }).close();
      return port;
    } catch (error) {
      if (!(error instanceof Deno.errors.AddrInUse)) throw error;
    }
  }
  throw new Error(`no free loopback port found between ${FREE_PORTS.from} and ${FREE_PORTS.to} in 100 tries`);
}
