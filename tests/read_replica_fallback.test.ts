// A read replica that cannot answer (docs/operations.md#read-replicas): reads run on the primary
// instead of failing. A replica that refuses connections, and one that accepts them and then never
// answers (a hung or partitioned server: the pool's statement timeout is the server's to enforce,
// so only a client-side deadline ends the wait). Both are fake replicas on loopback; the primary is
// the test database.
import assert from "node:assert/strict";
import { createHandler } from "../supabase/functions/memory-retrieve/handler.ts";
import { createReadSql, type Sql } from "../supabase/functions/_shared/db.ts";
import { mapDatabaseError } from "../supabase/functions/_shared/database-errors.ts";
import { localEmbedder } from "../supabase/functions/_shared/embeddings.ts";
import { userHeaders } from "./support/auth.ts";
import { testConfig } from "./support/config.ts";
import { callJson, dbTest, freePort } from "./support/http.ts";
import { newTenant, seedMemories, testSql } from "./support/seed.ts";

const primary = testSql(3);
const ignoredAtEnd: (() => void)[] = [];

/** A loopback port nothing listens on. */
/**
 * A "replica" that completes the startup handshake (authentication ok, ready for query) and then
 * reads every query without ever answering it. Returns its port and how many connections it took.
 */
function hungReplica(): { port: number; connections: () => number; close: () => void } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns: Deno.Conn[] = [];
  (async () => {
    for await (const conn of listener) {
      conns.push(conn);
      (async () => {
        const buf = new Uint8Array(65536);
        let greeted = false;
        while ((await conn.read(buf).catch(() => null)) !== null) {
          if (greeted) continue; // queries: read, never answered
          greeted = true;
          const ok = new Uint8Array([0x52, 0, 0, 0, 8, 0, 0, 0, 0]); // AuthenticationOk
          const ready = new Uint8Array([0x5a, 0, 0, 0, 5, 0x49]); // ReadyForQuery, idle
          await conn.write(new Uint8Array([...ok, ...ready])).catch(() => {});
        }
      })();
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    connections: () => conns.length,
    close: () => {
      listener.close();
      for (const c of conns) c.close();
    },
  };
}

async function retrieveThrough(readSql: Sql, tenant: string) {
  const handler = createHandler({ sql: primary, readSql, config: testConfig(), embedder: localEmbedder() });
  return await callJson(handler, "http://local/functions/v1/memory-retrieve", {
    headers: await userHeaders(tenant),
    body: { message: "How are webhooks retried?", threshold: 0, keyword_threshold: 0 },
  });
}

async function seeded(): Promise<{ tenant: string; id: string }> {
  const tenant = newTenant();
  const [m] = await seedMemories(primary, tenant, [
    { content: "Webhooks are retried five times with exponential backoff.", namespace: "devai/global/ops" },
  ]);
  return { tenant, id: m!.id };
}

dbTest("read replica down (connection refused): the read runs on the primary, not a 503", async () => {
  const { tenant, id } = await seeded();
  const replica = createReadSql(`postgresql://postgres@127.0.0.1:${freePort()}/postgres`, primary, { max: 2 });
  try {
    for (let i = 0; i < 2; i++) {
      const res = await retrieveThrough(replica, tenant);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body.memories.map((m: { id: string }) => m.id), [id]);
    }
  } finally {
    await replica.end({ timeout: 1 });
  }
});

dbTest("read replica that never answers: past its deadline the read runs on the primary", async () => {
  const { tenant, id } = await seeded();
  const fake = hungReplica();
  // The deadline is two statements at the pool's timeout and a connection attempt: 5.1 s here.
  const replica = createReadSql(`postgresql://postgres@127.0.0.1:${fake.port}/postgres`, primary, {
    max: 2,
    statementTimeoutMs: 50,
  });
  // postgres.js fetches the server's array types right after the handshake, from a promise it does
  // not keep: the fake never answers that either, and closing it (or ending the pool) rejects that
  // promise unhandled.
  // A real replica answers it when the connection opens; here it is the fake's, and ignored.
  const typesFetch = (e: PromiseRejectionEvent) => {
    const code = (e.reason as { code?: string })?.code;
    if (code === "CONNECTION_CLOSED" || code === "CONNECTION_DESTROYED") e.preventDefault();
  };
  globalThis.addEventListener("unhandledrejection", typesFetch);
  try {
    const res = await retrieveThrough(replica, tenant);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.memories.map((m: { id: string }) => m.id), [id]);
    assert.ok(fake.connections() > 0, "the replica was tried first");
  } finally {
    fake.close();
    await replica.end({ timeout: 0 }).catch(() => {});
    // The closed connections' rejections arrive after end resolves: the listener stays to the end
    // of this file.
    ignoredAtEnd.push(() => globalThis.removeEventListener("unhandledrejection", typesFetch));
  }
});

Deno.test("a read the replica cancels for replay (40001) is a 503 to retry, not a 500", () => {
  const conflict = Object.assign(new Error("canceling statement due to conflict with recovery"), { code: "40001" });
  assert.equal(mapDatabaseError(conflict)?.status, 503);
});

dbTest("close the pool", async () => {
  await primary.end();
  for (const stop of ignoredAtEnd) stop();
});
