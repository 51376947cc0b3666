// Lock order of the nightly decay step against a request that locks two memories (migration
// 20261201200000, docs/operations.md#lock-order): a step call locks every memory it will change in
// id order before changing any, as lockMemories does for a request. Before, its batches locked them
// in heap order as their UPDATEs reached them: a correction of P to the text Q says (it locks P,
// then Q, in id order) held P and waited for Q, which the step had invalidated in its first batch,
// while the step's second batch waited for P: a deadlock, the correction rolled back, 409.
// Forced with three connections, ordered by pg_blocking_pids: ids chosen P < H < Q, heap order
// Q < H < P over two one-page batches; a holder locks H so the step stops there; the correction
// then waits for the step; the holder lets go. Now the correction waits for the step's commit and
// stores its text (Q is invalid by then), the step finishes.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { realServerOnly } from "./support/backend.ts";
import { overrideSettings, pauseCronJobs, removeTenantData } from "./support/lifecycle.ts";
import { memoryApi } from "./support/memory-api.ts";
import { testSql } from "./support/seed.ts";
import { waitUntil } from "./support/wait.ts";

type Sql = ReturnType<typeof testSql>;
type Placed = { id: string; page: number; item: number };
type StepResult = { action: string; batches: number; decayed: number; invalidated: number };

const Q_TEXT = "Deploys of the task-api go through make ship.";

/** An id that sorts by its first byte: `prefix` "00" < "80" < "ff". */
const idAt = (prefix: string) => prefix + randomUUID().slice(2);

async function insert(sql: Sql, tenant: string, id: string, content: string, idleDays: number): Promise<Placed> {
  const [row] = await sql<Placed[]>`
    insert into public.devai_memories (id, owner_id, content, memory_type, namespace, importance, base_strength,
                                       strength, last_accessed_at)
    values (${id}, ${tenant}, ${content}, 'semantic', 'devai/global', 1, 1.0, 1.0,
            now() - make_interval(days => ${idleDays}))
    returning id, (ctid::text::point)[0]::int as page, (ctid::text::point)[1]::int as item`;
  return row!;
}

/** Q (idle 400 days: decay invalidates it) on one page, then H and P (idle 10 days: decay lowers
 * their strength) in that heap order on later pages, filler rows of another tenant between. H and P
 * are as long as a filler row, so neither fits in what the fillers left on Q's page. */
async function placeMemories(sql: Sql, tenant: string, filler: string) {
  const q = await insert(sql, tenant, idAt("ff"), Q_TEXT, 400);
  for (let i = 0; i < 100; i++) {
    const [last] = await sql<{ page: number }[]>`
      insert into public.devai_memories (owner_id, content, memory_type, namespace)
      select ${filler}, 'filler ' || g || ' ' || md5(random()::text) || repeat('x', 1000), 'semantic', 'devai/global'
        from generate_series(1, 4) g
      returning (ctid::text::point)[0]::int as page`;
    if (last!.page > q.page) break;
  }
  const long = (text: string) => `${text} ${"(padding) ".repeat(110)}`.trim();
  const h = await insert(sql, tenant, idAt("80"), long("The web app builds with vite."), 10);
  const p = await insert(sql, tenant, idAt("00"), long("Deploys of the task-api go through npm run deploy."), 10);
  const heapOrder = q.page < h.page && (h.page < p.page || (h.page === p.page && h.item < p.item));
  if (!heapOrder) throw new Error(`Q, H, P not laid out in heap order: ${JSON.stringify({ q, h, p })}`);
  return { q, h, p };
}

Deno.test({
  ...realServerOnly(
    "decay step: a correction locking two memories (the step invalidates one, then reaches the other) waits for the step, no deadlock",
    "three transactions on three connections at once",
  ),
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const sql = testSql(4), step = testSql(1), holder = testSql(1), probe = testSql(1);
  const tenant = randomUUID(), filler = randomUUID();
  const cron = await pauseCronJobs(sql, ["devai-memory-decay"]);
  const settings = await overrideSettings(sql, { decay_batch_pages: 1 });
  try {
    await sql`delete from memory_private.lifecycle_runs where job = 'decay'`;
    const { q, h, p } = await placeMemories(sql, tenant, filler);
    // The run starts and walks up to Q's page, so the next call's first batch is Q's page.
    if (q.page > 0) await sql`select memory_private.run_decay_step(${q.page})`;

    const api = memoryApi(sql);
    let correction: ReturnType<typeof api> | undefined;
    let stepDone: Promise<StepResult> | undefined;
    await holder.begin(async (hold) => {
      const [held] = await hold<{ pid: number }[]>`select pg_backend_pid() as pid`;
      await hold`select 1 from public.devai_memories where id = ${h.id} for no key update`;
      stepDone = step.begin(async (tx) => {
        // Were there a deadlock, the step would be the survivor: the request the victim.
        await tx`set local deadlock_timeout = '60s'`;
        const [row] = await tx`select memory_private.run_decay_step(${p.page - q.page + 1}) as r`;
        return row!.r as StepResult;
      }) as Promise<StepResult>;
      stepDone.catch(() => {});
      const [s] = await waitUntil(
        async () => {
          const rows = await probe<{ pid: number }[]>`
          select pid from pg_stat_activity where ${held!.pid}::int = any (pg_blocking_pids(pid))`;
          return rows.length > 0 && rows;
        },
        "the step waits for H, which the holder locked",
        { pollMs: 10 },
      );
      // The tenant corrects P to the text Q says: it locks P and Q, in id order.
      correction = api("POST", `/memory/${p.id}/correct`, { as: tenant, body: { content: Q_TEXT } });
      correction.catch(() => {});
      await waitUntil(
        async () =>
          (await probe`select 1 from pg_stat_activity where ${s!.pid}::int = any (pg_blocking_pids(pid))`).length > 0,
        "the correction waits for the step",
        { pollMs: 10 },
      );
      // The holder ends: the step goes on.
    });

    const answer = await correction!;
    assert.equal(answer.status, 201, `the correction during the decay step: ${JSON.stringify(answer.body)}`);
    assert.equal(answer.body.memory.content, Q_TEXT);
    const result = await stepDone!;
    assert.equal(result.batches, p.page - q.page + 1);
    const rows = await sql<{ id: string; is_valid: boolean; strength: number }[]>`
      select id, is_valid, strength from public.devai_memories where id in (${q.id}, ${h.id}, ${p.id})`;
    const byId = new Map(rows.map((r) => [r.id, r]));
    assert.equal(byId.get(q.id)!.is_valid, false, "Q decayed below the threshold");
    assert.ok(byId.get(h.id)!.strength < 1 && byId.get(p.id)!.strength < 1, "H and P decayed");
  } finally {
    await settings.restore();
    await sql`delete from memory_private.lifecycle_runs where job = 'decay'`;
    await removeTenantData(sql, [tenant, filler]);
    await cron.resume();
    await Promise.all([sql.end(), step.end(), holder.end(), probe.end()]);
  }
});
