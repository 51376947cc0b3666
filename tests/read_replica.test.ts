// Reads through a read replica (SUPABASE_DB_READ_URL; docs/operations.md#read-replicas): a
// streaming replica of the test cluster, started by the project's own script (scripts/db.sh
// replica-start on DEVAI_TEST_REPLICA_PG_PORT, default 23 above the test cluster's port) and
// stopped at the end. With the replica's replay paused, what it answers is visibly its own: a
// memory written on the primary after the pause is not in a retrieval, a memory.query or a list
// read there, while the writes (reinforcement, the rate-limit token, remember) go to the primary,
// a get of the new memory finds it on the primary, and a retrieval asking for a revision the
// replica has not reached is answered by the primary.
import assert from "node:assert/strict";
import { createHandler } from "../supabase/functions/memory-retrieve/handler.ts";
import { createReadSql, type Sql } from "../supabase/functions/_shared/db.ts";
import { localEmbedder } from "../supabase/functions/_shared/embeddings.ts";
import { flushSearchWrites } from "../supabase/functions/_shared/retrieval/write-behind.ts";
import { userHeaders } from "./support/auth.ts";
import { realServerOnly } from "./support/backend.ts";
import { dbScript } from "./support/db-script.ts";
import { testConfig, testDatabaseUrl } from "./support/config.ts";
import { callJson } from "./support/http.ts";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, seedMemories, testSql } from "./support/seed.ts";
import { waitUntil } from "./support/wait.ts";

const PRIMARY_PORT = Number(new URL(testDatabaseUrl()).port || 5432);
const REPLICA_PORT = Number(Deno.env.get("DEVAI_TEST_REPLICA_PG_PORT") ?? PRIMARY_PORT + 23);
const WHY = "starts a streaming replica of the test cluster (scripts/db.sh replica-start)";

async function replica(command: "replica-start" | "replica-stop"): Promise<void> {
  await dbScript(command, { DEVAI_PG_PORT: String(PRIMARY_PORT), DEVAI_PG_REPLICA_PORT: String(REPLICA_PORT) });
}

/** Waits until the replica has replayed everything the primary has written so far. */
async function caughtUp(primary: Sql, standby: Sql): Promise<void> {
  const [p] = await primary<{ lsn: string }[]>`select pg_current_wal_lsn()::text as lsn`;
  await waitUntil(
    async () => {
      const [r] = await standby<{ done: boolean }[]>`select pg_last_wal_replay_lsn() >= ${p!.lsn}::pg_lsn as done`;
      return r!.done || undefined;
    },
    "the replica to replay the primary's WAL",
    { pollMs: 20 },
  );
}

Deno.test({
  ...realServerOnly(
    "read replica: retrieval, memory.query and list read the replica; writes and read-your-writes go to the primary",
    WHY,
  ),
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await replica("replica-start");
    const primary = testSql(3);
    const standby = createReadSql(`postgresql://postgres@127.0.0.1:${REPLICA_PORT}/postgres`, primary, { max: 3 });
    try {
      const [role] = await standby<{ recovering: boolean }[]>`select pg_is_in_recovery() as recovering`;
      assert.equal(role!.recovering, true, "the read pool is a standby");
      // Its snapshots do not hold back pruning on the primary: reinforcements stay HOT updates.
      const [feedback] = await standby<{ hot_standby_feedback: string }[]>`show hot_standby_feedback`;
      assert.equal(feedback!.hot_standby_feedback, "off", "the replica sends no hot standby feedback");
      const tenant = newTenant();
      const [old] = await seedMemories(primary, tenant, [
        {
          content: "The billing service retries webhooks five times",
          namespace: "devai/project/billing/ops",
          metadata: { category: "architecture" },
        },
      ]);
      // An agent of this test's own, allowed architecture and decisions.
      const agent = `replica-${crypto.randomUUID().slice(0, 8)}`;
      await primary`insert into public.memory_agent_allowlists (agent, category)
                    values (${agent}, 'architecture'), (${agent}, 'decisions')`;
      await caughtUp(primary, standby);
      await standby`select pg_wal_replay_pause()`;

      // Written on the primary after the replica stopped replaying.
      const api = memoryApi(primary, { readSql: standby });
      const written = await api("POST", "/memory/remember", {
        as: tenant,
        body: {
          content: "The billing service retries webhooks with exponential backoff",
          project: "billing",
          metadata: { category: "architecture" },
        },
      });
      assert.equal(written.status, 201, JSON.stringify(written.body));
      const fresh = written.body.memory.id as string;

      const retrieve = createHandler({
        sql: primary,
        readSql: standby,
        config: testConfig(),
        embedder: localEmbedder(),
      });
      const ask = async (body: Record<string, unknown>) =>
        await callJson(retrieve, "http://local/functions/v1/memory-retrieve", {
          headers: await userHeaders(tenant),
          body,
        });
      const onReplica = await ask({
        message: "How does the billing service retry webhooks?",
        project: "billing",
        threshold: 0,
        keyword_threshold: 0,
      });
      assert.equal(onReplica.status, 200, JSON.stringify(onReplica.body));
      const seen = onReplica.body.memories.map((m: { id: string }) => m.id);
      assert.deepEqual(seen, [old!.id], "the replica answered: it has not replayed the new memory");

      const query = await callJson(retrieve, "http://local/functions/v1/memory-retrieve/query", {
        headers: await userHeaders(tenant),
        body: {
          agent: "coder",
          query: "billing webhooks retries",
          project: "billing",
          threshold: 0,
          keyword_threshold: 0,
          return: "full",
        },
      });
      assert.equal(query.status, 200, JSON.stringify(query.body));
      assert.deepEqual(query.body.results.map((r: { id: string }) => r.id), [old!.id], "memory.query read the replica");

      // A category taken away from the agent is refused at once, though the replica has not
      // replayed the change: the allowlist is read on the primary.
      const asAgent = async () =>
        callJson(retrieve, "http://local/functions/v1/memory-retrieve/query", {
          headers: await userHeaders(tenant),
          body: { agent, query: "billing webhooks retries", categories: ["architecture"], project: "billing" },
        });
      const allowed = await asAgent();
      assert.equal(allowed.status, 200, `before: allowed. ${JSON.stringify(allowed.body)}`);
      await primary`delete from public.memory_agent_allowlists where agent = ${agent} and category = 'architecture'`;
      const revoked = await asAgent();
      assert.equal(revoked.status, 403, JSON.stringify(revoked.body));
      assert.equal(revoked.body.error.code, "category_not_allowed");

      const listed = await api("GET", "/memory?project=billing", { as: tenant });
      assert.deepEqual(listed.body.memories.map((m: { id: string }) => m.id), [old!.id], "list read the replica");
      const got = await api("GET", `/memory/${fresh}`, { as: tenant });
      assert.equal(got.status, 200, "a memory the replica does not have yet is found on the primary");

      // The caller has seen the primary's revision (from remember's thread): the replica is behind it.
      const [rev] = await primary<{ revision: number }[]>`
        select revision::int from public.memory_thread_revisions where owner_id = ${tenant} and thread_id = 'default'`;
      const ahead = await ask({
        message: "How does the billing service retry webhooks?",
        project: "billing",
        since_revision: rev!.revision,
        threshold: 0,
        keyword_threshold: 0,
      });
      assert.equal(ahead.body.revision, rev!.revision, "answered by the primary");
      assert.ok(ahead.body.memories.some((m: { id: string }) => m.id === fresh));

      // What the reads wrote went to the primary: the reinforcements and the read tokens.
      await flushSearchWrites(primary);
      const [acc] = await primary<{ n: number }[]>`select access_count as n from public.devai_memories where id = ${
        old!.id
      }`;
      assert.ok(acc!.n >= 1, "the memory the replica returned was reinforced on the primary");
      const [bucket] = await primary<{ n: number }[]>`
        select count(*)::int as n from memory_private.rate_limit_buckets where owner_id = ${tenant} and route_class = 'read'`;
      assert.equal(bucket!.n, 1, "read requests took their tokens on the primary");

      await standby`select pg_wal_replay_resume()`;
      await caughtUp(primary, standby);
      const later = await ask({
        message: "How does the billing service retry webhooks?",
        project: "billing",
        threshold: 0,
        keyword_threshold: 0,
      });
      assert.ok(later.body.memories.some((m: { id: string }) => m.id === fresh), "once replayed, the replica has it");
    } finally {
      await primary`delete from public.memory_agent_allowlists where agent like 'replica-%'`.catch(() => {});
      await standby`select pg_wal_replay_resume()`.catch(() => {});
      await standby.end();
      await primary.end();
      await replica("replica-stop");
    }
  },
});
