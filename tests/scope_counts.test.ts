// The scope sizes the write path keeps (memory_private.memory_scope_counts, migration
// 20261208300000; docs/retrieval.md#vector): writers of one namespace at once never wait for each
// other on the counts (each takes a row of the base no other transaction holds, or adds one), a
// rollback takes its change back, a repeatable-read writer adds a row of its own, and the
// compaction job merges what they left into one row per base, the count a fresh count gives.
import assert from "node:assert/strict";
import { realServerOnly } from "./support/backend.ts";
import { dbTest } from "./support/http.ts";
import { newTenant, testSql } from "./support/seed.ts";
import { lockWaiters, waitUntil } from "./support/wait.ts";

const sql = testSql(6);
const NS = "devai/project/scopecount";

async function insertMemory(tx: typeof sql, tenant: string, content: string): Promise<void> {
  await tx`insert into public.devai_memories (owner_id, content, memory_type, namespace)
           values (${tenant}, ${content}, 'semantic', ${NS})`;
}

/** The kept count of each base of NS (sum, rows) and the fresh count of the memories under it. */
async function counts(tenant: string) {
  return await sql<{ scope: string; kept: number; rows: number; fresh: number }[]>`
    select s.scope,
           coalesce((select sum(c.memories) from memory_private.memory_scope_counts c
                      where c.owner_id = ${tenant} and c.scope = s.scope), 0)::int as kept,
           (select count(*) from memory_private.memory_scope_counts c
             where c.owner_id = ${tenant} and c.scope = s.scope)::int as rows,
           (select count(*) from public.devai_memories m
             where m.owner_id = ${tenant} and m.is_valid and m.state = 'active'
               and (m.namespace || '/') ^@ (s.scope || '/'))::int as fresh
      from unnest(memory_private.namespace_scopes(${NS})) as s(scope)
     order by s.scope`;
}

Deno.test("scope counts: writes, forgets and deletes keep each base's count equal to a fresh count", async () => {
  const t = newTenant();
  for (let i = 0; i < 5; i++) await insertMemory(sql, t, `kept count ${i}`);
  await sql`update public.devai_memories set state = 'soft_deleted', purge_at = now() + interval '30 days'
             where owner_id = ${t} and content = 'kept count 1'`;
  await sql`delete from public.devai_memories where owner_id = ${t} and content = 'kept count 2'`;
  const rows = await counts(t);
  assert.deepEqual(rows.map((r) => r.scope), ["devai", "devai/project", NS]);
  for (const r of rows) assert.equal(r.kept, 3, `${r.scope}: ${JSON.stringify(r)}`);
  for (const r of rows) assert.equal(r.fresh, 3, `${r.scope}: ${JSON.stringify(r)}`);
});

Deno.test({
  ...realServerOnly(
    "scope counts: writers of one namespace at once do not wait for each other, and rollbacks leave no count",
    "three transactions on three connections at once",
  ),
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const t = newTenant();
  await insertMemory(sql, t, "first memory of the scope");
  const [a, b, c] = [await sql.reserve(), await sql.reserve(), await sql.reserve()];
  try {
    // A holds the bases' rows (its insert added to them) until it commits.
    await a`begin`;
    await insertMemory(a, t, "written by A");
    // B writes to the same namespace meanwhile: it must not queue behind A.
    await b`begin`;
    let bDone = false;
    const bInsert = insertMemory(b, t, "written by B, rolled back").then(() => (bDone = true));
    const waited = await waitUntil(
      async () => bDone ? "finished" : (await lockWaiters(sql)) > 0 ? "waiting on a lock" : false,
      "B's insert finishing or waiting",
    );
    assert.equal(waited, "finished", "B's insert did not wait for A's transaction");
    await bInsert;
    // C writes in repeatable read (it may not update a row changed since its snapshot): a row of its own.
    await c`begin isolation level repeatable read`;
    await insertMemory(c, t, "written by C");
    await c`commit`;
    await b`rollback`;
    await a`commit`;
  } finally {
    a.release();
    b.release();
    c.release();
  }
  const before = await counts(t);
  for (const r of before) assert.equal(r.kept, 3, `${r.scope}: ${JSON.stringify(r)}`);
  for (const r of before) assert.equal(r.fresh, 3, `${r.scope}: ${JSON.stringify(r)}`);
  assert.ok(before.every((r) => r.rows >= 2), `the writers left rows of their own: ${JSON.stringify(before)}`);

  await sql`select memory_private.compact_scope_counts()`;
  const after = await counts(t);
  assert.deepEqual([...after], before.map((r) => ({ ...r, rows: 1 })), "compaction merges each base's rows into one");
});

dbTest("close the pool", async () => {
  await sql.end();
});
