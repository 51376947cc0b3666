// Lock order of memory writes (docs/operations.md#lock-order): memory rows while a transaction
// runs, the thread's revision row only at its commit (migration 20261129300000). The interleaving
// session 37's chaos run hit: the dedup worker, in one transaction, stored a memory (which took
// the thread's revision row, held to commit) and then locked a neighbour for its next candidate,
// the very memory a correction had just locked; the correction's new version needed the revision
// row: a deadlock, the correction rolled back (40P01, a 409 since c58d6db). Here the worker is a
// transaction on a second connection doing the same two steps around the correction, with
// pg_blocking_pids deciding when it takes the second one; without the commit-time revision the
// correction is the deadlock's victim (409), with it both commit and the thread's revisions follow
// the commits: the correction's two changes, then the worker's. Twice: in a thread that has its
// revision row already, and in a brand-new one, whose row nobody may create before commit either
// (the worker's uncommitted row would make the correction wait for the whole worker transaction).
import assert from "node:assert/strict";
import { tenantItem } from "../supabase/functions/_shared/db.ts";
import { realServerOnly } from "./support/backend.ts";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, testSql } from "./support/seed.ts";
import { waitUntil } from "./support/wait.ts";

/** The race in `thread`; "default" is the thread of the remembered memory (its row exists). */
async function correctionRacesWorker(thread: string) {
  const sql = testSql(4), worker = testSql(1), probe = testSql(1);
  try {
    const t = newTenant();
    const api = memoryApi(sql);
    const made = await api("POST", "/memory/remember", { as: t, body: { content: "The shop deploys on Fridays." } });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const id: string = made.body.memory.id;

    let correction: ReturnType<typeof api> | undefined;
    let settled = false;
    const stored = await worker.begin(async (tx) => {
      // Were there a deadlock, this side would be the survivor: the correction the victim.
      await tx`set local deadlock_timeout = '60s'`;
      const [me] = await tx<{ pid: number }[]>`select pg_backend_pid() as pid`;
      await tx`select 1 from ${
        tenantItem(tx as never, t, { "memory.actor": "worker:dedup", "memory.thread_id": thread })
      }`;
      const [row] = await tx<{ id: string }[]>`
        insert into public.devai_memories (content, memory_type, namespace)
        values ('Deploys need two approvals.', 'semantic', 'devai/global') returning id`;
      correction = api("POST", `/memory/${id}/correct`, {
        as: t,
        body: { content: "The shop deploys on Mondays.", thread_id: thread },
      });
      correction.finally(() => (settled = true));
      // The correction has committed, or it waits for something this transaction holds.
      await waitUntil(
        async () =>
          settled ||
          (await probe`select 1 from pg_stat_activity where ${me!.pid}::int = any (pg_blocking_pids(pid))`).length > 0,
        "the correction commits or waits for the worker",
        { pollMs: 10 },
      );
      // The worker's next candidate locks its neighbour: the corrected memory.
      await tx`select 1 from public.devai_memories where id = ${id} for no key update`;
      return row!.id;
    });

    const answer = await correction!;
    assert.equal(answer.status, 201, JSON.stringify(answer.body));
    const newId: string = answer.body.memory.id;
    const log = await sql<{ revision: number; memory_id: string; event: string }[]>`
      select revision::int, memory_id, event from public.memory_change_log
       where owner_id = ${t} and thread_id = ${thread} order by revision`;
    const name = (m: string) => m === id ? "old" : m === newId ? "new" : m === stored ? "worker's" : "?";
    const mine = [["created", "new"], ["merged", "old"], ["created", "worker's"]];
    const expected = thread === "default" ? [["created", "old"], ...mine] : mine;
    assert.deepEqual(
      log.map((r) => [r.revision, r.event, name(r.memory_id)]),
      expected.map((e, i) => [i + 1, ...e]),
      "consecutive revisions in commit order: (remember,) the correction, the worker",
    );
    const [row] = await sql<{ revision: number }[]>`
      select revision::int from public.memory_thread_revisions where owner_id = ${t} and thread_id = ${thread}`;
    assert.equal(row!.revision, expected.length);
  } finally {
    await Promise.all([sql.end(), worker.end(), probe.end()]);
  }
}

Deno.test({
  ...realServerOnly(
    "lock order: a correction racing a worker that stored a memory and then locks the corrected one both commit",
    "two transactions on two connections at once",
  ),
  sanitizeOps: false,
  sanitizeResources: false,
}, () => correctionRacesWorker("default"));

Deno.test({
  ...realServerOnly(
    "lock order: the same race in a thread neither has written yet (no revision row) both commit",
    "two transactions on two connections at once",
  ),
  sanitizeOps: false,
  sanitizeResources: false,
}, () => correctionRacesWorker("fresh-thread"));
