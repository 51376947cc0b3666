// A retrieval message made of empty or stop-word phrases ("" "" ... or "the" "the" ...) and
// exclusions of them (-"" -the) is read like any other message: its work on the wire stays that of
// a message of words. Before, Postgres raised one NOTICE per such phrase while reading the query's
// terms (public.memory_keyword_terms), and sent each to the client, which drops them: 20,000 quote
// marks cost 10,000 notices, 23 MB from the server (each with its context lines) and 270-410 ms of database time (a
// message of 20,000 characters of words: 35-45 ms). Counted in bytes through a proxy, not timed.
import assert from "node:assert/strict";
import { createHandler } from "../supabase/functions/memory-retrieve/handler.ts";
import { createSql } from "../supabase/functions/_shared/db-pool.ts";
import { localEmbedder } from "../supabase/functions/_shared/embeddings.ts";
import { userHeaders } from "./support/auth.ts";
import { realServerOnly } from "./support/backend.ts";
import { testConfig, testDatabaseUrl } from "./support/config.ts";
import { callJson } from "./support/http.ts";
import { startPgProxy } from "./support/pg-proxy.ts";
import { newTenant } from "./support/seed.ts";

Deno.test({
  ...realServerOnly(
    "retrieval: a message of empty or stop-word phrases sends no more from the database than a message of words",
    "counts the bytes Postgres sends through a TCP proxy",
  ),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const proxy = startPgProxy(testDatabaseUrl());
    const sql = createSql(proxy.url, { max: 1 });
    const retrieve = createHandler({ sql, config: testConfig(), embedder: localEmbedder() });
    const tenant = newTenant();
    const headers = await userHeaders(tenant);
    const sent = async (message: string, mode: string) => {
      const before = proxy.bytesFromServer();
      const res = await callJson(retrieve, "http://localhost/functions/v1/memory-retrieve", {
        headers,
        body: { message, project: "demo", mode },
      });
      assert.equal(res.status, 200);
      return proxy.bytesFromServer() - before;
    };
    try {
      await sent("warm the pool and the prepared statements", "hybrid");
      for (const mode of ["keyword", "hybrid"]) {
        const words = await sent(Array.from({ length: 2500 }, (_, i) => `w${i}`).join(" ").slice(0, 20_000), mode);
        for (
          const message of ['"'.repeat(20_000), '"the" '.repeat(3_333), '-"" '.repeat(5_000), "-the ".repeat(4_000)]
        ) {
          const bytes = await sent(message, mode);
          assert.ok(
            bytes <= words + 20_000,
            `${mode} ${
              JSON.stringify(message.slice(0, 8))
            }...: ${bytes} bytes from the database, a message of words ${words}`,
          );
        }
      }
    } finally {
      await sql.end();
      proxy.close();
    }
  },
});
