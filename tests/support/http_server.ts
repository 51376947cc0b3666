// Starts the real local functions server (scripts/serve.ts) in-process on a free port against the
// test database, with tokens signed by TEST_JWT_SECRET (tests/support/auth.ts). For HTTP tests.
import { type RunningServer, type ServerOptions, startServer } from "../../scripts/serve.ts";
import { TEST_JWT_SECRET, testDatabaseUrl } from "./config.ts";

export type { RunningServer };

export async function startTestServer(opts: Partial<ServerOptions> = {}): Promise<RunningServer> {
  return await startServer({
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
}
