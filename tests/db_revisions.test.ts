// The per-thread revision under concurrent writers, on the real database: the delta header
// relies on every write getting its own revision, with no gaps and no duplicates.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import postgres from "postgres";
import { tenantItem } from "../supabase/functions/_shared/db.ts";
import { realServerOnly } from "./support/backend.ts";
import { testDatabaseUrl } from "./support/config.ts";

const WRITERS = 20;

type Sql = ReturnType<typeof postgres>;

/** One memory insert per transaction, as the edge functions write (db.ts tenantItem's settings). All
 * transactions are open before any writes, so the writes really overlap instead of trickling in as
 * connections open. */
async function writeConcurrently(sql: Sql, tenant: string, thread: string, writers: number) {
  let openTransactions = 0;
  let releaseWriters!: () => void;
  const allOpen = new Promise<void>((resolve) => (releaseWriters = resolve));
  await Promise.all(Array.from({ length: writers }, (_, i) =>
    sql.begin(async (tx) => {
      await tx`select 1 from ${tenantItem(tx as never, tenant, { "memory.thread_id": thread })}`;
      if (++openTransactions === writers) releaseWriters();
      await allOpen;
      await tx`
        insert into public.devai_memories (content, memory_type, namespace)
        values (${`concurrent write ${i}`}, 'episodic', 'devai/project/concurrency')`;
    })));
}

async function threadRevision(sql: Sql, tenant: string, thread: string): Promise<number | undefined> {
  const [row] = await sql<{ revision: number }[]>`
    select revision::int as revision from public.memory_thread_revisions
     where owner_id = ${tenant} and thread_id = ${thread}`;
  return row?.revision;
}

async function changeLogRevisions(sql: Sql, tenant: string, thread: string): Promise<number[]> {
  const rows = await sql<{ revision: number }[]>`
    select c.revision::int as revision from public.memory_change_log c
     where c.owner_id = ${tenant} and c.thread_id = ${thread}
     order by c.revision`;
  return rows.map((row) => row.revision);
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** A tenant of its own per test, so reruns and other tests never share a counter; its rows are
 * removed afterwards (as the connecting superuser, like the purge job). */
async function withTenant(fn: (sql: Sql, tenant: string) => Promise<void>) {
  const sql = postgres(testDatabaseUrl(), { max: WRITERS, onnotice: () => {} });
  const tenant = randomUUID();
  try {
    await fn(sql, tenant);
  } finally {
    await sql`delete from public.devai_memories where owner_id = ${tenant}`;
    await sql`delete from public.memory_history where owner_id = ${tenant}`;
    await sql`delete from public.memory_change_log where owner_id = ${tenant}`;
    await sql`delete from public.memory_thread_revisions where owner_id = ${tenant}`;
    await sql.end({ timeout: 5 });
  }
}

Deno.test({
  ...realServerOnly(
    "20 concurrent memory writes on a new thread get revisions 1..20, each exactly once",
    "20 connections writing at once",
  ),
  fn: () =>
    withTenant(async (sql, tenant) => {
      const thread = `concurrency-${randomUUID()}`;
      await writeConcurrently(sql, tenant, thread, WRITERS);

      assert.equal(await threadRevision(sql, tenant, thread), WRITERS, "final revision of the thread");
      assert.deepEqual(
        await changeLogRevisions(sql, tenant, thread),
        range(1, WRITERS),
        "change log revisions are 1..20 with no duplicate and no gap",
      );
      const [memories] = await sql<{ count: number }[]>`
        select count(*)::int as count from public.devai_memories where owner_id = ${tenant}`;
      assert.equal(memories?.count, WRITERS);
    }),
});

Deno.test({
  ...realServerOnly(
    "20 concurrent memory writes on a thread that has history continue its revisions without lost updates",
    "20 connections writing at once",
  ),
  fn: () =>
    withTenant(async (sql, tenant) => {
      const thread = `concurrency-${randomUUID()}`;
      await writeConcurrently(sql, tenant, thread, 1);
      await writeConcurrently(sql, tenant, thread, WRITERS);

      assert.equal(await threadRevision(sql, tenant, thread), WRITERS + 1, "final revision of the thread");
      assert.deepEqual(
        await changeLogRevisions(sql, tenant, thread),
        range(1, WRITERS + 1),
        "change log revisions are 1..21 with no duplicate and no gap",
      );
    }),
});
