// Two servers (two pools of one database) exporting one tenant at once: while one copies the
// tenant, the other's export is refused at once, 429 export_running with Retry-After, as one
// server refuses a tenant's second export (docs/operations.md#exports). Its copy used to wait on
// the first's locks (the first had deleted the tenant's earlier copy) and then fail, 503
// "the database is unavailable" (40001, or its statement timeout).
import assert from "node:assert/strict";
import { createHandler } from "../supabase/functions/memory/handler.ts";
import { stageExport } from "../supabase/functions/_shared/services/memory-export.ts";
import { localEmbedder } from "../supabase/functions/_shared/embeddings.ts";
import { createSql, withTenant } from "../supabase/functions/_shared/db.ts";
import { HttpError } from "../supabase/functions/_shared/http.ts";
import { userHeaders } from "./support/auth.ts";
import { realServerOnly } from "./support/backend.ts";
import { testConfig, testDatabaseUrl } from "./support/config.ts";
import { newTenant, seedMemories, testSql } from "./support/seed.ts";

const sql = testSql(2);
const opts = { sanitizeOps: false, sanitizeResources: false };
const NO_SECOND_SERVER = "PGlite is one database in one process: there is no second server";
// Statements of 2 s at most, so that a second copy waiting on the first's locks fails within the
// test rather than after the default 15 s.
const server = () => createSql(testDatabaseUrl(), { max: 2, statementTimeoutMs: 2_000 });

/** The tenant's 30 memories (and their 30 ADD history rows). */
async function seedThirty(tenant: string): Promise<void> {
  const rows = Array.from({ length: 30 }, (_, i) => ({ content: `fact ${i}`, namespace: "devai/global/notes" }));
  await seedMemories(sql, tenant, rows.map((r) => ({ ...r, embedding: null })));
}

Deno.test({
  ...realServerOnly(
    "export: a second server's export of a tenant being copied is 429 export_running at once",
    NO_SECOND_SERVER,
  ),
  ...opts,
}, async () => {
  const tenant = newTenant();
  await seedThirty(tenant);
  const [a, b, c] = [server(), server(), server()];
  const exportOn = async (pool: typeof a) =>
    await createHandler({ sql: pool, config: testConfig(), embedder: localEmbedder() })(
      new Request("http://local/memory/export", { headers: await userHeaders(tenant) }),
    );
  let earlier: Response | undefined;
  try {
    // An earlier export of the tenant on a third server, still being read: its copy is there, and
    // server a's copy deletes it first.
    earlier = await exportOn(c);
    assert.equal(earlier.status, 200);

    // Server a's copy, held after its first statement until server b has answered.
    const paused = Promise.withResolvers<void>();
    const copying = Promise.withResolvers<void>();
    const copy = withTenant(
      a,
      { tenantId: tenant, actor: "test" },
      (tx) =>
        stageExport(tx, crypto.randomUUID(), ["memories", "relations", "history"], Date.now() + 60_000, () => {
          copying.resolve();
          return paused.promise;
        }),
      { repeatableRead: true },
    );
    await Promise.race([copying.promise, copy]);
    let second: Response;
    try {
      second = await exportOn(b);
    } finally {
      paused.resolve();
    }
    const body = await second.text();
    assert.equal(second.status, 429, body.slice(0, 300));
    assert.equal(JSON.parse(body).error.code, "export_running");
    assert.equal(second.headers.get("retry-after"), "5");
    assert.deepEqual(await copy, { memories: 30, relations: 0, history: 30 });

    // Once a's copy has committed, b's export runs (and replaces a's copy).
    const after = await exportOn(b);
    assert.equal(after.status, 200);
    assert.equal((JSON.parse(await after.text()) as { memories: unknown[] }).memories.length, 30);
  } finally {
    await earlier?.body?.cancel();
    await Promise.all([a.end(), b.end(), c.end()]);
  }
});

Deno.test({
  ...realServerOnly(
    "export: a second server's export whose snapshot predates the first's commit is 429 export_running, not a 503",
    NO_SECOND_SERVER,
  ),
  ...opts,
}, async () => {
  const tenant = newTenant();
  const who = { tenantId: tenant, actor: "test" };
  await seedThirty(tenant);
  const [a, b] = [server(), server()];
  const parts: ("memories" | "relations" | "history")[] = ["memories", "relations", "history"];
  const copyOn = (pool: typeof a, before: () => Promise<void> = () => Promise.resolve()) =>
    withTenant(pool, who, async (tx) => {
      await before();
      return await stageExport(tx, crypto.randomUUID(), parts, Date.now() + 60_000);
    }, { repeatableRead: true });
  try {
    // An earlier copy of the tenant (an export still being read, or one whose server went away).
    await copyOn(a);
    // Server b's copy: its transaction has taken its snapshot (its first statement, the tenant's
    // settings) and is held there, before memory_export_begin takes the tenant's lock...
    const snapshotTaken = Promise.withResolvers<void>();
    const go = Promise.withResolvers<void>();
    const second = copyOn(b, () => {
      snapshotTaken.resolve();
      return go.promise;
    });
    await Promise.race([snapshotTaken.promise, second]);
    // ...while server a's copy runs whole and commits, deleting the earlier copy and releasing its lock.
    assert.deepEqual(await copyOn(a), { memories: 30, relations: 0, history: 30 });
    go.resolve();
    // b takes the lock, free now; its delete of the earlier copy, which its snapshot still sees,
    // used to fail with a serialization failure (40001: a 503 database_unavailable).
    const failure = await second.then(() => undefined, (err: unknown) => err);
    assert.ok(failure instanceof HttpError, `not an HttpError: ${String(failure)}`);
    assert.equal(failure.status, 429);
    assert.equal(failure.code, "export_running");
    // Nothing of b's was copied: the tenant has a's copy alone, and its next export replaces it.
    const [copies] = await sql<{ n: number }[]>`
      select count(distinct export_id)::int as n from memory_private.export_rows where owner_id = ${tenant}`;
    assert.equal(copies!.n, 1);
    assert.deepEqual(await copyOn(b), { memories: 30, relations: 0, history: 30 });
  } finally {
    await Promise.all([a.end(), b.end()]);
  }
});

Deno.test({ name: "close the pool", ...opts }, async () => {
  await sql.end();
});
