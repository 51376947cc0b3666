// The service behind a transaction pooler, as a deployment reaches Postgres through Supabase's
// (Supavisor, port 6543): PgBouncer in transaction mode with no prepared statements kept, in front
// of the test cluster (scripts/db.sh pooler-start on DEVAI_TEST_POOLER_PG_PORT, default a free port
// below 32768), and pools with DB_PREPARE=off (docs/operations.md#prepared-statements). Two
// tenants write, retrieve, query and list at the same time through it: every answer is right and
// holds only the asking tenant's memories (each statement carries its tenant's settings, so
// whichever server connection the pooler hands it, nothing of another tenant's is left there), and
// what retrieval writes behind its answer reaches the database.
import assert from "node:assert/strict";
import { createSql } from "../supabase/functions/_shared/db.ts";
import { localEmbedder } from "../supabase/functions/_shared/embeddings.ts";
import { flushSearchWrites } from "../supabase/functions/_shared/retrieval/write-behind.ts";
import { createHandler } from "../supabase/functions/memory-retrieve/handler.ts";
import { userHeaders } from "./support/auth.ts";
import { realServerOnly } from "./support/backend.ts";
import { dbScript } from "./support/db-script.ts";
import { testConfig, testDatabaseUrl } from "./support/config.ts";
import { callJson, freePort } from "./support/http.ts";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, testSql } from "./support/seed.ts";
import { assertSlowReadCancelled } from "./support/slow-read.ts";

const SERVER_PORT = Number(new URL(testDatabaseUrl()).port || 5432);
// A free port below the ephemeral range: a fixed one in it (the server's + 24) was once a client socket's.
const POOLER_PORT = Number(Deno.env.get("DEVAI_TEST_POOLER_PG_PORT") ?? freePort());
const WHY = "starts PgBouncer in front of the test cluster (scripts/db.sh pooler-start)";

async function pooler(command: "pooler-start" | "pooler-stop"): Promise<void> {
  await dbScript(command, { DEVAI_PG_PORT: String(SERVER_PORT), DEVAI_PG_POOLER_PORT: String(POOLER_PORT) });
}

const PROJECTS = ["billing", "search"] as const;
const FACTS: Record<(typeof PROJECTS)[number], string[]> = {
  billing: [
    "The billing service retries failed webhooks five times with exponential backoff",
    "Invoices are rendered by the billing worker from the invoice_templates table",
    "Refunds above 500 euros need a second approval in the billing admin",
  ],
  search: [
    "The search indexer retries failed webhooks twice, then parks them in the dead letter queue",
    "Search results are cached for 30 seconds in the edge cache",
    "The search ranking weights live in config/ranking.yaml",
  ],
};

Deno.test({
  ...realServerOnly(
    "transaction pooler: two tenants at once through PgBouncer in transaction mode, unprepared statements, each sees only its own",
    WHY,
  ),
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await pooler("pooler-start");
    const direct = testSql(2);
    const pooled = createSql(`postgresql://postgres@127.0.0.1:${POOLER_PORT}/postgres`, { max: 6, prepare: "off" });
    try {
      const [via] = await pooled<{ port: number }[]>`select inet_server_port() as port`;
      assert.equal(via!.port, SERVER_PORT, "the pool reaches the cluster through the pooler's port");

      const api = memoryApi(pooled);
      const retrieve = createHandler({ sql: pooled, config: testConfig(), embedder: localEmbedder() });
      const tenants = PROJECTS.map((project) => ({ project, id: newTenant(), ids: [] as string[] }));

      // Both tenants write at once: each remember is a transaction of several statements.
      await Promise.all(tenants.map(async (t) => {
        for (const content of FACTS[t.project]) {
          const res = await api("POST", "/memory/remember", {
            as: t.id,
            body: { content, project: t.project, metadata: { category: "architecture" } },
          });
          assert.equal(res.status, 201, JSON.stringify(res.body));
          t.ids.push(res.body.memory.id as string);
        }
      }));

      // Both ask the same question, several times each, interleaved: the webhook memory of their own.
      const asks = tenants.flatMap((t) =>
        Array.from({ length: 4 }, async () => {
          const res = await callJson(retrieve, "http://local/functions/v1/memory-retrieve", {
            headers: await userHeaders(t.id),
            body: { message: "How are failed webhooks retried?", project: t.project, threshold: 0 },
          });
          assert.equal(res.status, 200, JSON.stringify(res.body));
          const seen = res.body.memories.map((m: { id: string }) => m.id) as string[];
          assert.equal(seen[0], t.ids[0], `${t.project}: its own webhook memory first`);
          assert.ok(seen.every((id) => t.ids.includes(id)), `${t.project}: only its own memories`);
          return res;
        })
      );
      await Promise.all(asks);

      await Promise.all(tenants.map(async (t) => {
        const query = await callJson(retrieve, "http://local/functions/v1/memory-retrieve/query", {
          headers: await userHeaders(t.id),
          body: { agent: "coder", query: "webhooks retries", project: t.project, threshold: 0, return: "full" },
        });
        assert.equal(query.status, 200, JSON.stringify(query.body));
        assert.ok(query.body.results.length > 0, `${t.project}: memory.query found its memory`);
        assert.ok(query.body.results.every((r: { id: string }) => t.ids.includes(r.id)), `${t.project}: query`);
        const listed = await api("GET", `/memory?project=${t.project}`, { as: t.id });
        assert.deepEqual(
          listed.body.memories.map((m: { id: string }) => m.id).sort(),
          [...t.ids].sort(),
          `${t.project}: the list holds exactly its memories`,
        );
      }));

      // What the retrievals wrote behind their answers went through the pooler too.
      await flushSearchWrites(pooled);
      for (const t of tenants) {
        const [row] = await direct<{ n: number }[]>`
          select access_count::int as n from public.devai_memories where id = ${t.ids[0]!}`;
        assert.ok(row!.n >= 4, `${t.project}: its webhook memory was reinforced by its four retrievals`);
      }
    } finally {
      await pooled.end();
      await direct.end();
      await pooler("pooler-stop");
    }
  },
});

Deno.test({
  ...realServerOnly(
    "transaction pooler: a read past the pool's statement timeout is cancelled through PgBouncer (503), once, and the pool reads again",
    WHY,
  ),
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await pooler("pooler-start");
    const direct = testSql(1);
    const pooled = createSql(`postgresql://postgres@127.0.0.1:${POOLER_PORT}/postgres`, {
      max: 1,
      prepare: "off",
      statementTimeoutMs: 1_000,
    });
    try {
      // The cancel request goes to the pooler, which passes it to the server running the read.
      await assertSlowReadCancelled(pooled, direct);
    } finally {
      await pooled.end();
      await direct.end();
      await pooler("pooler-stop");
    }
  },
});
