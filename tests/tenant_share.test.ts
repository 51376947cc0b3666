// One tenant's share of a pool (_shared/tenant-share.ts): a tenant's burst of slow requests holds
// at most half the pool's connections, so another tenant's request is answered while the burst
// still waits; the tenant's own requests run in the order they came; a call made inside one that
// holds the share goes straight through (it must not wait for its own caller).
import assert from "node:assert/strict";
import { createSql, readAsTenant, withTenant } from "../supabase/functions/_shared/db.ts";
import { TenantShares, tenantShares } from "../supabase/functions/_shared/tenant-share.ts";
import { realServerOnly } from "./support/backend.ts";
import { testDatabaseUrl } from "./support/config.ts";
import { newTenant, testSql } from "./support/seed.ts";

/** Lets every pending callback run (microtasks and timers due now). */
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

/** A promise and the function that settles it. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

Deno.test("tenant share: at most `limit` calls of a tenant run at once, the rest in the order they came", async () => {
  const shares = new TenantShares(2);
  const started: number[] = [];
  const gates = [0, 1, 2, 3].map(() => gate());
  const calls = gates.map((g, i) =>
    shares.run("a", async () => {
      started.push(i);
      await g.opened;
      return i;
    })
  );
  await settle();
  assert.deepEqual(started, [0, 1], "two run, two wait");
  assert.deepEqual(shares.load("a"), { active: 2, waiting: 2 });
  // Another tenant is not held back by a's queue.
  assert.equal(await shares.run("b", () => Promise.resolve("b")), "b");
  gates[1]!.open();
  assert.equal(await calls[1], 1);
  await settle();
  assert.deepEqual(started, [0, 1, 2], "the first waiting call takes the freed slot");
  gates[0]!.open();
  gates[2]!.open();
  gates[3]!.open();
  assert.deepEqual(await Promise.all(calls), [0, 1, 2, 3]);
  assert.deepEqual(started, [0, 1, 2, 3]);
  assert.deepEqual(shares.load("a"), { active: 0, waiting: 0 }, "nothing held after");
});

Deno.test("tenant share: a failed call gives its slot back; a nested call of the same tenant does not wait", async () => {
  const shares = new TenantShares(1);
  await assert.rejects(shares.run("a", () => Promise.reject(new Error("boom"))), /boom/);
  assert.deepEqual(shares.load("a"), { active: 0, waiting: 0 });
  // With one slot, a call inside the one holding it would wait forever if it queued.
  const inner = await shares.run("a", () => shares.run("a", () => Promise.resolve("inner")));
  assert.equal(inner, "inner");
  // Another pool's shares are its own: a call on it waits for its own slot.
  const other = new TenantShares(1);
  const g = gate();
  const holding = other.run("a", () => g.opened);
  let nestedRan = false;
  const nested = shares.run("a", () => other.run("a", () => Promise.resolve(nestedRan = true)));
  await settle();
  assert.equal(nestedRan, false, "a share of this pool does not stand for a share of another");
  g.open();
  await holding;
  await nested;
  assert.equal(nestedRan, true);
});

Deno.test("tenant share: half the pool, at least one connection", () => {
  assert.equal(tenantShares({}, 10).limit, 5);
  assert.equal(tenantShares({}, 3).limit, 1);
  assert.equal(tenantShares({}, 1).limit, 1);
  assert.equal(tenantShares({}).limit, 1, "a pool createSql did not make");
});

Deno.test({
  ...realServerOnly(
    "tenant share: another tenant's read is answered while a tenant's burst of slow reads waits",
    "the burst waits on an advisory lock another session holds",
  ),
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const admin = testSql(2);
    const pool = createSql(testDatabaseUrl(), { max: 2, applicationName: "devai-memory-tests-share" });
    const busy = { tenantId: newTenant(), actor: "user" };
    const other = { tenantId: newTenant(), actor: "user" };
    const lockKey = Math.floor(Math.random() * 2 ** 31);
    const locker = await admin.reserve();
    try {
      await locker`select pg_advisory_lock(${lockKey})`;
      // Four reads of one tenant, each waiting for the lock: with a pool of two, one runs (its
      // share), three wait in the share's queue, and a connection stays free.
      const burst = [0, 1, 2, 3].map(() =>
        readAsTenant(pool, busy, (q, tenant) => q`select pg_advisory_xact_lock_shared(${lockKey}) from ${tenant}`)
      );
      // Until the database shows the running one waiting for the lock.
      for (;;) {
        const [row] = await admin<{ n: number }[]>`
          select count(*)::int as n from pg_locks
           where locktype = 'advisory' and not granted and objid = ${lockKey}`;
        if (row!.n >= 1) break;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      assert.deepEqual(tenantShares(pool).load(busy.tenantId), { active: 1, waiting: 3 });
      // The other tenant is answered now, with the burst still waiting. (Without the share, both
      // connections would be the burst's and this read would wait for the lock: the race's other
      // side fails the test instead of hanging it.)
      let timer: ReturnType<typeof setTimeout> | undefined;
      const answered = await Promise.race([
        readAsTenant(pool, other, (q, tenant) => q<{ uid: string }[]>`select auth.uid()::text as uid from ${tenant}`)
          .then(([row]) => row?.uid),
        new Promise((resolve) => (timer = setTimeout(() => resolve("still waiting after 10 s"), 10_000))),
      ]);
      clearTimeout(timer);
      assert.equal(answered, other.tenantId);
      assert.equal(tenantShares(pool).load(busy.tenantId).waiting, 3, "the burst was still waiting");
      await locker`select pg_advisory_unlock(${lockKey})`;
      await Promise.all(burst);
      assert.deepEqual(tenantShares(pool).load(busy.tenantId), { active: 0, waiting: 0 });
      // A transaction's reads of its own tenant run inside its share.
      const inside = await withTenant(
        pool,
        busy,
        () =>
          readAsTenant(pool, busy, (q, tenant) => q<{ uid: string }[]>`select auth.uid()::text as uid from ${tenant}`),
      );
      assert.equal(inside[0]?.uid, busy.tenantId);
    } finally {
      locker.release();
      await pool.end();
      await admin.end();
    }
  },
});
