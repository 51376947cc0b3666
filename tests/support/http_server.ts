// Starts the real local functions server (scripts/serve.ts) in-process on a free port against the
// test database, with tokens signed by TEST_JWT_SECRET (tests/support/auth.ts). For HTTP tests.
import { type RunningServer, type ServerOptions, startServer } from "../../scripts/serve.ts";
import { TEST_JWT_SECRET, testDatabaseUrl } from "./config.ts";
import { runningServerPools } from "./server_pools.ts";

export type { RunningServer };

export async function startTestServer(opts: Partial<ServerOptions> = {}): Promise<RunningServer> {
  const server = await startServer({
    port: 0,
    databaseUrl: testDatabaseUrl(),
    jwtSecret: TEST_JWT_SECRET,
    // No provider keys from the developer's shell leak into tests: local embedder, no LLM.
    env: { DB_POOL_MAX: "4" },
    scheduler: false,
    logRequests: Deno.env.get("HTTP_TEST_LOG") === "1",
    log: Deno.env.get("HTTP_TEST_LOG") === "1" ? (line) => console.log(line) : () => {},
    ...opts,
  });
  runningServerPools.add(server.sql);
  const close = server.close;
  return { ...server, close: () => close().finally(() => runningServerPools.delete(server.sql)) };
}

/** A JSON request to one of the server's functions (`memory/remember`, …): GET without a body, POST with one. */
export async function functionJson(
  server: RunningServer,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
  // deno-lint-ignore no-explicit-any -- tests read answers of many shapes; each asserts what it reads
): Promise<{ status: number; body: any }> {
  const res = await fetch(`${server.functionsUrl}/${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}
