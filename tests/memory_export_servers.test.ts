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
import { userHeaders } from "./support/auth.ts";
import { realServerOnly } from "./support/backend.ts";
import { testConfig, testDatabaseUrl } from "./support/config.ts";
import { newTenant, seedMemories, testSql } from "./support/seed.ts";

const sql = testSql(2);
const opts = { sanitizeOps: false, sanitizeResources: false };

Deno.test({
  ...realServerOnly(
    "export: a second server's export of a tenant being copied is 429 export_running at once",
    "PGlite is one database in one process: there is no second server",
  ),
  ...opts,
}, async () => {
  const tenant = newTenant();
  await seedMemories(
    sql,
    tenant,
    Array.from({ length: 30 }, (_, i) => ({ content: `fact ${i}`, namespace: "devai/global/notes", embedding: null })),
  );
  // Statements of 2 s at most, so that a second copy waiting on the first's locks fails within
  // the test rather than after the default 15 s.
  const server = () => createSql(testDatabaseUrl(), { max: 2, statementTimeoutMs: 2_000 });
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

Deno.test({ name: "close the pool", ...opts }, async () => {
  await sql.end();
});
