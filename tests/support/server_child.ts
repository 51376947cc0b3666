// The local functions server in a process of its own, for tests that end it the way a host does:
// SIGKILL (a crash: no shutdown, nothing written that waited) or SIGTERM (a clean stop: what waits
// is written, then the process exits 0). Prints "listening <functions URL>" once it serves.
//   DATABASE_URL, RETRIEVAL_WRITE_BEHIND_MS
import { startServer } from "../../scripts/serve.ts";
import { TEST_JWT_SECRET } from "./config.ts";

const env = (name: string) =>
  Deno.env.get(name) ?? (() => {
    throw new Error(`${name} is not set`);
  })();
const server = await startServer({
  port: 0,
  databaseUrl: env("DATABASE_URL"),
  jwtSecret: TEST_JWT_SECRET,
  env: { DB_POOL_MAX: "2", RETRIEVAL_WRITE_BEHIND_MS: env("RETRIEVAL_WRITE_BEHIND_MS") },
  worker: false,
  scheduler: false,
  probe: false,
  logRequests: false,
  log: () => {},
});
Deno.addSignalListener("SIGTERM", () => void server.close().then(() => Deno.exit(0)));
console.log(`listening ${server.functionsUrl}`);
