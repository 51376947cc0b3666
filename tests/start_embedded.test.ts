// `npm start` with no DATABASE_URL: the real entry point (scripts/serve.ts --embedded) as a child
// process, on embedded PGlite in a fresh data folder. A remember followed by a retrieve works over
// HTTP, the process stops cleanly on SIGTERM, and the data is there after a restart; after a
// kill -9 right behind a burst of acknowledged writes, every one of them is there too. A taken
// FUNCTIONS_PORT (scripts/start.sh) or a bad setting (scripts/serve.ts) stops it before it creates a database.
// Runs in scripts/test.sh's PGlite pass (it starts its own database on DEVAI_TEST_START_PG_PORT and
// functions server on DEVAI_TEST_START_FN_PORT, tests/support/ports.ts).
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { testBackend } from "./support/backend.ts";
import { userToken } from "./support/auth.ts";
import { TEST_JWT_SECRET } from "./support/config.ts";
import { testPort } from "./support/ports.ts";
import { cleanEnv, spawnWatched } from "./support/process.ts";

const repo = new URL("..", import.meta.url).pathname;
const dbPort = testPort("DEVAI_TEST_START_PG_PORT");
const fnPort = testPort("DEVAI_TEST_START_FN_PORT");
const START_TIMEOUT_MS = 180_000;

interface Started {
  child: Deno.ChildProcess;
  output: () => string;
}

/** Starts `scripts/serve.ts --embedded` with a clean environment; resolves once the banner is out. */
async function startService(dataDir: string): Promise<Started> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--config", "supabase/functions/deno.json", "scripts/serve.ts", "--embedded"],
    cwd: repo,
    clearEnv: true,
    env: {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      HOME: Deno.env.get("HOME") ?? "/root",
      ...(Deno.env.get("DENO_DIR") ? { DENO_DIR: Deno.env.get("DENO_DIR")! } : {}),
      DEVAI_PGLITE_DIR: dataDir,
      DEVAI_PG_PORT: String(dbPort),
      FUNCTIONS_PORT: String(fnPort),
      SUPABASE_JWT_SECRET: TEST_JWT_SECRET,
      NO_COLOR: "1",
    },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let text = "";
  const decoder = new TextDecoder();
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) text += decoder.decode(chunk, { stream: true });
  };
  void pump(child.stdout);
  void pump(child.stderr);
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (!text.includes("Functions URL")) {
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`the service did not start within ${START_TIMEOUT_MS / 1000} s:\n${text}`);
    }
    const exited = await Promise.race([child.status, new Promise<null>((r) => setTimeout(() => r(null), 250))]);
    if (exited) throw new Error(`the service exited with ${exited.code}:\n${text}`);
  }
  return { child, output: () => text };
}

/**
 * A second `npm start` while the first runs: it must exit at once, saying what holds what. Its
 * functions server would listen on a free port (0): only the database's port and folder collide.
 * With `env`, settings of its own (a bad one must stop it as early).
 */
async function secondStart(
  dataDir: string,
  env: Record<string, string> = {},
): Promise<{ code: number; output: string }> {
  const run = spawnWatched(Deno.execPath(), [
    "run",
    "-A",
    "--config",
    "supabase/functions/deno.json",
    "scripts/serve.ts",
    "--embedded",
  ], {
    cwd: repo,
    env: cleanEnv({
      DEVAI_PGLITE_DIR: dataDir,
      DEVAI_PG_PORT: String(dbPort),
      FUNCTIONS_PORT: "0",
      SUPABASE_JWT_SECRET: TEST_JWT_SECRET,
      ...env,
    }),
  });
  const status = await run.exited;
  return { code: status.code, output: run.output() };
}

async function stopService(s: Started): Promise<void> {
  s.child.kill("SIGTERM");
  const status = await s.child.status;
  assert.equal(status.code, 0, `clean exit on SIGTERM:\n${s.output()}`);
}

async function call(
  path: string,
  token: string,
  body?: unknown,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`http://127.0.0.1:${fnPort}/functions/v1/${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

Deno.test({
  name: "npm start (embedded PGlite): remember → retrieve over HTTP, clean stop, data survives a restart and a kill -9",
  ignore: testBackend !== "pglite",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), "devai-start-test-")), "pglite");
    const tenant = crypto.randomUUID();
    const token = await userToken(tenant);
    const fact = "The billing service retries webhooks three times with exponential backoff";
    let service: Started | undefined;
    try {
      service = await startService(dataDir);
      assert.match(service.output(), /embedded PGlite, data in /);
      assert.match(
        service.output(),
        /Applying migration 20261122000200_memory_tables\.sql/,
        "first start migrates with the Supabase CLI",
      );

      const remembered = await call("memory/remember", token, { content: fact, project: "billing" });
      assert.equal(remembered.status, 201, JSON.stringify(remembered.json));
      const id = (remembered.json.memory as { id: string }).id;

      const retrieved = await call("memory-retrieve", token, {
        message: "How often are billing webhooks retried?",
        project: "billing",
      });
      assert.equal(retrieved.status, 200, JSON.stringify(retrieved.json));
      assert.ok(String(retrieved.json.block).includes(fact), String(retrieved.json.block));

      // A second `npm start` names what is in its way: the first one's database folder, or its port.
      const sameFolder = await secondStart(dataDir);
      assert.equal(sameFolder.code, 1);
      assert.match(
        sameFolder.output,
        /another `npm start` \(process \d+\) is using the embedded database in .*: stop it, or .*DEVAI_PG_PORT, FUNCTIONS_PORT and DEVAI_PGLITE_DIR/,
      );
      const otherFolder = await secondStart(`${dataDir}-second`);
      assert.equal(otherFolder.code, 1);
      assert.match(
        otherFolder.output,
        new RegExp(`port ${dbPort} is taken by another \`npm start\` \\(its embedded PGlite database answers there\\)`),
      );
      assert.doesNotMatch(otherFolder.output, /db:start/, "it does not blame the local Postgres");
      // db:status does not mistake the embedded database for the local Postgres.
      const status = spawnWatched("bash", ["scripts/db.sh", "status"], {
        cwd: repo,
        env: cleanEnv({ DEVAI_PG_PORT: String(dbPort) }),
      });
      assert.equal((await status.exited).code, 1);
      assert.match(status.output(), new RegExp(`down: port ${dbPort} is held by npm start's embedded PGlite database`));

      await stopService(service);
      service = undefined;

      service = await startService(dataDir);
      assert.doesNotMatch(service.output(), /Applying migration/, "a restart finds the migrations applied");
      // The retrieval's reinforcement waited behind its answer; stopping the server wrote it.
      const one = await call(`memory/${id}`, token);
      assert.equal(one.status, 200);
      assert.equal(
        (one.json.memory as { access_count: number }).access_count,
        1,
        "the retrieval before the restart was kept too",
      );
      const again = await call("memory-retrieve", token, {
        message: "How often are billing webhooks retried?",
        project: "billing",
      });
      assert.equal(again.status, 200);
      assert.ok(String(again.json.block).includes(fact), "the memory survived the restart");

      // Acknowledged writes, then SIGKILL at once: PGlite writes each commit to the data folder
      // before it answers, so a killed process loses none (docs/pglite.md, durability).
      const burst = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          call("memory/remember", token, {
            content: `Acknowledged fact ${i} about the billing service`,
            project: "billing",
          })),
      );
      assert.deepEqual(burst.map((r) => r.status), Array(10).fill(201));
      service.child.kill("SIGKILL");
      await service.child.status;
      service = undefined;
      service = await startService(dataDir);
      const listed = await call("memory?limit=100", token);
      assert.equal(listed.status, 200);
      assert.equal((listed.json.memories as unknown[]).length, 11, "the 10 acknowledged writes and the first memory");
    } finally {
      if (service) await stopService(service).catch(() => service!.child.kill("SIGKILL"));
      rmSync(join(dataDir, ".."), { recursive: true, force: true });
    }
  },
});

Deno.test({
  name: "npm start with its FUNCTIONS_PORT taken stops at once, naming the port, before it creates a database",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (taken.addr as Deno.NetAddr).port;
    const dataDir = join(mkdtempSync(join(tmpdir(), "devai-start-test-")), "pglite");
    try {
      const run = spawnWatched("bash", ["scripts/start.sh"], {
        cwd: repo,
        env: cleanEnv({ FUNCTIONS_PORT: String(port), DEVAI_PG_PORT: String(dbPort), DEVAI_PGLITE_DIR: dataDir }),
      });
      assert.equal((await run.exited).code, 1);
      assert.match(run.output(), new RegExp(`port ${port} \\(FUNCTIONS_PORT\\) is taken: .*its own FUNCTIONS_PORT`));
      assert.equal(await Deno.stat(dataDir).then(() => true, () => false), false, "no database was created");
    } finally {
      taken.close();
      rmSync(join(dataDir, ".."), { recursive: true, force: true });
    }
  },
});

Deno.test({
  name: "npm start with a bad setting stops at once, naming it, before it creates a database",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), "devai-start-test-")), "pglite");
    try {
      // The same start as a second server's, with one bad setting.
      const run = await secondStart(dataDir, { MAX_BODY_BYTES: "256k" });
      assert.equal(run.code, 1);
      assert.match(run.output, /invalid environment: MAX_BODY_BYTES: expected a number written in digits/);
      assert.equal(await Deno.stat(dataDir).then(() => true, () => false), false, "no database was created");
    } finally {
      rmSync(join(dataDir, ".."), { recursive: true, force: true });
    }
  },
});
