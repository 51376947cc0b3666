// The nightly decay in its step form (memory_private.run_decay_step, what pg_cron calls every
// minute of the decay window) holds what it locks for one call, not for the whole run. A tenant
// whose memory a step invalidates has its thread revision row (bumped by the DECAY event) and
// that memory's row locked by the step; the tenant's own writes (a new memory bumps the same
// revision row when it commits, a restore locks and updates the memory) wait for that step to
// commit, then go through while the run still has pages left, and writes during a later step that
// touched nothing of theirs do not wait at all. The one-shot run_decay is the control: the same write waits on it, and it holds
// the whole table's pass in that one transaction. Two step calls at once: the second gets 'busy'
// without waiting, also when both would start the very first run.
// Everything is asserted as ordering (who blocks whom, per pg_blocking_pids; what finished before
// what), never as a duration. Needs several transactions open at once: real server only.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import postgres from "postgres";
import { tenantItem } from "../supabase/functions/_shared/db.ts";
import { lockMemory } from "../supabase/functions/_shared/memories/record.ts";
import { realServerOnly } from "./support/backend.ts";
import { testDatabaseUrl } from "./support/config.ts";
import { overrideSettings, pauseCronJobs, removeTenantData } from "./support/lifecycle.ts";

type Sql = ReturnType<typeof postgres>;
type StepResult = {
  action: string;
  batches: number;
  invalidated: number;
  run: { next_page: number; total_pages: number; finished: boolean };
};

/** The single row a query returns. */
function only<T>(rows: readonly T[]): T {
  assert.equal(rows.length, 1, "exactly one row");
  return rows[0]!;
}

const pause = () => new Promise((resolve) => setTimeout(resolve, 10));

/** A transaction that runs `work`, then stays open until release(); its backend pid is known. */
async function openTransaction<T>(
  sql: Sql,
  work: (tx: postgres.TransactionSql) => Promise<T>,
  end: "commit" | "rollback",
) {
  const opened = Promise.withResolvers<{ pid: number; value: T }>();
  const release = Promise.withResolvers<void>();
  const done = sql.begin(async (tx) => {
    try {
      const { pid } = only(await tx<{ pid: number }[]>`select pg_backend_pid() as pid`);
      opened.resolve({ pid, value: await work(tx) });
    } catch (err) {
      opened.reject(err);
      throw err;
    }
    await release.promise;
    if (end === "rollback") throw new RolledBack();
  }).catch((err) => {
    if (!(err instanceof RolledBack)) throw err;
  });
  const { pid, value } = await opened.promise;
  let released = false;
  return {
    pid,
    value,
    release: async () => {
      if (!released) (released = true, release.resolve());
      await done;
    },
  };
}
class RolledBack extends Error {}

/** Starts `work` in its own transaction at once; `pid` is its backend, `done` its outcome. */
function startTransaction<T>(sql: Sql, work: (tx: postgres.TransactionSql) => Promise<T>) {
  const pid = Promise.withResolvers<number>();
  const done = sql.begin(async (tx) => {
    pid.resolve(only(await tx<{ pid: number }[]>`select pg_backend_pid() as pid`).pid);
    return await work(tx);
  }) as Promise<T>;
  done.catch((err) => pid.reject(err));
  return { pid: pid.promise, done };
}
type Started<T> = ReturnType<typeof startTransaction<T>>;

/** The tenant's write as its request makes it (db.ts tenantItem's settings): a new memory, and
 * optionally a restore, which locks the memory first as the memory service's restore does
 * (lockMemory: it waits for a step that changed the memory and then reads what the step left). */
function startTenantWrite(sql: Sql, tenant: string, restoreId?: string): Started<void> {
  return startTransaction(sql, async (tx) => {
    await tx`select 1 from ${tenantItem(tx as never, tenant)}`;
    await tx`insert into public.devai_memories (content, memory_type, namespace)
             values (${`written during decay ${randomUUID()}`}, 'episodic', 'devai/global')`;
    if (restoreId) {
      await lockMemory(tx as never, restoreId);
      await tx`select id from public.restore_memory(${restoreId})`;
    }
  });
}

/** A step call made while another step's transaction is open. */
function startStep(sql: Sql): Started<StepResult> {
  return startTransaction(
    sql,
    async (tx) => only(await tx<{ r: StepResult }[]>`select memory_private.run_decay_step(1) as r`).r,
  );
}

/** Waits until the transaction has either finished ("done") or is waiting on a lock: then the
 * backends it waits for. No time limit of its own: one of the two always happens. */
async function doneOrBlockedBy<T>(admin: Sql, started: Started<T>): Promise<"done" | number[]> {
  const pid = await started.pid;
  let finished = false;
  const settled = started.done.then(() => (finished = true));
  for (;;) {
    if (finished) return "done";
    const { blockers } = only(await admin<{ blockers: number[] }[]>`select pg_blocking_pids(${pid}) as blockers`);
    if (blockers.length > 0) return blockers;
    await Promise.race([settled, pause()]);
  }
}

/** A second step call while `holder` is open: it must answer without waiting on the holder. */
async function concurrentStep(sql: Sql, admin: Sql): Promise<StepResult> {
  const call = startStep(sql);
  assert.equal(await doneOrBlockedBy(admin, call), "done", "a concurrent step call does not wait for the open one");
  return await call.done;
}

Deno.test({
  ...realServerOnly(
    "decay steps: a tenant's write waits for the step that locked its rows, not for the rest of the run",
    "several transactions open at once",
  ),
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const sql = postgres(testDatabaseUrl(), { max: 6, onnotice: () => {} });
    const admin = postgres(testDatabaseUrl(), { max: 1, onnotice: () => {} });
    const tenant = randomUUID(); // its memory is invalidated by the first step
    const filler = randomUUID(); // fresh memories after it, so the run has pages left
    const control = randomUUID(); // for the one-shot control
    // pg_cron's own decay job (03:xx UTC) must not take turns with the test's calls.
    const cron = await pauseCronJobs(sql, ["devai-memory-decay"]);
    // One heap page per batch, and no run yet.
    const settings = await overrideSettings(sql, { decay_batch_pages: 1 });
    const open: { release(): Promise<void> }[] = [];
    try {
      await sql`delete from memory_private.lifecycle_runs where job = 'decay'`;

      const { id: weakId } = only(
        await sql<{ id: string }[]>`
        insert into public.devai_memories (owner_id, content, memory_type, namespace, base_strength, strength, last_accessed_at)
        values (${tenant}, 'idle for 100 days: decay invalidates it', 'semantic', 'devai/global', 1.0, 1.0, now() - interval '100 days')
        returning id`,
      );
      const { page: weakPage } = only(
        await sql<{ page: number }[]>`
        select (ctid::text::point)[0]::int as page from public.devai_memories where id = ${weakId}`,
      );
      const tablePages = async () =>
        only(
          await sql<{ pages: number }[]>`
          select (pg_relation_size('public.devai_memories') / current_setting('block_size')::bigint)::int as pages`,
        ).pages;
      for (let i = 0; i < 200 && (await tablePages()) <= weakPage + 2; i++) {
        await sql`
          insert into public.devai_memories (owner_id, content, memory_type, namespace)
          select ${filler}, 'filler ' || g || ' ' || repeat('x', 1000), 'semantic', 'devai/global' from generate_series(1, 20) g`;
      }
      assert.ok((await tablePages()) > weakPage + 2, "the table has pages after the weak memory's");

      // Step 1 starts the run and decays pages 0..weakPage, which invalidates the tenant's
      // memory; its transaction stays open.
      const step1 = await openTransaction(
        sql,
        async (tx) => only(await tx<{ r: StepResult }[]>`select memory_private.run_decay_step(${weakPage + 1}) as r`).r,
        "commit",
      );
      open.push(step1);
      assert.equal(step1.value.action, "started");
      assert.equal(step1.value.run.next_page, weakPage + 1);
      assert.ok(step1.value.invalidated >= 1);

      // A second caller while the first run is being started: 'busy', without waiting.
      const raced = await concurrentStep(sql, admin);
      assert.equal(raced.action, "busy", "a second caller while the first run starts is told busy");
      assert.equal(raced.batches, 0);

      // The tenant writes: it waits for step 1 ...
      const write1 = startTenantWrite(sql, tenant, weakId);
      const blockers1 = await doneOrBlockedBy(admin, write1);
      assert.ok(
        Array.isArray(blockers1) && blockers1.includes(step1.pid),
        `the tenant's write waits for the step that invalidated its memory (blocked by ${
          JSON.stringify(blockers1)
        }, step ${step1.pid})`,
      );
      // ... and goes through when step 1 commits, while the run still has pages to do.
      await step1.release();
      await write1.done;
      const progress = only(
        await sql<{ next_page: number; total_pages: number; finished: boolean }[]>`
        select next_page::int, total_pages::int, finished_at is not null as finished
          from memory_private.lifecycle_runs where job = 'decay'`,
      );
      assert.deepEqual(progress, { next_page: weakPage + 1, total_pages: progress.total_pages, finished: false });
      assert.ok(progress.next_page < progress.total_pages, "the write went through with the run not done");
      const [restored] = await sql<{ is_valid: boolean; decay_events: number }[]>`
        select m.is_valid, (select count(*)::int from public.memory_history h where h.memory_id = m.id and h.event = 'DECAY') as decay_events
          from public.devai_memories m where m.id = ${weakId}`;
      assert.deepEqual(
        restored,
        { is_valid: true, decay_events: 1 },
        "step 1's DECAY event, then the tenant's restore",
      );

      // Step 2 (open) decays the next page, where the tenant has nothing the step locks.
      const step2 = await openTransaction(
        sql,
        async (tx) => only(await tx<{ r: StepResult }[]>`select memory_private.run_decay_step(1) as r`).r,
        "commit",
      );
      open.push(step2);
      assert.equal(step2.value.action, "continued");
      assert.equal(step2.value.batches, 1);
      assert.equal(step2.value.run.next_page, weakPage + 2);
      // The tenant's next write finishes while step 2 is still open.
      assert.equal(
        await doneOrBlockedBy(admin, startTenantWrite(sql, tenant)),
        "done",
        "a write during a step that locked nothing of the tenant's does not wait",
      );
      const continuing = await concurrentStep(sql, admin);
      assert.equal(continuing.action, "busy", "a second caller during a step is told busy, without waiting");
      assert.equal(continuing.run.next_page, weakPage + 1, "... and sees the progress of the last committed step");
      await step2.release();

      // The rest of the run, then the run is done.
      let last: StepResult;
      do last = only(await sql<{ r: StepResult }[]>`select memory_private.run_decay_step(1000) as r`).r; while (
        !last.run.finished
      );
      assert.equal(last.run.next_page, last.run.total_pages);

      // Control: the one-shot form does the whole table in one transaction, and the write of a
      // tenant it invalidated waits for all of it.
      await sql`
        insert into public.devai_memories (owner_id, content, memory_type, namespace, base_strength, strength, last_accessed_at)
        values (${control}, 'idle for 100 days: the one-shot decay invalidates it', 'semantic', 'devai/global', 1.0, 1.0, now() - interval '100 days')`;
      const oneShot = await openTransaction(
        sql,
        async (tx) =>
          only(await tx<{ r: { invalidated: number; pages: number } }[]>`select memory_private.run_decay() as r`).r,
        "rollback",
      );
      open.push(oneShot);
      assert.ok(oneShot.value.invalidated >= 1);
      assert.equal(oneShot.value.pages, await tablePages(), "the one-shot transaction covered every page");
      const write3 = startTenantWrite(sql, control);
      const blockers3 = await doneOrBlockedBy(admin, write3);
      assert.ok(
        Array.isArray(blockers3) && blockers3.includes(oneShot.pid),
        `while run_decay's transaction is open, the invalidated tenant's write waits for it (blocked by ${
          JSON.stringify(blockers3)
        })`,
      );
      await oneShot.release();
      await write3.done;
    } finally {
      for (const t of open) await t.release().catch(() => {});
      await settings.restore();
      await sql`delete from memory_private.lifecycle_runs where job = 'decay'`;
      await removeTenantData(sql, [tenant, filler, control]);
      await cron.resume();
      await admin.end({ timeout: 5 });
      await sql.end({ timeout: 5 });
    }
  },
});
