// A pool's connections shared fairly between tenants (_shared/tenant-share.ts): one tenant alone
// takes all but one connection; another tenant's request gets the one left while a burst waits;
// when a call ends, the waiting tenant with the fewest calls running goes next; a call made inside
// one already admitted for the same tenant goes straight through (it must not wait for its caller),
// background work started inside a call does not (it takes its own turn), and the primary standing
// in for a replica that cannot answer admits that read on its own pool's shares. A call that waits
// past the pool's statement timeout is a 503 to the HTTP client, with nothing written.
import assert from "node:assert/strict";
import { createReadSql, createSql, readAsTenant, withTenant } from "../supabase/functions/_shared/db.ts";
import { runInBackground } from "../supabase/functions/_shared/jobs.ts";
import {
  AdmissionTimeout,
  outsideShares,
  TenantShares,
  tenantShares,
} from "../supabase/functions/_shared/tenant-share.ts";
import { DATABASE_RETRY_AFTER_SECONDS, mapDatabaseError } from "../supabase/functions/_shared/database-errors.ts";
import { realServerOnly } from "./support/backend.ts";
import { testDatabaseUrl } from "./support/config.ts";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, tenantWrites, testSql } from "./support/seed.ts";
import { waitUntil } from "./support/wait.ts";
import { freePort } from "./support/http.ts";

/** Lets every pending callback run (microtasks and timers due now). */
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

/** A promise and the function that settles it. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

Deno.test("tenant shares: a tenant takes all but one connection; when one ends, the waiting tenant with the fewest running goes next", async () => {
  const shares = new TenantShares(3);
  assert.equal(shares.perTenant, 2);
  const started: string[] = [];
  const gates = new Map<string, ReturnType<typeof gate>>();
  const call = (tenant: string, name: string) => {
    const g = gate();
    gates.set(name, g);
    return shares.run(tenant, async () => {
      started.push(name);
      await g.opened;
      return name;
    });
  };
  const calls = [call("a", "a1"), call("a", "a2"), call("a", "a3"), call("a", "a4")];
  await settle();
  assert.deepEqual(started, ["a1", "a2"], "a alone: all but one connection");
  assert.deepEqual(shares.load("a"), { active: 2, waiting: 2 });
  calls.push(call("b", "b1"));
  await settle();
  assert.deepEqual(started, ["a1", "a2", "b1"], "b takes the connection left");
  calls.push(call("c", "c1"));
  await settle();
  assert.deepEqual(shares.load("c"), { active: 0, waiting: 1 }, "the pool is full: c waits");
  gates.get("a1")!.open();
  await settle();
  assert.deepEqual(started.slice(3), ["c1"], "a1's connection goes to c (none running), not to a's older calls");
  gates.get("b1")!.open();
  await settle();
  assert.deepEqual(started.slice(4), ["a3"], "then a's next call, in the order a sent them");
  for (const g of gates.values()) g.open();
  await settle();
  for (const g of gates.values()) g.open();
  assert.deepEqual((await Promise.all(calls)).sort(), ["a1", "a2", "a3", "a4", "b1", "c1"]);
  assert.deepEqual(started.slice(5), ["a4"]);
  for (const t of ["a", "b", "c"]) assert.deepEqual(shares.load(t), { active: 0, waiting: 0 }, `nothing held by ${t}`);
});

Deno.test("tenant shares: a failed call gives its place back; a nested call of the same tenant does not wait", async () => {
  const shares = new TenantShares(1);
  await assert.rejects(shares.run("a", () => Promise.reject(new Error("boom"))), /boom/);
  assert.deepEqual(shares.load("a"), { active: 0, waiting: 0 });
  // With one connection, a call inside the one holding it would wait forever if it queued.
  const inner = await shares.run("a", () => shares.run("a", () => Promise.resolve("inner")));
  assert.equal(inner, "inner");
  // Another pool's shares are its own: a call on it waits for its own turn.
  const other = new TenantShares(1);
  const g = gate();
  const holding = other.run("a", () => g.opened);
  let nestedRan = false;
  const nested = shares.run("a", () => other.run("a", () => Promise.resolve(nestedRan = true)));
  await settle();
  assert.equal(nestedRan, false, "admitted on this pool is not admitted on another");
  g.open();
  await holding;
  await nested;
  assert.equal(nestedRan, true);
  // Background work started inside a call takes its own turn (it outlives the call).
  let background: Promise<string> | undefined;
  await shares.run("a", async () => {
    background = outsideShares(() => shares.run("a", () => Promise.resolve("background")));
    await settle();
    assert.deepEqual(shares.load("a"), { active: 1, waiting: 1 }, "the background call waits its turn");
  });
  assert.equal(await background, "background", "and runs once the call that started it has ended");
});

Deno.test("tenant shares: a call waits at most its limit, then leaves the queue as a 503 (nothing else changes)", async () => {
  const shares = new TenantShares(1);
  const g = gate();
  const holding = shares.run("a", () => g.opened);
  const late = shares.run("a", () => Promise.resolve("never"), 20);
  const next = shares.run("b", () => Promise.resolve("b"));
  await assert.rejects(late, (err: unknown) => err instanceof AdmissionTimeout && err.waitedMs === 20);
  assert.deepEqual(shares.load("a"), { active: 1, waiting: 0 }, "the timed-out call left the queue");
  const mapped = mapDatabaseError(new AdmissionTimeout(20));
  assert.equal(mapped?.status, 503);
  assert.equal(mapped?.code, "database_unavailable");
  assert.ok(mapped?.headers?.["retry-after"]);
  // A call whose holder ends before its limit is admitted, not refused.
  const patient = shares.run("a", () => Promise.resolve("patient"), 60_000);
  await settle();
  assert.deepEqual(shares.load("a"), { active: 1, waiting: 1 });
  g.open();
  await holding;
  assert.equal(await patient, "patient");
  assert.equal(await next, "b", "the tenant waiting behind it is admitted as before");
  assert.deepEqual(shares.load("b"), { active: 0, waiting: 0 });
});

Deno.test({
  name:
    "tenant shares: withTenant and readAsTenant wait for admission at most the pool's statement timeout, then a 503",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const pool = createSql(testDatabaseUrl(), { max: 1, statementTimeoutMs: 300 });
    const who = { tenantId: newTenant(), actor: "user" };
    const g = gate();
    try {
      // The one connection's admission is held by a transaction waiting on nothing in the database.
      const holding = withTenant(pool, who, () => g.opened);
      await waitUntil(
        () => Promise.resolve(tenantShares(pool).load(who.tenantId).active === 1),
        "the transaction admitted",
      );
      const err = await readAsTenant(pool, who, (q, tenant) => q`select 1 from ${tenant}`).then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(err instanceof AdmissionTimeout, String(err));
      assert.equal((err as AdmissionTimeout).waitedMs, 300, "the pool's statement timeout");
      assert.equal(mapDatabaseError(err)?.status, 503);
      g.open();
      await holding;
      const [row] = await readAsTenant(pool, who, (q, tenant) => q<{ n: number }[]>`select 1 as n from ${tenant}`);
      assert.equal(row?.n, 1, "admitted once the transaction has ended");
    } finally {
      g.open();
      await pool.end();
    }
  },
});

Deno.test("tenant shares: a pool's capacity is its size (createSql registers it); one connection for a pool it did not make", () => {
  assert.equal(tenantShares({}, 10).perTenant, 9);
  assert.equal(tenantShares({}, 1).perTenant, 1);
  assert.equal(tenantShares({}).capacity, 1);
  const pool = createSql(testDatabaseUrl(), { max: 7 });
  assert.equal(tenantShares(pool).capacity, 7);
  void pool.end();
});

Deno.test({
  ...realServerOnly(
    "tenant shares: another tenant's read is answered while a tenant's burst of reads and transactions waits",
    "the burst waits on an advisory lock another session holds",
  ),
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const admin = testSql(2);
    const pool = createSql(testDatabaseUrl(), { max: 3, applicationName: "devai-memory-tests-share" });
    const busy = { tenantId: newTenant(), actor: "user" };
    const other = { tenantId: newTenant(), actor: "user" };
    const lockKey = Math.floor(Math.random() * 2 ** 31);
    const locker = await admin.reserve();
    try {
      await locker`select pg_advisory_lock(${lockKey})`;
      // Two reads and two transactions of one tenant, each waiting for the lock: with a pool of
      // three, two run, two wait for their turn, and a connection stays free.
      const burst = [0, 1, 2, 3].map((i) =>
        i % 2 === 0
          ? readAsTenant(pool, busy, (q, tenant) => q`select pg_advisory_xact_lock_shared(${lockKey}) from ${tenant}`)
          : withTenant(pool, busy, (tx) => tx`select pg_advisory_xact_lock_shared(${lockKey})`)
      );
      // Until the database shows the running ones waiting for the lock.
      await waitUntil(
        async () => {
          const [row] = await admin<{ n: number }[]>`
          select count(*)::int as n from pg_locks
           where locktype = 'advisory' and not granted and objid = ${lockKey}`;
          return row!.n >= 2;
        },
        "two of the burst waiting for the lock",
        { pollMs: 10 },
      );
      assert.deepEqual(tenantShares(pool).load(busy.tenantId), { active: 2, waiting: 2 });
      // The other tenant is answered now, with the burst still waiting. (In one queue, all three
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
      assert.equal(tenantShares(pool).load(busy.tenantId).waiting, 2, "the burst was still waiting");
      await locker`select pg_advisory_unlock(${lockKey})`;
      await Promise.all(burst);
      assert.deepEqual(tenantShares(pool).load(busy.tenantId), { active: 0, waiting: 0 });
      // A transaction's reads of its own tenant run inside its admission.
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

/** A loopback port nothing listens on (a read replica that refuses connections). */
Deno.test({
  name: "tenant shares: the primary standing in for a replica that cannot answer admits the read on its own pool's " +
    "shares: with the tenant's share of the primary taken, the read waits there until one is free",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    // Two connections each: one tenant's share is one call on either pool.
    const primary = createSql(testDatabaseUrl(), { max: 2 });
    const replica = createReadSql(`postgresql://postgres@127.0.0.1:${freePort()}/postgres`, primary, { max: 2 });
    const who = { tenantId: newTenant(), actor: "user" };
    const g = gate();
    const holding = withTenant(primary, who, () => g.opened);
    let read: Promise<string | undefined> | undefined;
    const error = console.error;
    const logged: string[] = [];
    console.error = (line: string) => logged.push(line);
    try {
      await waitUntil(
        () => Promise.resolve(tenantShares(primary).load(who.tenantId).active === 1),
        "the transaction admitted on the primary",
      );
      let answered = false;
      read = readAsTenant(
        replica,
        who,
        (q, tenant) => q<{ uid: string }[]>`select auth.uid()::text as uid from ${tenant}`,
      )
        .then(([row]) => {
          answered = true;
          return row?.uid;
        });
      // Until the read has gone to the primary and waits there, or was answered (which fails below).
      await waitUntil(
        () => Promise.resolve(answered || tenantShares(primary).load(who.tenantId).waiting === 1),
        "the read waiting for the primary's shares",
        { pollMs: 10 },
      );
      assert.equal(answered, false, "the read on the primary did not run through the tenant's full share");
      assert.ok(logged.some((l) => /read replica: .*reads go to the primary/.test(l)), logged.join("\n"));
      assert.deepEqual(tenantShares(primary).load(who.tenantId), { active: 1, waiting: 1 });
      // On the replica's shares it holds the one turn it took before the replica was tried, and
      // waits for nothing there: its wait is the primary's.
      assert.deepEqual(tenantShares(replica).load(who.tenantId), { active: 1, waiting: 0 });
      g.open();
      await holding;
      assert.equal(await read, who.tenantId, "admitted once the transaction ended, and answered by the primary");
      for (const pool of [primary, replica]) {
        assert.deepEqual(tenantShares(pool).load(who.tenantId), { active: 0, waiting: 0 });
      }
    } finally {
      console.error = error;
      g.open();
      // Settled before the pools end (postgres.js's end waits on a connection a call holds reserved).
      await holding.catch(() => {});
      await read?.catch(() => {});
      await replica.end({ timeout: 1 });
      await primary.end();
    }
  },
});

Deno.test({
  name: "tenant shares: runInBackground leaves the admission of the call that starts it: with the tenant at its " +
    "share, the background work waits its turn and runs once the call has ended",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    // Two connections: the tenant's share is one call, and a connection stays free, so background
    // work that ran through as a nested call would run at once (and fail the test, not hang it).
    const pool = createSql(testDatabaseUrl(), { max: 2 });
    const who = { tenantId: newTenant(), actor: "user" };
    let ranWhileCalled = false;
    let called = false;
    let settled!: (uid: string | undefined) => void, failed!: (err: unknown) => void;
    const background = new Promise<string | undefined>((resolve, reject) => ((settled = resolve), (failed = reject)));
    try {
      await withTenant(pool, who, async () => {
        called = true;
        runInBackground(
          () =>
            withTenant(pool, who, async (tx) => {
              ranWhileCalled = called;
              const [row] = await tx<{ uid: string }[]>`select auth.uid()::text as uid`;
              return row?.uid;
            }).then(settled, failed),
          "tenant share test",
        );
        await waitUntil(
          () => Promise.resolve(ranWhileCalled || tenantShares(pool).load(who.tenantId).waiting === 1),
          "the background work waiting for its turn",
          { pollMs: 10 },
        );
        assert.equal(ranWhileCalled, false, "the background work did not run inside the call's admission");
        assert.deepEqual(tenantShares(pool).load(who.tenantId), { active: 1, waiting: 1 });
        called = false;
      });
      assert.equal(await background, who.tenantId, "it ran as the tenant once the call had ended");
      assert.equal(ranWhileCalled, false, "when it ran, the call that started it had ended");
      assert.deepEqual(tenantShares(pool).load(who.tenantId), { active: 0, waiting: 0 });
    } finally {
      await background.catch(() => {});
      await pool.end();
    }
  },
});

Deno.test({
  name: "tenant shares: a route whose call waits past the pool's statement timeout answers 503 database_unavailable " +
    "with Retry-After, and writes nothing (no memory, no history, no rate-limit token)",
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    // Two connections: the tenant's share is one call, and a connection stays free (a request that
    // ran anyway would be answered, and fail the test, not wait for one).
    const pool = createSql(testDatabaseUrl(), { max: 2, statementTimeoutMs: 300 });
    const admin = testSql(1);
    const api = memoryApi(pool, { config: { dbPoolMax: 2, dbStatementTimeoutMs: 300 } });
    const tenant = newTenant();
    const g = gate();
    const remember = () =>
      api("POST", "/memory/remember", { as: tenant, body: { content: "Deploys freeze on Fridays" } });
    const buckets = async () => {
      const [row] = await admin<{ n: number }[]>`
        select count(*)::int as n from memory_private.rate_limit_buckets where owner_id = ${tenant}`;
      return row!.n;
    };
    // The tenant's share is held by a transaction waiting on nothing in the database.
    const holding = withTenant(pool, { tenantId: tenant, actor: "user" }, () => g.opened);
    try {
      await waitUntil(
        () => Promise.resolve(tenantShares(pool).load(tenant).active === 1),
        "the transaction admitted",
      );
      const refused = await remember();
      assert.equal(refused.status, 503, JSON.stringify(refused.body));
      assert.equal(refused.body.error.code, "database_unavailable");
      assert.equal(refused.headers.get("retry-after"), String(DATABASE_RETRY_AFTER_SECONDS));
      assert.deepEqual(tenantShares(pool).load(tenant), { active: 1, waiting: 0 }, "it left the queue");
      g.open();
      await holding;
      assert.deepEqual(await tenantWrites(admin, tenant), { events: 0, accessTotal: 0, history: 0, memories: 0 });
      assert.equal(await buckets(), 0, "no rate-limit token taken");
      // The same request now: written and charged, where the counts above would have seen it.
      const stored = await remember();
      assert.equal(stored.status, 201, JSON.stringify(stored.body));
      assert.equal((await tenantWrites(admin, tenant)).memories, 1);
      assert.equal(await buckets(), 1);
    } finally {
      g.open();
      await holding.catch(() => {});
      await pool.end();
      await admin.end();
    }
  },
});
