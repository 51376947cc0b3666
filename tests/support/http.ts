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
 * A loopback port nothing listens on (taken from the kernel, then released): free to listen on, and
 * a connection to it is refused. Fixed ports in the ephemeral range (32768-60999) may be a client
 * socket's at any moment.
 */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}
