// A write's lock on a memory (lockMemory, lockMemories, the dedup worker's neighbours) is
// `for no key update`, what its own UPDATEs take: a row that only references the memory (an edge,
// a usage record, a contradiction, whose foreign keys take key-share locks) does not wait for it,
// so it cannot close a wait cycle. Found by session 37's chaos run: a usage report or a recorded
// contradiction holding its key-share lock on one memory and waiting for another that the dedup
// worker had locked `for update`, while the worker waited to lock the first (40P01). Reproduced
// with two real connections and no sleeps: the writer locks memory 1, the other transaction links
// memories 2 → 3 and then 3 → 1, then the writer locks memory 2. With `for update` the link to 1
// waits for the writer and the writer for the link to 2: a deadlock. Writers still exclude each
// other: a second lockMemory of memory 1 waits. Restore, which locks with lockMemory and then calls
// public.restore_memory, keeps that strength there too: with `for update` it upgraded the lock and
// waited for a key-share lock taken meanwhile, whose transaction then waited for the restore.
import assert from "node:assert/strict";
import { tenantItem } from "../supabase/functions/_shared/db.ts";
import { lockMemories } from "../supabase/functions/_shared/supersede.ts";
import { lockMemory } from "../supabase/functions/_shared/memories/record.ts";
import { realServerOnly } from "./support/backend.ts";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, seedMemories, testSql } from "./support/seed.ts";
import { waitUntil } from "./support/wait.ts";

type Sql = ReturnType<typeof testSql>;

/** n memories of the tenant, their ids. */
async function seedFacts(sql: Sql, tenant: string, text: string, n: number): Promise<string[]> {
  const facts = Array.from({ length: n }, (_, i) => ({ content: `${text} ${i + 1}`, namespace: "devai/global" }));
  return (await seedMemories(sql, tenant, facts)).map((m) => m.id);
}

const pidOf = async (q: { unsafe: (s: string) => Promise<unknown[]> }) =>
  ((await q.unsafe("select pg_backend_pid() as pid")) as { pid: number }[])[0]!.pid;

/** Whether some session waits for the backend pid (pg_blocking_pids). */
const waitsFor = async (sql: Sql, pid: number) =>
  (await sql`select 1 from pg_stat_activity where ${pid}::int = any (pg_blocking_pids(pid))`).length > 0;

/** An edge from → to: its foreign keys take key-share locks on both memories. */
const linkMemories = (q: Sql, tenant: string, from: string, to: string) =>
  q`insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength)
    values (${tenant}, ${from}, ${to}, 'related_to', 0.5)`;

Deno.test({
  ...realServerOnly(
    "memory locks: a write's lock does not stop a row that references the memory, writers still wait for each other",
    "three transactions on three connections at once",
  ),
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const sql = testSql(2), writer = testSql(1), linker = testSql(1), second = testSql(1);
  try {
    const t = newTenant();
    const [m1, m2, m3] = (await seedFacts(sql, t, "lock strength fact", 3)) as [string, string, string];
    const blockedBy = (pid: number) => waitsFor(sql, pid);
    const link = (q: typeof sql, from: string, to: string) => linkMemories(q, t, from, to);

    await writer.begin(async (w) => {
      // The survivor, were there a deadlock: the linker the victim.
      await w`set local deadlock_timeout = '60s'`;
      const writerPid = await pidOf(w as never);
      await lockMemory(w as never, m1);

      const linked = linker.begin(async (l) => {
        await link(l as never, m2, m3);
        await link(l as never, m3, m1);
      });
      linked.catch(() => {}); // awaited below (a deadlock's victim rejects before then)
      let settled = false;
      linked.finally(() => (settled = true)).catch(() => {});
      await waitUntil(async () => settled || await blockedBy(writerPid), "the links are done or wait for the writer", {
        pollMs: 10,
      });
      assert.equal(settled, true, "linking to the locked memory does not wait for the writer");
      await linked;

      await lockMemories(w as never, [m2]);
      // Another writer of memory 1 waits for this one.
      const other = second.begin((s) => lockMemory(s as never, m1));
      await waitUntil(() => blockedBy(writerPid), "a second writer of memory 1 waits", { pollMs: 10 });
      other.catch(() => {});
    });
    const [row] = await sql<{ n: number }[]>`
      select count(*)::int as n from public.memory_relations where owner_id = ${t}`;
    assert.equal(row!.n, 2);
  } finally {
    await Promise.all([sql.end(), writer.end(), linker.end(), second.end()]);
  }
});

Deno.test({
  ...realServerOnly(
    "memory locks: a restore racing a transaction that links to the memory and then writes it both commit",
    "two transactions on two connections at once",
  ),
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const sql = testSql(4), linker = testSql(1);
  try {
    const t = newTenant();
    const api = memoryApi(sql);
    const [gone, other] = (await seedMemories(sql, t, [
      { content: "restore race: the forgotten fact", namespace: "devai/global", state: "soft_deleted" },
      { content: "restore race: the linking fact", namespace: "devai/global" },
    ])).map((m) => m.id) as [string, string];

    let restore: ReturnType<typeof api> | undefined;
    let settled = false;
    await linker.begin(async (l) => {
      // The survivor, were there a deadlock: the restore the victim.
      await l`set local deadlock_timeout = '60s'`;
      const [me] = await l<{ pid: number }[]>`select pg_backend_pid() as pid`;
      // A key-share lock on the forgotten memory (the edge's foreign key check).
      await l`insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength)
              values (${t}, ${other}, ${gone}, 'related_to', 0.5)`;
      restore = api("POST", `/memory/${gone}/restore`, { as: t });
      restore.finally(() => (settled = true)).catch(() => {});
      await waitUntil(
        async () =>
          settled ||
          (await sql`select 1 from pg_stat_activity where ${me!.pid}::int = any (pg_blocking_pids(pid))`).length > 0,
        "the restore commits or waits for the linker",
        { pollMs: 10 },
      );
      // The same transaction then writes the memory (as a writer does: lockMemory's strength).
      await l`select 1 from public.devai_memories where id = ${gone} for no key update`;
    });
    const answer = await restore!;
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(answer.body.memory.state, "active");
  } finally {
    await Promise.all([sql.end(), linker.end()]);
  }
});

// The retrieval's reinforcement (public.record_retrievals, reinforce_memories, a usage report's
// citation) locks the memories it reinforces in one statement (public.lock_retrieved_memories) and
// changes only their strength and access columns: `for no key update` (migration 20261202210000).
// With `for update` a row that references a reinforced memory (an edge, an entity link, a usage
// record, a contradiction, a proposal) waited for the reinforcement's commit, and a reinforcement
// skipped (`skip locked`) a memory whose referencing row was being written.
const searchOf = (ids: string[]) => [{ at: new Date().toISOString(), ids, thread_id: "t1", category: null, sim: null }];

Deno.test({
  ...realServerOnly(
    "memory locks: a reinforcement under way does not stop a row that references the memory",
    "two transactions on two connections at once",
  ),
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const sql = testSql(2), reinforcer = testSql(1), linker = testSql(1);
  try {
    const t = newTenant();
    const [m1, m2] = (await seedFacts(sql, t, "reinforcement lock fact", 2)) as [string, string];

    await reinforcer.begin(async (r) => {
      const me = await pidOf(r as never);
      const [applied] = await r<{ n: number }[]>`
        select public.record_retrievals(${r.json(searchOf([m1]) as never)}::jsonb) as n
          from ${tenantItem(r as never, t)}`;
      assert.equal(applied!.n, 1, "the memory is reinforced");

      // An edge to the reinforced memory, written while the reinforcement has not committed.
      let settled = false;
      const linked = linkMemories(linker, t, m2, m1).execute();
      linked.finally(() => (settled = true)).catch(() => {});
      await waitUntil(
        async () => settled || await waitsFor(sql, me),
        "the edge is written or waits for the reinforcement",
        {
          pollMs: 10,
        },
      );
      assert.equal(settled, true, "the edge waited for the reinforcement's commit");
      await linked;
    });
    const [row] = await sql<{ edges: number; accesses: number }[]>`
      select (select count(*)::int from public.memory_relations where owner_id = ${t}) as edges,
             (select access_count from public.devai_memories where id = ${m1}) as accesses`;
    assert.deepEqual({ ...row }, { edges: 1, accesses: 1 });
  } finally {
    await Promise.all([sql.end(), reinforcer.end(), linker.end()]);
  }
});

Deno.test({
  ...realServerOnly(
    "memory locks: a reinforcement does not skip a memory a row being written references",
    "two transactions on two connections at once",
  ),
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const sql = testSql(2), linker = testSql(1);
  try {
    const t = newTenant();
    const [m1, m2] = (await seedFacts(sql, t, "reinforcement skip fact", 2)) as [string, string];
    await linker.begin(async (l) => {
      // The edge's foreign keys hold key-share locks on both memories until this commits.
      await linkMemories(l as never, t, m2, m1);
      const [applied] = await sql<{ n: number }[]>`
        select public.record_retrievals(${sql.json(searchOf([m1, m2]) as never)}::jsonb) as n
          from ${tenantItem(sql, t, { lock_timeout: "5s" })}`;
      assert.equal(applied!.n, 2, "both memories are reinforced, not skipped");
    });
    const rows = await sql<{ access_count: number }[]>`
      select access_count from public.devai_memories where owner_id = ${t} order by id`;
    assert.deepEqual(rows.map((r) => r.access_count), [1, 1]);
  } finally {
    await Promise.all([sql.end(), linker.end()]);
  }
});
