// What a search writes (the reinforcement of the memories it used, its memory_events row) waits
// behind its answer and is written in batches
// (docs/operations.md#write-behind-reinforcement-and-search-events). A crash between the answer
// and the batch loses exactly the searches waiting, at most MAX_WAITING_SEARCHES of them, and
// nothing else; a clean stop writes them. The server runs in a process of its own, killed or
// stopped by the test; every wait is for an event (output, rows), never a delay.
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { createSql, tenantItem } from "../supabase/functions/_shared/db.ts";
import {
  flushSearchWrites,
  heldSearchWrites,
  MAX_RETAINED_SEARCHES,
  MAX_WAITING_SEARCHES,
  writeBehind,
} from "../supabase/functions/_shared/retrieval/write-behind.ts";
import { userHeaders } from "./support/auth.ts";
import { testDatabaseUrl } from "./support/config.ts";
import { realServerOnly } from "./support/backend.ts";
import { dbTest } from "./support/http.ts";
import { spawnWatched } from "./support/process.ts";
import { newTenant, seedMemories, testSql } from "./support/seed.ts";
import { waitUntil } from "./support/wait.ts";

const sql = testSql(2);
const REPO = fileURLToPath(new URL("..", import.meta.url));
/** Longer than any test: no batch is written by the clock, only by count or shutdown. */
const AN_HOUR_MS = 3_600_000;

async function startChild() {
  const child = spawnWatched(Deno.execPath(), [
    "run",
    "-A",
    "--config",
    "supabase/functions/deno.json",
    "tests/support/server_child.ts",
  ], {
    cwd: REPO,
    env: {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      HOME: Deno.env.get("HOME") ?? "/root",
      ...(Deno.env.get("DENO_DIR") ? { DENO_DIR: Deno.env.get("DENO_DIR")! } : {}),
      NO_COLOR: "1",
      DATABASE_URL: testDatabaseUrl(),
      RETRIEVAL_WRITE_BEHIND_MS: String(AN_HOUR_MS),
    },
  });
  await child.waitFor(/listening http:\S+\n/);
  const base = /listening (http:\S+)/.exec(child.output())![1]!;
  return { child, base };
}

async function retrieve(base: string, tenant: string, message: string): Promise<string[]> {
  const res = await fetch(`${base}/memory-retrieve`, {
    method: "POST",
    headers: await userHeaders(tenant),
    body: JSON.stringify({ message, project: "shop", mode: "keyword" }),
  });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  return body.memories.filter((m: { injected: boolean }) => m.injected).map((m: { id: string }) => m.id);
}

async function written(tenant: string): Promise<{ events: number; accesses: number; memories: number }> {
  const [row] = await sql<{ events: number; accesses: number; memories: number }[]>`
    select (select count(*)::int from public.memory_events where owner_id = ${tenant} and op = 'search') as events,
           (select coalesce(sum(access_count), 0)::int from public.devai_memories where owner_id = ${tenant}) as accesses,
           (select count(*)::int from public.devai_memories where owner_id = ${tenant}) as memories`;
  return row!;
}

/** When the statement waiting for memory_events' lock (a batch) started; undefined when none waits. */
/**
 * The write-behind pools of the lock tests, by name: only their waits count (a pg_cron job writing
 * an event while a test holds the table's lock waits too, until the test lets go, and is no batch).
 */
const LOCK_TEST_POOL = "write-behind-lock-test";

async function eventsLockWaiter(): Promise<Date | undefined> {
  const [r] = await sql<{ started: Date }[]>`
    select a.query_start as started from pg_locks l join pg_stat_activity a using (pid)
     where l.relation = 'public.memory_events'::regclass and not l.granted and a.datname = current_database()
       and a.application_name = ${LOCK_TEST_POOL}`;
  return r?.started;
}

const FACTS = [
  { content: "The shop deploys with blue-green releases on Fridays", namespace: "devai/project/shop/ops" },
  { content: "The shop's CDN is Fastly, purged after each release", namespace: "devai/project/shop/ops" },
];

dbTest(
  "write-behind: a crash between the answers and the batch loses those searches' reinforcements and events, nothing else",
  async () => {
    const tenant = newTenant();
    await seedMemories(sql, tenant, FACTS);
    const { child, base } = await startChild();
    try {
      const injected = [
        ...await retrieve(base, tenant, "Which releases does the shop deploy on Fridays?"),
        ...await retrieve(base, tenant, "Which CDN does the shop purge after a release?"),
      ];
      assert.ok(injected.length >= 2, "the searches used memories");
      const remembered = await fetch(`${base}/memory/remember`, {
        method: "POST",
        headers: await userHeaders(tenant),
        body: JSON.stringify({ content: "The shop's staging database is restored every Monday", project: "shop" }),
      });
      assert.equal(remembered.status, 201, "a write of another kind commits before it answers");
      child.child.kill("SIGKILL");
      await child.exited;
      assert.deepEqual(
        await written(tenant),
        { events: 0, accesses: 0, memories: 3 },
        "the two waiting searches are lost (no event, no reinforcement); every memory is there",
      );
    } finally {
      try {
        child.child.kill("SIGKILL");
      } catch { /* already gone */ }
      await child.exited;
    }
  },
);

dbTest(
  `write-behind: at most ${MAX_WAITING_SEARCHES} searches wait; a crash after a batch loses only the searches after it`,
  async () => {
    const tenant = newTenant();
    await seedMemories(sql, tenant, FACTS);
    const { child, base } = await startChild();
    try {
      let used = 0;
      for (let i = 0; i < MAX_WAITING_SEARCHES; i++) {
        used += (await retrieve(base, tenant, `Which CDN does the shop use? (turn ${i})`)).length;
      }
      // The last of those made the batch: it is written without the clock (the event: its rows).
      await waitUntil(
        async () => (await written(tenant)).events === MAX_WAITING_SEARCHES || undefined,
        "the batch of waiting searches",
      );
      await retrieve(base, tenant, "Which CDN does the shop use? (one more)");
      child.child.kill("SIGKILL");
      await child.exited;
      assert.deepEqual(
        await written(tenant),
        { events: MAX_WAITING_SEARCHES, accesses: used, memories: 2 },
        "the batch is kept; only the search after it is lost",
      );
    } finally {
      try {
        child.child.kill("SIGKILL");
      } catch { /* already gone */ }
      await child.exited;
    }
  },
);

dbTest("write-behind: a clean stop (SIGTERM) writes the waiting searches before the process exits", async () => {
  const tenant = newTenant();
  const [deploys] = await seedMemories(sql, tenant, FACTS);
  const { child, base } = await startChild();
  const injected = [
    ...await retrieve(base, tenant, "Which releases does the shop deploy on Fridays?"),
    ...await retrieve(base, tenant, "When does the shop deploy blue-green releases?"),
  ];
  assert.equal(injected.filter((id) => id === deploys!.id).length, 2, "both searches used the deploy fact");
  child.child.kill("SIGTERM");
  assert.equal((await child.exited).code, 0);
  const after = await written(tenant);
  assert.deepEqual([after.events, after.accesses], [2, injected.length]);
  const [row] = await sql<{ access_count: number }[]>`select access_count from public.devai_memories where id = ${
    deploys!.id
  }`;
  assert.equal(row!.access_count, 2, "two searches in one batch: two accesses");
});

Deno.test({
  ...realServerOnly(
    "write-behind: a batch skips a memory another transaction holds, without waiting for it, and applies the rest and every event",
    "two transactions open at once",
  ),
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const tenant = newTenant();
    const [held, free] = await seedMemories(sql, tenant, FACTS);
    const at = new Date("2026-03-02T10:00:00Z").toISOString();
    const items = [
      { at, ids: [held!.id, free!.id], thread_id: "t1", category: null, sim: 0.8, meta: { mode: "retrieve" } },
      { at, ids: [free!.id], thread_id: "t1", category: null, sim: null, meta: { mode: "query" } },
    ];
    // One connection holds the first memory (as a nightly job would) while the other applies the
    // batch: were the batch to wait for that row, it would fail on its lock timeout.
    const applied = await sql.begin(async (tx) => {
      await tx`select 1 from public.devai_memories where id = ${held!.id} for update`;
      const [row] = await sql<{ n: number }[]>`
        select public.record_retrievals(${sql.json(items as never)}::jsonb) as n from ${
        tenantItem(sql, tenant, { lock_timeout: "5s" })
      }`;
      return row!.n;
    });
    assert.equal(applied, 2, "the free memory's two reinforcements, none of the held one's");
    const rows = await sql<{ id: string; access_count: number }[]>`
      select id, access_count from public.devai_memories where owner_id = ${tenant}`;
    const accesses = new Map(rows.map((r) => [r.id, r.access_count]));
    assert.equal(accesses.get(held!.id), 0);
    assert.equal(accesses.get(free!.id), 2);
    assert.equal((await written(tenant)).events, 2, "both searches' events are written");
  },
});

Deno.test({
  ...realServerOnly(
    "write-behind: while batches cannot be written, at most MAX_RETAINED_SEARCHES searches wait; the oldest are dropped",
    "a second connection holds a lock the batch waits for",
  ),
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const tenant = newTenant();
    const who = { tenantId: tenant, actor: "test" };
    const pool = createSql(testDatabaseUrl(), { max: 2, statementTimeoutMs: 60_000, applicationName: LOCK_TEST_POOL });
    let n = 0;
    const item = () => ({
      at: new Date().toISOString(),
      ids: [],
      thread_id: null,
      category: null,
      sim: null,
      meta: { mode: "retrieve", n: n++ },
    });
    try {
      await sql.begin(async (tx) => {
        // The search events' table, locked as a long maintenance statement would: the first batch
        // (MAX_WAITING_SEARCHES searches, flushed by count) waits on it.
        await tx`lock table public.memory_events in exclusive mode`;
        for (let i = 0; i < MAX_WAITING_SEARCHES; i++) writeBehind(pool, who, item(), AN_HOUR_MS);
        await waitUntil(eventsLockWaiter, "the first batch to wait for the lock");
        // Meanwhile searches keep coming: more than the bound.
        const more = MAX_RETAINED_SEARCHES + 3 * MAX_WAITING_SEARCHES;
        for (let i = 0; i < more; i++) writeBehind(pool, who, item(), AN_HOUR_MS);
        assert.equal(heldSearchWrites(pool), MAX_RETAINED_SEARCHES, "what a crash now would lose is bounded");
      });
      await flushSearchWrites(pool);
      assert.equal(heldSearchWrites(pool), 0);
      assert.equal(
        (await written(tenant)).events,
        MAX_RETAINED_SEARCHES,
        "the batch that waited, and the newest of the rest: MAX_RETAINED_SEARCHES in all",
      );
      const [kept] = await sql<{ first: number; last: number }[]>`
        select min((meta ->> 'n')::int) filter (where (meta ->> 'n')::int >= ${MAX_WAITING_SEARCHES}) as first,
               max((meta ->> 'n')::int) as last
          from public.memory_events where owner_id = ${tenant} and op = 'search'`;
      assert.deepEqual(
        [kept!.first, kept!.last],
        [n - (MAX_RETAINED_SEARCHES - MAX_WAITING_SEARCHES), n - 1],
        "the oldest were dropped",
      );
    } finally {
      await pool.end();
    }
  },
});

Deno.test({
  ...realServerOnly(
    "write-behind: a batch stuck behind a lock gives up at the pool's statement timeout and is written once the lock goes",
    "a second connection holds a lock the batch waits for",
  ),
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const tenant = newTenant();
    const who = { tenantId: tenant, actor: "test" };
    const pool = createSql(testDatabaseUrl(), { max: 2, statementTimeoutMs: 200, applicationName: LOCK_TEST_POOL });
    const item = { at: new Date().toISOString(), ids: [], thread_id: null, category: null, sim: null, meta: {} };
    try {
      await sql.begin(async (tx) => {
        await tx`lock table public.memory_events in exclusive mode`;
        for (let i = 0; i < MAX_WAITING_SEARCHES; i++) writeBehind(pool, who, item, AN_HOUR_MS);
        await waitUntil(eventsLockWaiter, "the batch to wait for the lock");
        // Still locked: the batch stops waiting by itself (its timeout), and its searches wait again.
        await waitUntil(async () => !(await eventsLockWaiter()), "the batch to give up at its timeout");
        assert.equal(heldSearchWrites(pool), MAX_WAITING_SEARCHES, "kept for the next batch, none lost");
      });
      // The failed batch may still be on its way back to the queue when the lock goes (its COMMIT's
      // answer): flushed until written, each search once.
      await waitUntil(async () => {
        await flushSearchWrites(pool);
        return heldSearchWrites(pool) === 0;
      }, "the kept searches written");
      assert.equal((await written(tenant)).events, MAX_WAITING_SEARCHES);
    } finally {
      await pool.end();
    }
  },
});

Deno.test({
  ...realServerOnly(
    "write-behind: searches kept after a failed batch are written by the timer, with no new search and no flush",
    "a second connection holds a lock the batch waits for",
  ),
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const tenant = newTenant();
    const who = { tenantId: tenant, actor: "test" };
    // A short delay: the kept searches are tried again by the timer, while the lock holds and after.
    const pool = createSql(testDatabaseUrl(), { max: 2, statementTimeoutMs: 200, applicationName: LOCK_TEST_POOL });
    const item = { at: new Date().toISOString(), ids: [], thread_id: null, category: null, sim: null, meta: {} };
    try {
      await sql.begin(async (tx) => {
        await tx`lock table public.memory_events in exclusive mode`;
        for (let i = 0; i < 3; i++) writeBehind(pool, who, item, 50);
        // Each try is a statement of its own, started later.
        const first = await waitUntil(eventsLockWaiter, "the first batch to wait for the lock");
        await waitUntil(
          async () => ((await eventsLockWaiter())?.getTime() ?? 0) > first.getTime(),
          "the timer to try the kept searches again (the first try gave up at its timeout)",
        );
      });
      // Nothing else happens here: only the timer can write them now.
      await waitUntil(async () => (await written(tenant)).events === 3, "the kept searches written");
      await waitUntil(() => Promise.resolve(heldSearchWrites(pool) === 0), "nothing held once written");
    } finally {
      await pool.end();
    }
  },
});

dbTest(
  "write-behind: a tenant's searches the database refuses are dropped; the other tenants' in the batch are written",
  async () => {
    const [bad, good] = [newTenant(), newTenant()];
    const pool = createSql(testDatabaseUrl(), { max: 2 });
    const item = (ids: string[]) => ({
      at: new Date().toISOString(),
      ids,
      thread_id: null,
      category: null,
      sim: null,
      meta: {},
    });
    const error = console.error;
    const logged: string[] = [];
    console.error = (line: string) => logged.push(line);
    try {
      // Not a uuid: record_retrievals refuses that tenant's statement (22P02), which would fail again.
      writeBehind(pool, { tenantId: bad, actor: "test" }, item(["not-a-uuid"]), AN_HOUR_MS);
      writeBehind(pool, { tenantId: good, actor: "test" }, item([]), AN_HOUR_MS);
      await flushSearchWrites(pool);
      assert.equal((await written(good)).events, 1, "the other tenant's search is written");
      assert.equal((await written(bad)).events, 0);
      assert.equal(heldSearchWrites(pool), 0, "the refused one is not kept to fail again");
      assert.ok(logged.some((l) => /1 search write\(s\) of a tenant dropped/.test(l)), logged.join("\n"));
    } finally {
      console.error = error;
      await pool.end();
    }
  },
);

dbTest("close the pool", async () => {
  await sql.end();
});
