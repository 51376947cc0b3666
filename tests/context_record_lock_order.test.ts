// The assembly's record after the answer (public.record_context_assembly, docs/context.md#the-api):
// two assemblies of one session that inject the same memories in different orders (one put the
// first in its critical tier, the other the second) upsert the session's injection rows in memory
// id order, so they wait on each other instead of deadlocking and losing one record; and a record
// writes its rows before it reinforces, so one reinforcing x and injecting y and another
// reinforcing y and injecting x do not deadlock either.
import assert from "node:assert/strict";
import { contextApi, ns, seedLinked } from "./support/context.ts";
import { realServerOnly } from "./support/backend.ts";
import { dbTest } from "./support/http.ts";
import { newTenant, testSql } from "./support/seed.ts";
import { lockWaiters, waitUntil } from "./support/wait.ts";

const sql = testSql(6);
const api = contextApi(sql);

Deno.test({
  ...realServerOnly(
    "assemble: two records of one session injecting the same memories in opposite orders both land",
    "three transactions on three connections at once",
  ),
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const t = newTenant();
  const [x, y] = await seedLinked(sql, t, [
    {
      content: "src/cart/total.ts rounds every line to integer cents before summing.",
      namespace: ns("lock"),
      metadata: { category: "conventions", files: ["src/cart/total.ts"] },
    },
    {
      content: "src/cart/tax.ts applies tax per line, never on the order total.",
      namespace: ns("lock"),
      metadata: { category: "conventions", files: ["src/cart/tax.ts"] },
    },
  ]);
  const on = (file: string) => ({ project: "lock", session_id: "s-lock", signals: { current_file: file } });
  // Each file's convention goes first (critical), the other after it: opposite orders.
  const first = await api.assemble(t, on("src/cart/total.ts"));
  const second = await api.assemble(t, on("src/cart/tax.ts"));
  assert.deepEqual(first.body.memories.map((m: { id: string }) => m.id), [x!.id, y!.id]);
  assert.deepEqual(second.body.memories.map((m: { id: string }) => m.id), [y!.id, x!.id]);
  await api.settle();

  // Another transaction holds x's injection row: the first record queues on x holding nothing;
  // the second (y then x, before the fix) takes y and queues on x behind it.
  const blocker = await sql.reserve();
  try {
    await blocker`begin`;
    await blocker`select from public.context_injections where owner_id = ${t} and memory_id = ${x!.id} for update`;
    await api.assemble(t, on("src/cart/total.ts"));
    await waitUntil(async () => (await lockWaiters(sql)) >= 1, "the first record waiting on x's row");
    await api.assemble(t, on("src/cart/tax.ts"));
    await waitUntil(async () => (await lockWaiters(sql)) >= 2, "the second record waiting too");
    await blocker`commit`;
  } finally {
    blocker.release();
  }
  // Before the fix: "deadlock detected" (40P01), one record lost.
  assert.equal(await api.settle(), 2);
  const [events] =
    await sql`select count(*)::int as n from public.memory_events where owner_id = ${t} and node = 'context'`;
  assert.equal(events!.n, 4, "every assembly recorded its event");
});

Deno.test({
  ...realServerOnly(
    "assemble: a record reinforcing a memory another record injects does not deadlock with it",
    "three transactions on three connections at once",
  ),
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const t = newTenant();
  const [xId, yId] = [crypto.randomUUID(), crypto.randomUUID()].sort() as [string, string];
  await seedLinked(sql, t, [
    {
      id: xId,
      content: "Rounding happens per line, in integer cents.",
      namespace: ns("lock2"),
      metadata: { category: "conventions", files: ["src/alpha/one.ts"] },
    },
    {
      id: yId,
      content: "Taxes are applied per line, never on the total.",
      namespace: ns("lock2"),
      metadata: { category: "conventions", files: ["lib/beta/two.ts"] },
    },
  ]);
  const on = (session: string, file: string) => ({
    project: "lock2",
    session_id: session,
    signals: { current_file: file },
  });
  // With one.ts open, x is critical (reinforced) and y background (only injected); with two.ts
  // the other way round.
  const one = await api.assemble(t, on("s1", "src/alpha/one.ts"));
  assert.deepEqual(one.body.memories.map((m: { id: string; tier: string }) => [m.id, m.tier]), [
    [xId, "critical"],
    [yId, "background"],
  ]);
  await api.settle();
  // Session s1's record will find x's injection row held and y's missing (an insert: its foreign
  // key takes a key-share lock on y).
  await sql`delete from public.context_injections where owner_id = ${t} and session_id = 's1' and memory_id = ${yId}`;
  const events = async () =>
    Number((await sql`select count(*)::int as n from public.memory_events where owner_id = ${t}`)[0]!.n);
  const blocker = await sql.reserve();
  try {
    await blocker`begin`;
    await blocker`select from public.context_injections where owner_id = ${t} and session_id = 's1' for update`;
    // s1's record: before the fix it has locked x (reinforced) when it queues on its row.
    await api.assemble(t, on("s1", "src/alpha/one.ts"));
    await waitUntil(async () => (await lockWaiters(sql)) >= 1, "s1's record waiting on its injection row");
    // s2's record reinforces y, then (before the fix) waits for x's lock to insert x's row.
    const before = await events();
    await api.assemble(t, on("s2", "lib/beta/two.ts"));
    await waitUntil(
      async () => (await lockWaiters(sql)) >= 2 || (await events()) > before,
      "s2's record waiting or done",
    );
    await blocker`commit`;
  } finally {
    blocker.release();
  }
  // Before the fix: "deadlock detected" (40P01), one record lost.
  assert.equal(await api.settle(), 2);
  const rows = await sql`select session_id, memory_id from public.context_injections where owner_id = ${t}
                          order by session_id, memory_id`;
  assert.deepEqual(rows.map((r) => [r.session_id, r.memory_id]), [["s1", xId], ["s1", yId], ["s2", xId], ["s2", yId]]);
});

dbTest("close the pool", async () => {
  await api.settle();
  await sql.end();
});
