// The database going away: a crash loses no acknowledged write, an outage is a 503 with
// Retry-After answered while the database is down, the pool recovers on its own, and a statement
// that runs past its timeout is a 503 too. The crash tests run on a throwaway Postgres cluster of
// their own (scripts/db.sh on DEVAI_TEST_OUTAGE_PG_PORT, default 24351), which they stop and start
// under concurrent requests, so the rest of the suite keeps its database.
import assert from "node:assert/strict";
import {
  createSql,
  RECONNECT_DELAY_MAX_SECONDS,
  reconnectDelaySeconds,
  type Sql,
} from "../supabase/functions/_shared/db.ts";
import { flushSearchWrites, writeBehind } from "../supabase/functions/_shared/retrieval/write-behind.ts";
import { userHeaders } from "./support/auth.ts";
import { realServerOnly } from "./support/backend.ts";
import { dbScript } from "./support/db-script.ts";
import { startTestServer } from "./support/http_server.ts";
import { testPort } from "./support/ports.ts";
import { newTenant, seedMemories, testSql } from "./support/seed.ts";

const PORT = testPort("DEVAI_TEST_OUTAGE_PG_PORT");
const URL_ = `postgresql://postgres@127.0.0.1:${PORT}/postgres`;
const CONF = `${
  Deno.env.get("DEVAI_PG_ROOT") ?? "/var/cache/devai-memory/trixie-pg17"
}/srv/devai/data-${PORT}/postgresql.conf`;
const LOCK_DEADLINE_MS = 10_000;
const WHY = "stops and starts a Postgres 17 cluster of its own (scripts/db.sh)";

/** scripts/db.sh <command> on the throwaway cluster (never DATABASE_URL). */
async function cluster(command: "reset" | "start" | "stop" | "crash"): Promise<void> {
  await dbScript(command, { DEVAI_PG_PORT: String(PORT) });
}

async function outageServer() {
  return await startTestServer({ databaseUrl: URL_, worker: false });
}

async function remember(base: string, tenant: string, content: string): Promise<Response> {
  return await fetch(`${base}/memory/remember`, {
    method: "POST",
    headers: await userHeaders(tenant),
    body: JSON.stringify({ content }),
  });
}

async function countMemories(sql: Sql, tenant: string): Promise<number> {
  const [row] = await sql<
    { n: number }[]
  >`select count(*)::int as n from public.devai_memories where owner_id = ${tenant}`;
  return row!.n;
}

Deno.test({
  ...realServerOnly(
    "durability: the cluster runs with synchronous_commit = on (an old cluster's setting is fixed at start); acknowledged writes survive a crash",
    WHY,
  ),
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await cluster("reset");
    // A cluster made by the old script had this line appended; the next start fixes it.
    await Deno.writeTextFile(CONF, "synchronous_commit = off\n", { append: true });
    await cluster("start");
    let sql = createSql(URL_, { max: 1 });
    const server = await outageServer();
    try {
      const [settings] = await sql<
        { sync: string; fsync: string }[]
      >`select current_setting('synchronous_commit') as sync, current_setting('fsync') as fsync`;
      assert.deepEqual(settings, { sync: "on", fsync: "on" });

      const tenant = newTenant();
      const answers = await Promise.all(
        Array.from(
          { length: 20 },
          (_, i) => remember(server.functionsUrl, tenant, `Durable fact number ${i} about the deploy.`),
        ),
      );
      assert.deepEqual(answers.map((r) => r.status), Array(20).fill(201));
      await Promise.all(answers.map((r) => r.body?.cancel()));
      await cluster("crash"); // right after the last 201: no checkpoint, the WAL is all there is
      await sql.end({ timeout: 1 });
      await cluster("start");
      sql = createSql(URL_, { max: 1 });
      assert.equal(await countMemories(sql, tenant), 20, "every acknowledged remember is still there");
    } finally {
      await server.close();
      await sql.end({ timeout: 1 });
      await cluster("stop");
    }
  },
});

Deno.test({
  ...realServerOnly(
    "outage: requests while the database is down are 503 database_unavailable with Retry-After, write nothing, and the pool recovers",
    WHY,
  ),
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await cluster("reset");
    const server = await outageServer();
    const tenant = newTenant();
    const get = async () =>
      await fetch(`${server.functionsUrl}/memory?limit=1`, { headers: await userHeaders(tenant) });
    const retrieve = async () =>
      await fetch(`${server.functionsUrl}/memory-retrieve`, {
        method: "POST",
        headers: await userHeaders(tenant),
        body: JSON.stringify({ message: "how do we deploy?" }),
      });
    try {
      const before = await Promise.all([
        get(),
        get(),
        retrieve(),
        remember(server.functionsUrl, tenant, "The deploy runs on Fridays."),
      ]);
      assert.deepEqual(before.map((r) => r.status), [200, 200, 200, 201]);
      await Promise.all(before.map((r) => r.body?.cancel()));

      await cluster("crash");
      // Answered while the database is still down (it is started only after they all returned).
      const down = await Promise.all([
        get(),
        get(),
        retrieve(),
        retrieve(),
        remember(server.functionsUrl, tenant, "Written during the outage."),
      ]);
      for (const res of down) {
        const body = await res.json();
        assert.equal(res.status, 503, JSON.stringify(body));
        assert.equal(body.error.code, "database_unavailable");
        assert.equal(res.headers.get("retry-after"), "2");
      }

      await cluster("start");
      // The first requests after the restart succeed: dead pooled connections are replaced.
      const after = await Promise.all([get(), get(), retrieve(), get()]);
      assert.deepEqual(after.map((r) => r.status), [200, 200, 200, 200]);
      await Promise.all(after.map((r) => r.body?.cancel()));
      const sql = createSql(URL_, { max: 1 });
      try {
        const rows = await sql<
          { content: string }[]
        >`select content from public.devai_memories where owner_id = ${tenant}`;
        assert.deepEqual(
          rows.map((r) => r.content),
          ["The deploy runs on Fridays."],
          "the outage's remember wrote nothing",
        );
      } finally {
        await sql.end();
      }
    } finally {
      await server.close();
      await cluster("stop");
    }
  },
});

Deno.test({
  ...realServerOnly(
    "outage: a statement past the statement timeout (here a row lock held elsewhere) is a 503, not a hung request",
    "needs a second connection to hold a row lock; PGlite runs one transaction at a time",
  ),
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const sql = testSql(2);
    const server = await startTestServer({ env: { DB_POOL_MAX: "2", DB_STATEMENT_TIMEOUT_MS: "300" }, worker: false });
    const tenant = newTenant();
    const [memory] = await seedMemories(sql, tenant, [{
      content: "The release train leaves on Tuesdays.",
      namespace: "devai/global/release",
    }]);
    const holder = Promise.withResolvers<void>();
    const locked = Promise.withResolvers<void>();
    const holding = sql.begin(async (tx) => {
      await tx`select 1 from public.devai_memories where id = ${memory!.id} for update`;
      locked.resolve();
      await holder.promise;
    });
    // Without a statement timeout the request would wait for the lock: release it after a deadline
    // so such a failure is a failed assertion, not a hung test.
    const deadline = setTimeout(() => holder.resolve(), LOCK_DEADLINE_MS);
    try {
      await locked.promise;
      const res = await fetch(`${server.functionsUrl}/memory/${memory!.id}/forget`, {
        method: "POST",
        headers: await userHeaders(tenant),
      });
      const body = await res.json();
      assert.equal(res.status, 503, JSON.stringify(body));
      assert.equal(body.error.code, "database_unavailable");
      assert.match(body.error.message, /did not answer in time/);
      assert.equal(res.headers.get("retry-after"), "2");
    } finally {
      clearTimeout(deadline);
      holder.resolve();
      await holding;
      await server.close();
      await sql.end();
    }
  },
});

Deno.test({
  ...realServerOnly(
    "outage: searches' write-behind batch that meets the database down is written once it is back; one that fails for another reason is dropped and does not hold the tenant's next batch",
    WHY,
  ),
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await cluster("reset");
    const sql = createSql(URL_, { max: 2 });
    try {
      const tenant = newTenant();
      const who = { tenantId: tenant, actor: "user" };
      const [memory] = await seedMemories(sql, tenant, [{
        content: "The nightly export runs at 02:00 UTC.",
        namespace: "devai/global/ops",
      }]);
      const [row] = await sql<{ at: string }[]>`select now()::text as at`;
      const at = row!.at;
      const search = (when: string) => ({
        at: when,
        ids: [memory!.id],
        thread_id: null,
        category: null,
        sim: 0.9,
        meta: { test: "outage" },
      });
      const written = async () => {
        const [row] = await sql<{ accesses: number; events: number }[]>`
          select (select access_count from public.devai_memories where id = ${memory!.id}) as accesses,
                 (select count(*)::int from public.memory_events where owner_id = ${tenant} and op = 'search') as events`;
        return row!;
      };

      // Only a flush writes (the clock's delay is an hour).
      writeBehind(sql, who, search(at), 3_600_000);
      await cluster("stop");
      await flushSearchWrites(sql); // refused: kept for the next batch
      await cluster("start");
      await flushSearchWrites(sql);
      assert.deepEqual(await written(), { accesses: 1, events: 1 });

      // A search whose statement fails with the database up (here an instant Postgres cannot
      // read) is dropped: kept, it would fail again with the tenant's next search in one statement.
      writeBehind(sql, who, search("not an instant"));
      await flushSearchWrites(sql);
      writeBehind(sql, who, search(at));
      await flushSearchWrites(sql);
      assert.deepEqual(await written(), { accesses: 2, events: 2 });
    } finally {
      await sql.end();
      await cluster("stop"); // nothing of this file's listens after it
    }
  },
});

Deno.test("outage: after any number of failed connections the pool tries again within half a second (postgres.js waits up to 20 s)", () => {
  for (const failures of [0, 1, 3, 8, 20, 100]) {
    assert.ok(reconnectDelaySeconds(failures) <= RECONNECT_DELAY_MAX_SECONDS);
  }
  assert.equal(RECONNECT_DELAY_MAX_SECONDS, 0.5);
});
