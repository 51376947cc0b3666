// POST memory/usage from two sessions at once (docs/context.md#usage-feedback): each report
// counts a memory new to its session and turns another it had reported into a citation. The
// counters (public.memory_usage) are taken in memory id order, so the two reports wait for each
// other instead of deadlocking, and both are counted.
import assert from "node:assert/strict";
import { contextApi, ns } from "./support/context.ts";
import { realServerOnly } from "./support/backend.ts";
import { dbTest } from "./support/http.ts";
import { newTenant, seedMemories, testSql } from "./support/seed.ts";
import { lockWaiters, waitUntil } from "./support/wait.ts";

const sql = testSql(6);
const api = contextApi(sql);

Deno.test({
  ...realServerOnly(
    "usage: two sessions' reports moving the same counters in opposite orders are both counted",
    "three transactions on three connections at once",
  ),
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const t = newTenant();
  const [a, b] = await seedMemories(sql, t, [
    { content: "Counted first by session two.", namespace: ns("usage-lock"), strength: 0.5 },
    { content: "Counted first by session one.", namespace: ns("usage-lock"), strength: 0.5 },
  ]);
  assert.equal((await api.usage(t, { session_id: "one", retrieved: [b!.id] })).status, 200);
  assert.equal((await api.usage(t, { session_id: "two", retrieved: [a!.id] })).status, 200);

  // Session one: a is new (its counter row is updated), b turns cited (its counter too); session
  // two the other way round. Another transaction holds a's counter row: session one queues on it
  // first, then session two, which (before the fix) had taken b's row by then.
  const blocker = await sql.reserve();
  let one, two;
  try {
    await blocker`begin`;
    await blocker`select from public.memory_usage where memory_id = ${a!.id} for update`;
    one = api.usage(t, { session_id: "one", retrieved: [a!.id, b!.id], cited: [b!.id] });
    await waitUntil(async () => (await lockWaiters(sql)) >= 1, "session one's report waiting on a's counter");
    two = api.usage(t, { session_id: "two", retrieved: [a!.id, b!.id], cited: [a!.id] });
    await waitUntil(async () => (await lockWaiters(sql)) >= 2, "session two's report waiting too");
    await blocker`commit`;
  } finally {
    blocker.release();
  }
  // Before the fix: one of them 409 (deadlock detected, rolled back), its report lost.
  const answers = await Promise.all([one, two]);
  assert.deepEqual(answers.map((r) => [r!.status, r!.body.recorded, r!.body.cited]), [[200, 1, 1], [200, 1, 1]]);
  const counters = await sql`select memory_id, retrieval_count, citation_count, ignore_count from public.memory_usage
                              where owner_id = ${t} order by memory_id`;
  assert.deepEqual(
    counters.map((r) => [r.retrieval_count, r.citation_count, r.ignore_count]),
    [[2, 1, 1], [2, 1, 1]],
  );
});

dbTest("close the pool", async () => {
  await api.settle();
  await sql.end();
});
