// Connections the database takes away: a tenant transaction whose session the server ends, and
// requests made while the database is down, must leave a pool that answers the next request
// (docs/operations.md#database-outages). Each step is awaited with a deadline: the faults these
// tests guard against make a call wait forever, never fail.
import assert from "node:assert/strict";
import { createSql, isLostTypesFetch, type Sql } from "../supabase/functions/_shared/db-pool.ts";
import { isDatabaseUnavailable } from "../supabase/functions/_shared/database-errors.ts";
import { readAsTenant, withTenant } from "../supabase/functions/_shared/db.ts";
import { withRole } from "../supabase/functions/_shared/db-role.ts";
import { reserveConnection } from "../supabase/functions/_shared/db-reserve.ts";
import { realServerOnly } from "./support/backend.ts";
import { testDatabaseUrl } from "./support/config.ts";
import { startPgProxy } from "./support/pg-proxy.ts";
import { newTenant, testSql } from "./support/seed.ts";
import { waitUntil, within } from "./support/wait.ts";

const WHY = "ends a backend with pg_terminate_backend and runs a pool of its own";
const DEADLINE_MS = 10_000;
/** Polling for a backend's state: bounded by the same deadline, so a state never reached fails the test, never hangs it. */
const POLL = { deadlineMs: DEADLINE_MS, pollMs: 5 };

/**
 * The pool's next answer. postgres.js may hand the FATAL of a session that ended in a statement to
 * the first statement of the connection that replaces it: that request is a 503 (as during the
 * outage), and the one after it must be answered.
 */
async function answersAgain(sql: Sql, when: string): Promise<number> {
  const first = await within(two(sql).then((n) => ({ n }), (e) => ({ e })), `the first request ${when}`);
  if ("n" in first) return first.n;
  assert.ok(isDatabaseUnavailable(first.e), `the first request ${when} failed as the database going away: ${first.e}`);
  return await within(two(sql), `the second request ${when}`);
}

const who = () => ({ tenantId: newTenant(), actor: "user:test" });
function two(sql: Sql): Promise<number> {
  return withTenant(sql, who(), async (tx) => (await tx`select 2 as n`)[0]!.n as number);
}

Deno.test({
  ...realServerOnly(
    "lost connections: a transaction whose session the server ends is neither rolled back nor handed back; the pool answers next",
    WHY,
  ),
  fn: async () => {
    const admin = testSql(1);
    const sql = createSql(testDatabaseUrl(), { max: 1 });
    try {
      // A statement of the request waits on a lock the admin holds; the admin ends its session.
      const endedWhileWaiting = async (request: Promise<unknown>) => {
        const failed = request.then(() => undefined, (e) => e);
        const waiting = await waitUntil(
          async () => {
            const [row] = await admin<{ pid: number }[]>`
            select pid from pg_locks where locktype = 'advisory' and objid = 4242 and not granted`;
            return row;
          },
          "the request waiting on the lock",
          POLL,
        );
        await admin`select pg_terminate_backend(${waiting.pid})`;
        const err = await failed;
        if (err) throw err;
      };
      await admin`select pg_advisory_lock(4242)`;
      const ended = {
        transaction: () =>
          endedWhileWaiting(withTenant(sql, who(), async (tx) => {
            await tx`select 1`;
            await tx`select pg_advisory_xact_lock(4242)`;
          })),
        read: () =>
          endedWhileWaiting(
            readAsTenant(sql, who(), (q, tenant) => q`select pg_advisory_xact_lock(4242) from ${tenant}`),
          ),
        // A configuration route's transaction (no tenant): before, the driver's sql.begin rolled back
        // on the dead connection and the process ended (porsager/postgres#1208).
        "configuration transaction": () =>
          endedWhileWaiting(withRole(sql, "authenticated", "test", async (tx) => {
            await tx`select 1`;
            await tx`select pg_advisory_xact_lock(4242)`;
          })),
      };
      for (const [name, run] of Object.entries(ended)) {
        const failure = await within(run().then(() => undefined, (e) => e), `the ${name}`);
        assert.ok(isDatabaseUnavailable(failure), `the ${name} failed as the database going away: ${failure}`);
        // The one connection of the pool died with the session: the next request gets a new one.
        assert.equal(await answersAgain(sql, `after the ${name}`), 2);
      }
    } finally {
      await sql.end({ timeout: 1 });
      await admin.end();
    }
  },
});

Deno.test({
  ...realServerOnly(
    "lost connections: a session ended while its transaction sends nothing fails the transaction's next statement unsent; none runs on the reconnected session",
    WHY,
  ),
  fn: async () => {
    const admin = testSql(1);
    const sql = createSql(testDatabaseUrl(), { max: 1 });
    try {
      for (const queryWaiting of [true, false]) {
        // The session is ended between two statements; with a query waiting for the pool's one
        // connection, the pool reconnects the connection for that query before the next statement.
        let after: unknown;
        const failure = await within(
          withTenant(sql, who(), async (tx) => {
            const pid = (await tx<{ pid: number }[]>`select pg_backend_pid() as pid`)[0]!.pid;
            const waiting = queryWaiting ? sql`select 1` : undefined;
            // With no query waiting, the next statement is made once the socket's close has reached
            // the pool: postgres.js calls its options' onclose then, after the connection's own
            // (which the transaction watches). The event, not a fixed pause.
            const closed = new Promise<void>((resolve) => (sql.options.onclose = () => resolve()));
            await admin`select pg_terminate_backend(${pid}, 10000)`;
            await waiting;
            if (!queryWaiting) await within(closed, "the pool told of the ended session's close");
            after = (await tx<{ role: string }[]>`select current_user as role`)[0];
          }).then(() => undefined, (e) => e),
          `the transaction (a query waiting: ${queryWaiting})`,
        );
        assert.equal(after, undefined, "no statement ran after the session ended");
        assert.ok(isDatabaseUnavailable(failure), `it failed as the database going away: ${failure}`);
        assert.equal(await answersAgain(sql, `after it (a query waiting: ${queryWaiting})`), 2);
      }
    } finally {
      await sql.end({ timeout: 1 });
      await admin.end();
    }
  },
});

Deno.test({
  ...realServerOnly(
    "lost connections: a statement failing with a session-ending SQLSTATE on a session that lives on (its parallel worker terminated) is rolled back and handed back",
    WHY,
  ),
  fn: async () => {
    const admin = testSql(1);
    const sql = createSql(testDatabaseUrl(), { max: 1 });
    try {
      // The statement runs in a parallel worker; the admin terminates the worker, not the session:
      // the statement fails with 57P01 (an ERROR, not a FATAL) and the session lives on.
      let leader = 0;
      const request = withTenant(sql, who(), async (tx) => {
        leader = (await tx<{ pid: number }[]>`select pg_backend_pid() as pid`)[0]!.pid;
        await tx`select pg_advisory_xact_lock(4243)`;
        await tx`set local debug_parallel_query = on`;
        await tx`select pg_sleep(30)`;
      }).then(() => undefined, (e) => e);
      await waitUntil(
        async () =>
          (await admin`select pg_terminate_backend(pid) from pg_stat_activity
                        where backend_type = 'parallel worker' and leader_pid = ${leader}`).length > 0,
        "the statement's parallel worker, terminated",
        POLL,
      );
      const failure = await within(request, "the transaction whose parallel worker was terminated");
      assert.equal((failure as { code?: string })?.code, "57P01", `the statement failed with 57P01: ${failure}`);
      // Rolled back (its lock is free) and handed back (the pool's one connection answers at once).
      const [free] = await admin<{ ok: boolean }[]>`select pg_try_advisory_lock(4243) as ok`;
      assert.equal(free!.ok, true, "the transaction was rolled back");
      await admin`select pg_advisory_unlock(4243)`;
      assert.equal(await within(two(sql), "the request after it"), 2);
    } finally {
      await sql.end({ timeout: 1 });
      await admin.end();
    }
  },
});

Deno.test({
  ...realServerOnly(
    "lost connections: requests while the database is down fail at once, and once it is back the pool answers",
    "runs a pool of its own through a proxy it takes down",
  ),
  fn: async () => {
    const proxy = startPgProxy(testDatabaseUrl());
    const sql = createSql(proxy.url, { max: 1, statementTimeoutMs: 2_000 });
    try {
      assert.equal(await within(two(sql), "the request before the outage"), 2);
      proxy.down();
      // One after the other, as a client retrying does: each fails as the database being away.
      for (let i = 0; i < 4; i++) {
        const failure = await within(two(sql).then(() => undefined, (e) => e), `request ${i} during the outage`);
        assert.ok(isDatabaseUnavailable(failure), `request ${i} during the outage: ${failure}`);
      }
      proxy.up();
      for (let i = 0; i < 3; i++) assert.equal(await within(two(sql), `request ${i} after the outage`), 2);
    } finally {
      await sql.end({ timeout: 1 });
      proxy.close();
    }
  },
});

Deno.test("lost connections: a connection lost while postgres.js fetches the array types after its handshake does not end the process", async () => {
  // postgres.js fetches the types from a promise it keeps nowhere: lost there, and the reconnect
  // refused, that promise rejected unhandled and the process ended (the queue worker's outage test
  // in tests/http_server_background.test.ts, about one run in fifteen on a loaded machine).
  const typesFetch = new TextEncoder().encode("b.typarray");
  const sends = (chunk: Uint8Array, what: Uint8Array) => chunk.some((_, i) => what.every((b, j) => chunk[i + j] === b));
  const proxy = startPgProxy(testDatabaseUrl(), { downAt: (chunk) => sends(chunk, typesFetch) });
  const sql = createSql(proxy.url, { max: 1 });
  const rejected = Promise.withResolvers<boolean>();
  const watch = (e: PromiseRejectionEvent) => {
    if (isLostTypesFetch(e.reason)) rejected.resolve(e.defaultPrevented);
  };
  globalThis.addEventListener("unhandledrejection", watch);
  try {
    const failure = await within(sql`select 1`.then(() => undefined, (e) => e), "the statement behind the types fetch");
    assert.ok(isDatabaseUnavailable(failure), `it fails as the database being away (503): ${failure}`);
    assert.equal(
      await within(rejected.promise, "the types fetch's rejection"),
      true,
      "and is not left to end the process",
    );
  } finally {
    globalThis.removeEventListener("unhandledrejection", watch);
    await sql.end({ timeout: 0 });
    proxy.close();
  }
});

Deno.test({
  ...realServerOnly(
    "lost connections: a reservation not answered in time is given up as a 503, and the connection handed over later goes back to the pool",
    "holds the one connection of a pool of its own while another reservation waits",
  ),
  fn: async () => {
    // Not answered here because the pool's one connection is held (postgres.js 3.4.9 also leaves a
    // reserve() unanswered that waited while a connection closed: the same give-up covers both).
    const sql = createSql(testDatabaseUrl(), { max: 1, statementTimeoutMs: 100 });
    try {
      const holder = await within(sql.reserve(), "the pool's one connection");
      const failure = await within(reserveConnection(sql).then(() => undefined, (e) => e), "the waiting reservation");
      assert.ok(isDatabaseUnavailable(failure), `given up as the database being away (503): ${failure}`);
      // The reservation given up is answered once the holder lets go: it hands the connection back.
      holder.release();
      assert.equal(await within(two(sql), "the request after the reservation given up"), 2);
    } finally {
      await sql.end({ timeout: 1 });
    }
  },
});
