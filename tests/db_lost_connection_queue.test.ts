// Statements pipelined on a reserved connection whose session ends: those postgres.js still held
// in the reservation's own queue (behind a statement with parameters, described before it is
// sent) fail with the ones it sent, instead of never being answered (db-reserve.ts,
// docs/operations.md#database-outages). A searches' write-behind batch is such a pipeline (begin,
// its statement, commit): its flush waited forever, and with it the local server's close().
import assert from "node:assert/strict";
import { createSql } from "../supabase/functions/_shared/db-pool.ts";
import { isConnectionLost } from "../supabase/functions/_shared/database-errors.ts";
import { reserveConnection } from "../supabase/functions/_shared/db-reserve.ts";
import {
  flushSearchWrites,
  heldSearchWrites,
  writeBehind,
} from "../supabase/functions/_shared/retrieval/write-behind.ts";
import { realServerOnly } from "./support/backend.ts";
import { testDatabaseUrl } from "./support/config.ts";
import { newTenant, seedMemories, testSql } from "./support/seed.ts";
import { waitUntil, within } from "./support/wait.ts";

const WHY = "ends a backend with pg_terminate_backend and runs a pool of its own";
const POLL = { deadlineMs: 10_000, pollMs: 5 };

Deno.test({
  ...realServerOnly(
    "lost connections: statements pipelined on a reservation behind one whose session ends fail with it; none waits forever",
    WHY,
  ),
  fn: async () => {
    const admin = testSql(1);
    const sql = createSql(testDatabaseUrl(), { max: 1 });
    try {
      await admin`select pg_advisory_lock(4245)`;
      const conn = await within(reserveConnection(sql), "the reservation");
      // The first has a parameter: postgres.js describes it before it sends it, and holds the two
      // after it in the reservation's queue until the connection is free again.
      const outcomes = Promise.allSettled([
        conn`select pg_advisory_xact_lock(${4245}::bigint)`.execute(),
        conn`select 1`.execute(),
        conn`select ${2}::int`.execute(),
      ]);
      const waiting = await waitUntil(
        async () =>
          (await admin<{ pid: number }[]>`
            select pid from pg_locks where locktype = 'advisory' and objid = 4245 and not granted`)[0],
        "the first statement waiting on the lock",
        POLL,
      );
      await admin`select pg_terminate_backend(${waiting.pid})`;
      const settled = await within(outcomes, "the statements pipelined on the ended session");
      settled.forEach((r, i) => {
        assert.equal(r.status, "rejected", `statement ${i} failed`);
        const err = (r as PromiseRejectedResult).reason;
        assert.ok(isConnectionLost(err), `statement ${i} failed as a lost connection: ${err}`);
      });
    } finally {
      await sql.end({ timeout: 1 });
      await admin.end();
    }
  },
});

Deno.test({
  ...realServerOnly(
    "lost connections: a write-behind batch whose session ends while its statement waits is kept, its flush answered, and written once by the next",
    WHY,
  ),
  fn: async () => {
    const admin = testSql(2);
    const sql = createSql(testDatabaseUrl(), { max: 1 });
    const holder = Promise.withResolvers<void>();
    let holding: Promise<unknown> | undefined;
    try {
      const tenant = newTenant();
      const [memory] = await seedMemories(admin, tenant, [{
        content: "The staging database restarts at noon.",
        namespace: "devai/global/ops",
      }]);
      const [row] = await admin<{ at: string }[]>`select now()::text as at`;
      // The batch's statement waits here: its search's event is being inserted, uncommitted, under
      // the same id (rolled back afterwards).
      const id = crypto.randomUUID();
      const locked = Promise.withResolvers<void>();
      holding = admin.begin(async (tx) => {
        await tx`insert into public.memory_events (id, owner_id, node, op, status)
                 values (${id}, ${tenant}, 'context', 'search', 'ok')`;
        locked.resolve();
        await holder.promise;
        throw new Error("rolled back");
      }).catch(() => {});
      await locked.promise;
      const search = { at: row!.at, ids: [memory!.id], thread_id: null, category: null, sim: 0.9, meta: {}, id };
      writeBehind(sql, { tenantId: tenant, actor: "user" }, search, 3_600_000);
      const flushed = flushSearchWrites(sql);
      const waiting = await waitUntil(
        async () =>
          (await admin<{ pid: number }[]>`
            select pid from pg_stat_activity
             where wait_event_type = 'Lock' and pid <> pg_backend_pid() and query like '%record_retrievals%'`)[0],
        "the batch's statement waiting on the row",
        POLL,
      );
      await admin`select pg_terminate_backend(${waiting.pid})`;
      await within(flushed, "the flush of the batch whose session ended");
      assert.equal(heldSearchWrites(sql), 1, "the batch is kept for the next one");

      holder.resolve();
      await holding;
      // The next batches write it (the first statement on the replaced connection may still fail as
      // the database going away: then it is kept again).
      for (let i = 0; i < 3 && heldSearchWrites(sql) > 0; i++) await within(flushSearchWrites(sql), `batch ${i + 2}`);
      const [written] = await admin<{ accesses: number; events: number }[]>`
        select (select access_count from public.devai_memories where id = ${memory!.id}) as accesses,
               (select count(*)::int from public.memory_events where owner_id = ${tenant} and op = 'search') as events`;
      assert.deepEqual(written, { accesses: 1, events: 1 });
    } finally {
      holder.resolve();
      await holding;
      await sql.end({ timeout: 1 });
      await admin.end();
    }
  },
});
