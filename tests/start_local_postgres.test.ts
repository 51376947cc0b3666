// `npm run start:postgres`: scripts/db.sh starts the local Postgres, then the functions server runs
// with --local-postgres. Ctrl-C stops the server, not the database (it holds the user's data and
// may serve others), and the server says so, with the command that stops it.
import assert from "node:assert/strict";
import { testBackend } from "./support/backend.ts";
import { TEST_JWT_SECRET, testDatabaseUrl } from "./support/config.ts";
import { cleanEnv, spawnWatched } from "./support/process.ts";
import { dbStopCommand, portTakenMessage } from "../scripts/serve/embedded-db.ts";

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
      // The command names the cluster's port unless it is db.sh's default (the test cluster's is not).
      const port = new URL(testDatabaseUrl()).port;
      const stop = port === "54322" ? "npm run db:stop" : `DEVAI_PG_PORT=${port} npm run db:stop`;
      const notice = new RegExp(
        `the local Postgres keeps running at postgresql://\\S+ with your data; \`${stop}\` stops it`,
        "g",
      );
      // Any notice first, then which: a notice with another command fails here instead of waiting forever.
      await server.waitFor(/keeps running at \S+ with your data; `[^`]+` stops it/);
      assert.match(server.output(), new RegExp(notice.source));
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

Deno.test("npm start's messages name the port of the Postgres they tell the user to stop", () => {
  assert.equal(dbStopCommand(54322), "npm run db:stop");
  assert.equal(dbStopCommand("26560"), "DEVAI_PG_PORT=26560 npm run db:stop");
  assert.ok(portTakenMessage(26560, "postgres").includes("`DEVAI_PG_PORT=26560 npm run db:stop` stops it"));
  assert.ok(portTakenMessage(54322, "postgres").includes("`npm run db:stop` stops it"));
});
