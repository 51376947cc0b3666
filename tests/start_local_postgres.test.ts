// `npm run start:postgres`: scripts/db.sh starts the local Postgres, then the functions server runs
// with --local-postgres. Ctrl-C stops the server, not the database (it holds the user's data and
// may serve others), and the server says so, with the command that stops it.
import assert from "node:assert/strict";
import { testBackend } from "./support/backend.ts";
import { TEST_JWT_SECRET, testDatabaseUrl } from "./support/config.ts";
import { cleanEnv, spawnWatched } from "./support/process.ts";

const repo = new URL("..", import.meta.url).pathname;

Deno.test({
  name: "npm run start:postgres: the banner and the exit on Ctrl-C say that Postgres keeps running and how to stop it",
  ignore: testBackend !== "postgres",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const server = spawnWatched(Deno.execPath(), [
      "run",
      "-A",
      "--config",
      "supabase/functions/deno.json",
      "scripts/serve.ts",
      "--local-postgres",
    ], {
      cwd: repo,
      env: cleanEnv({
        DATABASE_URL: testDatabaseUrl(),
        FUNCTIONS_PORT: "0",
        SUPABASE_JWT_SECRET: TEST_JWT_SECRET,
        DB_POOL_MAX: "2",
      }),
    });
    try {
      await server.waitFor("Functions URL");
      const notice =
        /the local Postgres keeps running at postgresql:\/\/\S+ with your data; `npm run db:stop` stops it/g;
      await server.waitFor(notice);
      server.child.kill("SIGINT");
      const status = await server.exited;
      assert.equal(status.code, 0, server.output());
      assert.equal(server.output().match(notice)?.length, 2, "once under the banner, once on exit");
    } finally {
      try {
        server.child.kill("SIGKILL");
      } catch { /* already exited */ }
    }
  },
});
