// The rows a dedup pass locks (docs/operations.md#lock-order): after the namespace's lock and the
// texts' hash locks, the memories in id order, in one statement: the candidate's neighbours and the
// memory that says the model's merged text. That memory was not locked at all: the pass superseded
// the target by it while a forget of it was under way, and the target's fact, with the candidate's,
// was said by nothing live once the forget committed (locked after the neighbours instead, it
// would close a cycle with a write locking the two in id order). An exact duplicate under a forget
// likewise: the candidate was answered NOOP by a memory the forget removed. Now the pass waits for
// such a write and, the memory gone, runs again on the same decision (not decided again).
// Ordered on pg_blocking_pids, no sleeps.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createSql, type Sql } from "../supabase/functions/_shared/db-pool.ts";
import { hashVector, reply, vectorWithSimilarity } from "./fake_openai.ts";
import { realServerOnly } from "./support/backend.ts";
import { testDatabaseUrl } from "./support/config.ts";
import { newTenant, seedMemory } from "./support/seed.ts";
import { waitUntil } from "./support/wait.ts";
import {
  drainAll,
  EMBEDDING_MODEL,
  memoriesOf,
  patientEnv,
  queueDedupCandidate,
  type WriteEnv,
  writeEnv,
} from "./write_helpers.ts";

const NS = "devai/project/taskforge";
const base = hashVector("dedup lock order base");
const CANDIDATE = "The task-api deploys with pnpm run deploy.";
const MERGED = "Releases of the service go out through the pnpm release script.";

/** An id that sorts by its first byte: `prefix` "00" < "80" < "ff". */
const idAt = (prefix: string) => prefix + randomUUID().slice(2);

/**
 * Each memory's row held by a transaction of its own (`change` runs in it after the lock, as the
 * write under way would). `follow` lets go of each holder as soon as the worker waits for it, in
 * the order it waits, until `done` settles, and returns that order.
 */
async function holdEach(ids: string[], change?: (q: Sql, id: string) => Promise<unknown>) {
  const holders = ids.map(() => createSql(testDatabaseUrl(), { max: 1 }));
  const gates = ids.map(() => Promise.withResolvers<void>());
  const pids: number[] = [];
  const ready = ids.map(() => Promise.withResolvers<void>());
  const runs = ids.map((id, i) =>
    holders[i]!.begin(async (q) => {
      pids[i] = (await q<{ pid: number }[]>`select pg_backend_pid() as pid`)[0]!.pid;
      await q`select id from public.devai_memories where id = ${id} for no key update`;
      await change?.(q as unknown as Sql, id);
      ready[i]!.resolve();
      await gates[i]!.promise;
    })
  );
  await Promise.all(ready.map((r) => r.promise));
  return {
    async follow(sql: Sql, done: Promise<unknown>): Promise<string[]> {
      let settled = false;
      done.then(() => settled = true, () => settled = true);
      const order: string[] = [];
      for (;;) {
        const blocker = await waitUntil(
          async () => {
            if (settled) return -1;
            const [row] = await sql<{ b: number }[]>`
            select b from pg_stat_activity a, unnest(pg_blocking_pids(a.pid)) b
             where a.pid <> all (${pids}::int[]) and b = any (${pids}::int[]) limit 1`;
            return row?.b;
          },
          "the worker waiting for a holder, or done",
          { pollMs: 20 },
        );
        if (blocker === -1) return order;
        const i = pids.indexOf(blocker);
        order.push(ids[i]!);
        gates[i]!.resolve();
        await runs[i];
      }
    },
    async end() {
      for (const g of gates) g.resolve();
      await Promise.allSettled(runs);
      for (const h of holders) await h.end();
    },
  };
}

/** A memory of the tenant's in NS with this embedding (and id, when given). */
const seed = (env: WriteEnv, tenant: string, content: string, embedding: number[], id?: string) =>
  seedMemory(env.sql, tenant, { id, content, namespace: NS, embedding, embedding_model: EMBEDDING_MODEL });

/** What a forget of the memory holds until it commits: its row, soft-deleted. */
const forgetting = (q: Sql, id: string) =>
  q`update public.devai_memories set state = 'soft_deleted', purge_at = now() + interval '30 days' where id = ${id}`;

/**
 * A test of a dedup job of CANDIDATE whose decision, an UPDATE of the nearest neighbour to MERGED
 * (a second one would be an ADD), is held until the memories `place` seeded are held (and changed
 * by `change` under their lock); then `check` with the worker's waits for them, in order.
 */
function testMergeWhileHeld(
  name: string,
  place: (env: WriteEnv, tenant: string) => Promise<string[]>,
  change: ((q: Sql, id: string) => Promise<unknown>) | undefined,
  check: (env: WriteEnv, tenant: string, waited: string[]) => Promise<void>,
): void {
  Deno.test({
    ...realServerOnly(name, "the worker and a holder per memory on connections of their own"),
    sanitizeOps: false,
    sanitizeResources: false,
  }, async () => {
    const { env, deps } = await patientEnv();
    const go = Promise.withResolvers<void>();
    let held: Awaited<ReturnType<typeof holdEach>> | undefined;
    let draining: Promise<unknown> | undefined;
    try {
      const tenant = newTenant();
      const ids = await place(env, tenant);
      env.fake.setEmbedding(CANDIDATE, base);
      env.fake.onChat("NEW candidate", [
        reply.until(go.promise, reply.json({ action: "UPDATE", target: 0, content: MERGED })),
        reply.json({ action: "ADD", reason: "unexpected second decision" }),
      ]);
      await queueDedupCandidate(env, tenant, randomUUID(), CANDIDATE, NS);
      const drained = drainAll(deps, tenant);
      draining = drained.catch(() => {}); // awaited below (and after a failure, before closing)
      await env.fake.chatRequestsReceived(1);
      // The model has answered nothing yet: the memories are held, then the decision is applied.
      held = await holdEach(ids, change);
      go.resolve();
      const waited = await held.follow(env.sql, drained);
      assert.equal((await drained).done, 1);
      await check(env, tenant, waited);
    } finally {
      go.resolve();
      await held?.end();
      await draining;
      await env.close();
    }
  });
}

const FAR = hashVector("far from the candidate");
const near = (sim: number, tag: string) => vectorWithSimilarity(base, sim, tag);

{
  const placed: Record<string, string> = {};
  testMergeWhileHeld(
    "dedup: a pass locks the neighbours and the memory saying the merged text in id order, in one statement",
    async (env, tenant) => {
      // The target sorts after the merged text's memory, a neighbour before it and one after.
      const target = await seed(env, tenant, "The task-api deploys with npm run deploy.", near(0.93, "t"), idAt("c0"));
      const before = await seed(env, tenant, "The task-api deploys from the main branch.", near(0.92, "b"), idAt("40"));
      const after = await seed(env, tenant, "The task-api deploys on every tag.", near(0.91, "a"), idAt("f0"));
      const says = await seed(env, tenant, MERGED, FAR, idAt("80"));
      Object.assign(placed, { target: target.id, before: before.id, after: after.id, says: says.id });
      return [target.id, before.id, after.id, says.id];
    },
    undefined,
    async (env, tenant, waited) => {
      assert.deepEqual(
        waited,
        [placed.before, placed.says, placed.target, placed.after],
        "the worker locked the four memories in id order (the merged text's one among them)",
      );
      assert.equal(env.fake.chatRequests().length, 1);
      const mems = await memoriesOf(env.sql, tenant);
      assert.equal(mems.find((m) => m.id === placed.target)!.superseded_by, placed.says, "it replaced the target");
      assert.equal(mems.find((m) => m.id === placed.says)!.is_valid, true);
    },
  );
}

{
  const placed: Record<string, string> = {};
  testMergeWhileHeld(
    "dedup: the memory saying the merged text, forgotten while the pass applies: the pass waits and stores the text anew, decided once",
    async (env, tenant) => {
      placed.target = (await seed(env, tenant, "The task-api deploys with npm run deploy.", near(0.93, "t"))).id;
      placed.says = (await seed(env, tenant, MERGED, FAR)).id;
      env.fake.setEmbedding(MERGED, FAR);
      // The user forgets the memory that says the merged text; the forget has not committed when
      // the decision is applied.
      return [placed.says];
    },
    forgetting,
    async (env, tenant, waited) => {
      assert.deepEqual(
        waited,
        [placed.says],
        "the pass went on without waiting for the forget of the memory it merged into",
      );
      assert.equal(env.fake.chatRequests().length, 1, "decided once");
      const mems = await memoriesOf(env.sql, tenant);
      const merged = mems.find((m) => m.content === MERGED && m.id !== placed.says);
      assert.ok(merged?.is_valid, `the merged text is stored anew: ${JSON.stringify(mems)}`);
      assert.equal(mems.find((m) => m.id === placed.target)!.superseded_by, merged.id, "it replaces the target");
      assert.equal(
        mems.find((m) => m.id === placed.says)!.superseded_by,
        null,
        "the forgotten memory is left as it was",
      );
    },
  );
}

Deno.test({
  ...realServerOnly(
    "dedup: an exact duplicate forgotten while the pass checks it: the pass waits and stores the candidate",
    "the worker and the forget on two connections at once",
  ),
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const env = await writeEnv({ withLlm: false });
  let held: Awaited<ReturnType<typeof holdEach>> | undefined;
  try {
    const tenant = newTenant();
    const dup = await seedMemory(env.sql, tenant, { content: CANDIDATE, namespace: NS });
    await queueDedupCandidate(env, tenant, "dup-forgotten", CANDIDATE, NS);
    held = await holdEach([dup.id], forgetting);
    const draining = drainAll(env.deps, tenant);
    const waited = await held.follow(env.sql, draining);
    assert.equal((await draining).done, 1);
    assert.deepEqual(waited, [dup.id], "the pass answered NOOP by a memory a forget was removing");
    const live = (await memoriesOf(env.sql, tenant)).filter((m) => m.is_valid && m.id !== dup.id);
    assert.deepEqual(live.map((m) => m.content), [CANDIDATE], "the candidate is stored");
  } finally {
    await held?.end();
    await env.close();
  }
});
