// Two workers recording overlapping contradictions (the write-time check, the nightly consolidation)
// insert their pairs in one order (contradictions.ts recordContradictions), so neither waits for the
// other in a cycle. Found by session 37's chaos run: two inserts of the same two pairs in opposite
// orders each waited for the other's uncommitted pair (the unique index on the pair) and Postgres
// rolled one back (40P01). Reproduced with three connections and no sleeps: a third transaction
// holds pair ef uncommitted, so worker 1 (pairs ab, ef, cd) stops at ef holding ab; worker 2 (cd,
// ab) then runs; once it waits (pg_blocking_pids), the third transaction rolls back. Unordered,
// worker 2 holds cd and waits for ab while worker 1 moves on to cd: a deadlock. In pair order,
// worker 1 holds ab and cd before ef, worker 2 waits at ab holding nothing, and both commit.
import assert from "node:assert/strict";
import { recordContradictions } from "../supabase/functions/_shared/contradictions.ts";
import { realServerOnly } from "./support/backend.ts";
import { newTenant, seedMemories, testSql } from "./support/seed.ts";
import { waitUntil } from "./support/wait.ts";

Deno.test({
  ...realServerOnly(
    "contradictions: two workers recording the same pairs in opposite orders both commit",
    "three transactions on three connections at once",
  ),
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const sql = testSql(2), one = testSql(1), two = testSql(1), third = testSql(1);
  try {
    const t = newTenant();
    const made = await seedMemories(
      sql,
      t,
      Array.from({ length: 6 }, (_, i) => ({ content: `fact ${i}`, namespace: "devai/global" })),
    );
    const [a, b, c, d, e, f] = made.map((m) => m.id).sort();
    const pair = (older: string, newer: string) => ({ older: older!, newer: newer!, reason: "test" });
    const blockedBy = async (pid: number) =>
      (await sql`select 1 from pg_stat_activity where ${pid}::int = any (pg_blocking_pids(pid))`).length > 0;
    const pidOf = async (tx: typeof sql) => (await tx<{ pid: number }[]>`select pg_backend_pid() as pid`)[0]!.pid;

    let first: Promise<number> | undefined, second: Promise<number> | undefined;
    await third.begin(async (holder) => {
      const holderPid = await pidOf(holder as never);
      await recordContradictions(holder as never, t, [pair(e!, f!)], "write");
      first = one.begin(async (tx) => {
        // The survivor, were there a deadlock: worker 2 the victim.
        await tx`set local deadlock_timeout = '60s'`;
        return await recordContradictions(tx as never, t, [pair(a!, b!), pair(e!, f!), pair(c!, d!)], "write");
      });
      await waitUntil(() => blockedBy(holderPid), "worker 1 waits for the held pair ef", { pollMs: 10 });
      second = two.begin((tx) => recordContradictions(tx as never, t, [pair(c!, d!), pair(a!, b!)], "consolidation"));
      second.catch(() => {}); // awaited below (a deadlock's victim rejects before then)
      const onePid = (await sql<{ pid: number }[]>`
        select pid from pg_stat_activity where ${holderPid}::int = any (pg_blocking_pids(pid))`)[0]!.pid;
      await waitUntil(() => blockedBy(onePid), "worker 2 waits for worker 1", { pollMs: 10 });
      throw new RolledBack();
    }).catch((err) => {
      if (!(err instanceof RolledBack)) throw err;
    });

    assert.equal(await first!, 3);
    assert.equal(await second!, 0, "worker 2's pairs were recorded by worker 1");
    const [row] = await sql<{ n: number }[]>`
      select count(*)::int as n from public.memory_contradictions where owner_id = ${t}`;
    assert.equal(row!.n, 3);
  } finally {
    await Promise.all([sql.end(), one.end(), two.end(), third.end()]);
  }
});

class RolledBack extends Error {}
