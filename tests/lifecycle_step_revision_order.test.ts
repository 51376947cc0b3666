// Lock order of the nightly decay and TTL steps (docs/operations.md#lock-order): a step call takes
// its tenants' thread revision rows only after every memory it locks, as a request takes its
// thread's row only at its commit. Before migration 20261130200000 a call bumped the revision rows
// of the tenants it changed after EACH of its batches and held them to commit; a request that had
// locked a memory in a later batch's pages and then committed (its commit-time revision wanted the
// row the step held) closed a cycle with the step (waiting for that memory): a deadlock, the
// request rolled back and answered 409 `conflict`. Forced here with three connections, ordered by
// pg_blocking_pids: a holder locks a memory of the step's second batch (the step invalidates or
// soft-deletes the tenant's first memory in batch one, then waits there); the tenant's correction
// of a memory further on locks it and commits; the holder lets go, so the step goes on to the
// corrected memory. Now the correction commits without waiting for the step, the step finishes,
// and the tenant's revisions follow the commits: the correction's changes, then the step's. (Since
// 20261201200000 a call locks every memory it changes first, in id order, so memory locks always come
// before revision rows; the ids here ascend in heap order, so the step still stops at Y before X.)
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { realServerOnly } from "./support/backend.ts";
import { overrideSettings, pauseCronJobs, removeTenantData } from "./support/lifecycle.ts";
import { memoryApi } from "./support/memory-api.ts";
import { testSql } from "./support/seed.ts";
import { waitUntil } from "./support/wait.ts";

type Job = "decay" | "ttl";
type Sql = ReturnType<typeof testSql>;
type Placed = { id: string; page: number; item: number };
type StepResult = { action: string; batches: number; invalidated?: number; soft_deleted?: number };

/** The i-th memory's id: ids ascend as the memories are inserted, so id order is heap order here (a
 * step locks the memories it changes in id order first, migration 20261201200000: it stops at Y
 * before it locks X, as its batches did). */
const ascendingId = (i: number) => i.toString(16).padStart(2, "0") + randomUUID().slice(2);

/** Inserts idle, unimportant memories of `tenant` (decay invalidates them, TTL soft-deletes them)
 * with fresh filler rows between them until three lie in heap order A < Y < X with A on an earlier
 * page than Y: A in one batch of one page, Y and X in later ones. Returns the three. */
async function placeMemories(sql: Sql, tenant: string, filler: string): Promise<{ a: Placed; y: Placed; x: Placed }> {
  for (let i = 0; i < 100; i++) {
    await sql`
      insert into public.devai_memories (id, owner_id, content, memory_type, namespace, importance, base_strength,
                                         strength, last_accessed_at)
      values (${ascendingId(i)}, ${tenant}, ${`idle for 400 days ${i}`}, 'semantic', 'devai/global', 1, 1.0, 1.0,
              now() - interval '400 days')`;
    await sql`
      insert into public.devai_memories (owner_id, content, memory_type, namespace)
      select ${filler}, 'filler ' || g || ' ' || md5(random()::text) || repeat('x', 1000), 'semantic', 'devai/global'
        from generate_series(1, 8) g`;
    const rows = await sql<Placed[]>`
      select id, (ctid::text::point)[0]::int as page, (ctid::text::point)[1]::int as item
        from public.devai_memories where owner_id = ${tenant} order by ctid`;
    const a = rows[0]!;
    const yAt = rows.findIndex((r) => r.page > a.page);
    if (yAt >= 0 && yAt + 1 < rows.length) return { a, y: rows[yAt]!, x: rows[yAt + 1]! };
  }
  throw new Error("could not lay the tenant's memories out over two pages");
}

async function correctionRacesStep(job: Job) {
  const sql = testSql(4), step = testSql(1), holder = testSql(1), probe = testSql(1);
  const tenant = randomUUID(), filler = randomUUID();
  const cron = await pauseCronJobs(sql, [`devai-memory-${job}`]);
  const settings = await overrideSettings(sql, { [`${job}_batch_pages`]: 1 });
  const call = job === "decay" ? "run_decay_step" : "run_ttl_step";
  try {
    await sql`delete from memory_private.lifecycle_runs where job = ${job}`;
    const { a, y, x } = await placeMemories(sql, tenant, filler);
    // The run starts and walks up to A's page, so the next call's first batch is A's page.
    if (a.page > 0) await sql.unsafe(`select memory_private.${call}(${a.page})`);

    const api = memoryApi(sql);
    let answered = false;
    let correction: ReturnType<typeof api> | undefined;
    let stepDone: Promise<StepResult> | undefined;
    await holder.begin(async (hold) => {
      const [h] = await hold<{ pid: number }[]>`select pg_backend_pid() as pid`;
      await hold`select 1 from public.devai_memories where id = ${y.id} for no key update`;
      stepDone = step.begin(async (tx) => {
        // Were there a deadlock, the step would be the survivor: the request the victim.
        await tx`set local deadlock_timeout = '60s'`;
        const [row] = await tx.unsafe(`select memory_private.${call}(${x.page - a.page + 1}) as r`);
        return row!.r as StepResult;
      }) as Promise<StepResult>;
      stepDone.catch(() => {});
      const [s] = await waitUntil(
        async () => {
          const rows = await probe<{ pid: number }[]>`
            select pid from pg_stat_activity where ${h!.pid}::int = any (pg_blocking_pids(pid))`;
          return rows.length > 0 && rows;
        },
        "the step waits, in its second batch, for the memory the holder locked",
        { pollMs: 10 },
      );
      // The tenant corrects a memory the step has not reached yet: it locks it and commits.
      correction = api("POST", `/memory/${x.id}/correct`, {
        as: tenant,
        body: { content: "Corrected while the nightly step runs." },
      });
      correction.finally(() => (answered = true));
      await waitUntil(
        async () =>
          answered ||
          (await probe`select 1 from pg_stat_activity where ${s!.pid}::int = any (pg_blocking_pids(pid))`).length > 0,
        "the correction commits, or waits for the step at its commit",
        { pollMs: 10 },
      );
      const [still] = await probe<{ waits: boolean }[]>`select ${h!.pid}::int = any (pg_blocking_pids(${
        s!.pid
      })) as waits`;
      assert.ok(still!.waits, "the step is still in its second batch, waiting for the holder");
      // The holder ends: the step goes on to the corrected memory.
    });

    const answer = await correction!;
    assert.equal(answer.status, 201, `the correction during the ${job} step: ${JSON.stringify(answer.body)}`);
    const result = await stepDone!;
    assert.equal(result.action, a.page > 0 ? "continued" : "started");
    assert.equal(result.batches, x.page - a.page + 1);
    assert.ok(result[job === "decay" ? "invalidated" : "soft_deleted"]! >= 2, JSON.stringify(result));

    // Revisions in commit order: the seeded memories, the correction's two changes, the step's.
    const event = job === "decay" ? "deleted" : "soft_deleted";
    const log = await sql<{ revision: number; memory_id: string; event: string }[]>`
      select revision::int, memory_id, event from public.memory_change_log
       where owner_id = ${tenant} and thread_id = 'default' order by revision`;
    assert.deepEqual(log.map((r) => r.revision), log.map((_, i) => i + 1), "consecutive revisions from 1");
    const newId: string = answer.body.memory.id;
    const correctionAt = log.filter((r) => r.memory_id === newId || (r.memory_id === x.id && r.event === "merged"));
    const stepAt = log.filter((r) => r.event === event);
    assert.equal(correctionAt.length, 2, JSON.stringify(log));
    assert.ok(
      stepAt.some((r) => r.memory_id === a.id) && stepAt.some((r) => r.memory_id === y.id),
      JSON.stringify(log),
    );
    assert.ok(
      Math.max(...correctionAt.map((r) => r.revision)) < Math.min(...stepAt.map((r) => r.revision)),
      `the correction committed first, so its revisions come first: ${JSON.stringify(log)}`,
    );
    const [row] = await sql<{ revision: number }[]>`
      select revision::int from public.memory_thread_revisions where owner_id = ${tenant} and thread_id = 'default'`;
    assert.equal(row!.revision, log.length);
  } finally {
    await settings.restore();
    await sql`delete from memory_private.lifecycle_runs where job = ${job}`;
    await removeTenantData(sql, [tenant, filler]);
    await cron.resume();
    await Promise.all([sql.end(), step.end(), holder.end(), probe.end()]);
  }
}

Deno.test({
  ...realServerOnly(
    "decay step: a correction of a memory in a later batch's pages commits during the step (no deadlock)",
    "three transactions on three connections at once",
  ),
  sanitizeOps: false,
  sanitizeResources: false,
}, () => correctionRacesStep("decay"));

Deno.test({
  ...realServerOnly(
    "TTL step: a correction of a memory in a later batch's pages commits during the step (no deadlock)",
    "three transactions on three connections at once",
  ),
  sanitizeOps: false,
  sanitizeResources: false,
}, () => correctionRacesStep("ttl"));
