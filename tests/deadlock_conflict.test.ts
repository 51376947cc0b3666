// A request that Postgres picks as a deadlock's victim is a 409 `conflict` saying nothing was
// written (try again), never a 500: found by the chaos run of session 37, where a correction, a
// confirm or a contradiction's resolution racing the dedup worker on the same memories deadlocked
// on the thread's revision row against the memory rows. That cycle is gone since the revision row
// is taken at commit (docs/operations.md#lock-order, tests/revision_lock_order.test.ts); the 409
// stays for what the lock order leaves. Forced here with two real connections: the test's
// transaction takes the two locks backwards by hand (the thread's revision row, then the memory),
// the correction locks its memory and, at its commit, waits for the revision row.
import assert from "node:assert/strict";
import { realServerOnly } from "./support/backend.ts";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, testSql } from "./support/seed.ts";
import { waitUntil } from "./support/wait.ts";

Deno.test({
  ...realServerOnly(
    "deadlock: the victim request is a 409 conflict (nothing written, try again), the memory unchanged",
    "two transactions on two connections at once",
  ),
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const sql = testSql(4), holder = testSql(1), probe = testSql(1);
  try {
    const t = newTenant();
    const api = memoryApi(sql);
    const made = await api("POST", "/memory/remember", { as: t, body: { content: "The shop deploys on Fridays." } });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const id: string = made.body.memory.id;

    let correction: Promise<Awaited<ReturnType<typeof api>>> | undefined;
    await holder.begin(async (tx) => {
      // This side waits long before checking for a deadlock, so the correction (default 1 s) is the victim.
      await tx`set local deadlock_timeout = '60s'`;
      const [me] = await tx<{ pid: number }[]>`select pg_backend_pid() as pid`;
      const pid = me!.pid;
      await tx`update public.memory_thread_revisions set revision = revision
                where owner_id = ${t} and thread_id = 'default'`;
      correction = api("POST", `/memory/${id}/correct`, { as: t, body: { content: "The shop deploys on Mondays." } });
      // The correction holds the memory's row lock and, committing, waits for the revision row this transaction holds.
      await waitUntil(
        async () =>
          (await probe`select 1 from pg_stat_activity where ${pid}::int = any (pg_blocking_pids(pid))`).length > 0,
        "the correction waits for the thread's revision row",
        { pollMs: 10 },
      );
      await tx`select 1 from public.devai_memories where id = ${id} for update`;
    });

    const answer = await correction!;
    assert.equal(answer.status, 409, JSON.stringify(answer.body));
    assert.equal(answer.body.error.code, "conflict");
    assert.match(answer.body.error.message, /nothing was written/);
    const rows = await sql<{ id: string; is_valid: boolean; superseded_by: string | null }[]>`
      select id, is_valid, superseded_by from public.devai_memories where owner_id = ${t}`;
    assert.deepEqual([...rows], [{ id, is_valid: true, superseded_by: null }]);
    const again = await api("POST", `/memory/${id}/correct`, {
      as: t,
      body: { content: "The shop deploys on Mondays." },
    });
    assert.equal(again.status, 201, JSON.stringify(again.body));
  } finally {
    await Promise.all([sql.end(), holder.end(), probe.end()]);
  }
});
