// GET /memory/export shows one instant: every page of every format is read from a copy made by one
// statement, so what is written while the export runs is in none of its arrays, and no snapshot
// is held while the client reads (docs/operations.md#exports). The export is held between its
// first page and the rest by the test itself (it reads the body only after the writes: the stream
// reads a page when the client takes one), while other requests forget a memory already exported,
// correct one, remember a new one, and a purge deletes one.
import assert from "node:assert/strict";
import { createHandler } from "../supabase/functions/memory/handler.ts";
import { EXPORT_PAGE_ROWS, stageExport } from "../supabase/functions/_shared/services/memory-export.ts";
import { localEmbedder } from "../supabase/functions/_shared/embeddings.ts";
import { createSql, type Tx } from "../supabase/functions/_shared/db.ts";
import { MAX_STATEMENT_TIMEOUT_MS } from "../supabase/functions/_shared/env.ts";
import {
  COPY_FACTOR,
  inStagedSnapshot,
  type PageReader,
  SnapshotEndedError,
} from "../supabase/functions/_shared/db-snapshot.ts";
import { userHeaders } from "./support/auth.ts";
import { realServerOnly } from "./support/backend.ts";
import { testConfig, testDatabaseUrl } from "./support/config.ts";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, seedMemories, testSql } from "./support/seed.ts";
import { waitUntil } from "./support/wait.ts";

const sql = testSql();
const api = memoryApi(sql);
const handler = createHandler({ sql, config: testConfig(), embedder: localEmbedder() });
const opts = { sanitizeOps: false, sanitizeResources: false };
// PGlite has no other backends to watch, no pool to share, and runs one statement at a time.
const ONE_SERVER = "PGlite has one backend and no pool: nothing to watch or share";
const MEMORIES = EXPORT_PAGE_ROWS + 20; // two pages of memories

interface Exported {
  memories: { id: string; state: string; soft_deleted: boolean; is_valid: boolean; access_count: number }[];
  history: { memory_id: string; event: string }[];
  counts: { memories: number; soft_deleted: number; history: number };
  files: { path: string; content: string }[];
}

/** The export's response: its first page is read, the rest waits for the body to be read. */
async function startExport(tenant: string, query: string): Promise<Response> {
  const res = await handler(new Request(`http://local/memory/export${query}`, { headers: await userHeaders(tenant) }));
  assert.equal(res.status, 200);
  return res;
}

/** Forgets the first memory the export read and remembers a new one, each in a request of its own. */
async function writeMeanwhile(tenant: string, firstId: string): Promise<string> {
  assert.equal((await api("POST", `/memory/${firstId}/forget`, { as: tenant })).status, 200);
  const added = await api("POST", "/memory/remember", { as: tenant, body: { content: "written during the export" } });
  assert.equal(added.status, 201, JSON.stringify(added.body));
  return added.body.memory.id;
}

async function tenantWithTwoPages(): Promise<{ tenant: string; firstId: string; historyRows: number }> {
  const tenant = newTenant();
  const rows = Array.from({ length: MEMORIES }, (_, i) => ({
    content: `fact ${i}`,
    namespace: "devai/global/notes",
    embedding: null,
  }));
  await seedMemories(sql, tenant, rows);
  const [first] = await sql<{ id: string }[]>`
    select id::text from public.devai_memories where owner_id = ${tenant} order by created_at, id limit 1`;
  const [history] = await sql<{ n: number }[]>`
    select count(*)::int as n from public.memory_history h
      join public.devai_memories m on m.id = h.memory_id where m.owner_id = ${tenant}`;
  return { tenant, firstId: first!.id, historyRows: history!.n };
}

Deno.test(
  { name: "export: JSON shows the instant of its first page, not writes made between pages", ...opts },
  async () => {
    const { tenant, firstId, historyRows } = await tenantWithTwoPages();
    const res = await startExport(tenant, "");
    const addedId = await writeMeanwhile(tenant, firstId);
    const body = JSON.parse(await res.text()) as Exported;

    assert.equal(body.memories.length, MEMORIES, "the memory remembered meanwhile is not in it");
    assert.ok(!body.memories.some((m) => m.id === addedId));
    const first = body.memories.find((m) => m.id === firstId)!;
    assert.deepEqual([first.state, first.soft_deleted], ["active", false]);
    assert.deepEqual(
      body.history.filter((h) => h.memory_id === firstId || h.memory_id === addedId).map((h) => h.event),
      ["ADD"],
      "the first memory's ADD only: neither the forget nor the new memory's ADD, written after the first page",
    );
    assert.equal(body.history.length, historyRows);
    assert.deepEqual(
      [body.counts.memories, body.counts.soft_deleted, body.counts.history],
      [MEMORIES, 0, historyRows],
    );
  },
);

Deno.test({ name: "export: the Markdown files show the instant of the first page too", ...opts }, async () => {
  const { tenant, firstId } = await tenantWithTwoPages();
  const res = await startExport(tenant, "?format=markdown");
  await writeMeanwhile(tenant, firstId);
  const body = JSON.parse(await res.text()) as Exported;
  assert.equal(body.files.length, MEMORIES, "the memory remembered meanwhile is not in it");
  assert.ok(!body.files.some((f) => f.content.includes("written during the export")));
});

/** The tenant's export copies' rows (memory_private.export_rows, read as the service). */
async function copiedRows(tenant: string): Promise<number> {
  return (await sql<{ n: number }[]>`
    select count(*)::int as n from memory_private.export_rows where owner_id = ${tenant}`)[0]!.n;
}

Deno.test({
  ...realServerOnly(
    "export: a client that stopped reading holds no transaction and no snapshot; going away deletes its copy",
    ONE_SERVER,
  ),
  ...opts,
}, async () => {
  const { tenant } = await tenantWithTwoPages();
  // The export's own pool, so that only its backends are watched (the suite's files run side by side).
  const pool = createSql(testDatabaseUrl(), { max: 4, applicationName: "devai-memory-export-hold" });
  const served = createHandler({ sql: pool, config: testConfig(), embedder: localEmbedder() });
  // A backend in a transaction, or holding a snapshot (backend_xmin): what keeps vacuum from
  // removing the row versions every tenant makes meanwhile.
  const holding = async () =>
    (await sql<{ state: string; xmin: string | null }[]>`
      select state, backend_xmin::text as xmin from pg_stat_activity
       where application_name = 'devai-memory-export-hold'
         and (state like 'idle in transaction%' or backend_xmin is not null)`).length;
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  try {
    const res = await served(new Request("http://local/memory/export", { headers: await userHeaders(tenant) }));
    assert.equal(res.status, 200);
    reader = res.body!.getReader();
    assert.ok((await reader.read()).value!.length > 0, "the first page is read");
    // The stream reads one chunk ahead of the client, in a short transaction; then nothing is held
    // until the client reads on. (A snapshot held for the client was held up to ten minutes, and
    // the idle bound ended it after a minute: past this wait's deadline.)
    await waitUntil(async () => await holding() === 0, "no transaction, no snapshot while the client does not read");
    assert.ok(await copiedRows(tenant) > MEMORIES, "the export's copy waits for the client");
    await reader.cancel();
    reader = undefined;
    assert.equal(await copiedRows(tenant), 0, "deleted when the client went away");
    assert.equal(await holding(), 0);
  } finally {
    await reader?.cancel().catch(() => {});
    await pool.end();
  }
});

Deno.test(
  { name: "export: a read, a correction, a reinforcement and a purge between pages are not in it", ...opts },
  async () => {
    const { tenant } = await tenantWithTwoPages();
    const [last] = await sql<{ id: string; access_count: number }[]>`
      select id::text, access_count from public.devai_memories where owner_id = ${tenant}
       order by created_at desc, id desc limit 2`;
    const [, purged] = await sql<{ id: string }[]>`
      select id::text from public.devai_memories where owner_id = ${tenant} order by created_at desc, id desc limit 2`;
    const res = await startExport(tenant, "");
    let body: Exported;
    try {
      // On the second page, all of them: read only after these. A correction supersedes the memory
      // with a new one.
      const corrected = await api("POST", `/memory/${last!.id}/correct`, {
        as: tenant,
        body: { content: "corrected during the export" },
      });
      assert.equal(corrected.status, 201, JSON.stringify(corrected.body));
      await sql`update public.devai_memories set access_count = access_count + 7 where id = ${last!.id}`;
      await sql`delete from public.devai_memories where id = ${purged!.id}`;
    } finally {
      body = JSON.parse(await res.text()) as Exported;
    }
    assert.equal(body.memories.length, MEMORIES, "the purged memory is still in it, and not the correction");
    const exported = body.memories.find((m) => m.id === last!.id)!;
    assert.deepEqual([exported.is_valid, exported.access_count], [true, last!.access_count], "as it was, unreinforced");
    assert.ok(body.memories.some((m) => m.id === purged!.id));
    assert.deepEqual(
      body.history.filter((h) => h.memory_id === last!.id).map((h) => h.event),
      ["ADD"],
      "the correction's history row is not in it either",
    );
    assert.equal(await copiedRows(tenant), 0, "the copy is deleted once read");
  },
);

Deno.test({
  ...realServerOnly(
    "export: a client that stops reading without going away loses the export after the idle bound, and its slot",
    ONE_SERVER,
  ),
  ...opts,
}, async () => {
  const { tenant } = await tenantWithTwoPages();
  // Statements of 1 s at most (the copy is one): the copy waits SNAPSHOT_IDLE_FACTOR times that for a page to be asked.
  const pool = createSql(testDatabaseUrl(), { max: 2, statementTimeoutMs: 1000 });
  const served = createHandler({ sql: pool, config: testConfig(), embedder: localEmbedder() });
  const exportOf = async () =>
    await served(new Request("http://local/memory/export", { headers: await userHeaders(tenant) }));
  const error = console.error;
  console.error = () => {};
  let res: Response | undefined;
  try {
    res = await exportOf();
    assert.equal(res.status, 200);
    // The stalled export's copy is deleted and its slot given back: the tenant's next export runs
    // (it was 429 export_running for as long as the client stalled, whatever the idle bound).
    const next = await waitUntil(async () => {
      const r = await exportOf();
      if (r.status === 200) return r;
      assert.equal(r.status, 429);
      await r.body?.cancel();
    }, "the stalled export's slot given back");
    assert.equal((JSON.parse(await next.text()) as Exported).memories.length, MEMORIES);
    const failure = await res.text().then(() => undefined, (err: unknown) => err);
    assert.match(String(failure), /the snapshot ended: no piece asked for 4000 ms/);
  } finally {
    console.error = error;
    // Unread (the test failed): its copy is deleted, else the pool's end would wait for it. (An
    // errored body's cancel rejects with its error: the stream ends itself after the idle bound.)
    if (res && !res.bodyUsed) await res.body?.cancel().catch(() => {});
    await pool.end();
  }
});

Deno.test({
  ...realServerOnly(
    "export: a stalled export's response ends itself when its copy goes, with no read to end it (no server's guard)",
    ONE_SERVER,
  ),
  ...opts,
}, async () => {
  // The handler called directly, as Supabase's runtime serves it: no connection guard closes the
  // stalled connection, so the stream must end itself once the idle bound has deleted the copy.
  // It used to wait, its page queued, for a read that a stalled client never makes.
  const { tenant } = await tenantWithTwoPages();
  const pool = createSql(testDatabaseUrl(), { max: 2, statementTimeoutMs: 500 });
  const served = createHandler({ sql: pool, config: testConfig(), embedder: localEmbedder() });
  const error = console.error;
  console.error = () => {};
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  try {
    for (const accept of ["application/json", "application/x-tar"]) {
      const query = accept === "application/json" ? "" : "?format=markdown";
      const headers = { ...await userHeaders(tenant), accept };
      const res = await served(new Request(`http://local/memory/export${query}`, { headers }));
      assert.equal(res.status, 200);
      reader = res.body!.getReader();
      // Settled without a read: `closed` follows the stream's state, not the reader's asks.
      let ended: unknown;
      reader.closed.then(() => ended = "closed whole", (err) => ended = err);
      await waitUntil(async () => {
        const [copy] = await sql<{ n: number }[]>`
          select count(*)::int as n from memory_private.export_rows where owner_id = ${tenant}`;
        return copy!.n === 0;
      }, "the stalled export's copy deleted");
      // The copy is deleted after the stream is ended (its deletion is a round trip away).
      assert.ok(ended instanceof SnapshotEndedError, `${accept}: the stream ${String(ended ?? "still open")}`);
      assert.match(ended.message, /the snapshot ended: no piece asked for 2000 ms/);
      // The reader sees it too, after what was queued before the end was dropped.
      await assert.rejects(reader.read(), SnapshotEndedError);
      reader = undefined;
    }
  } finally {
    console.error = error;
    await reader?.cancel().catch(() => {});
    await pool.end();
  }
});

Deno.test({
  ...realServerOnly("export: runs with the longest statement timeout the configuration takes", ONE_SERVER),
  ...opts,
}, async () => {
  // The copy waits four statement timeouts for its reader in a timer, which must fit in 2^31 - 1 ms.
  const { tenant } = await tenantWithTwoPages();
  const pool = createSql(testDatabaseUrl(), { max: 2, statementTimeoutMs: MAX_STATEMENT_TIMEOUT_MS });
  try {
    const served = createHandler({ sql: pool, config: testConfig(), embedder: localEmbedder() });
    const res = await served(new Request("http://local/memory/export", { headers: await userHeaders(tenant) }));
    assert.equal(res.status, 200);
    assert.equal((JSON.parse(await res.text()) as Exported).memories.length, MEMORIES);
  } finally {
    await pool.end();
  }
});

Deno.test({
  ...realServerOnly("export: a snapshot is held at most its longest, however steadily its reader asks", ONE_SERVER),
  ...opts,
}, async () => {
  const tenant = newTenant();
  // A reader asking for a piece every 20 ms, far under the idle bound, of a read that never ends.
  // The bounds are wide (1 s idle, 1.5 s in all) so that a loaded machine's stall between two asks
  // is not taken for an idle reader, nor does it leave only one piece read before the bound.
  const endless = async function* (_: number, page: PageReader) {
    for (;;) yield await page(async (tx) => (await tx<{ n: number }[]>`select 1 as n`)[0]!.n);
  };
  const staging = { stage: () => Promise.resolve(0), drop: (tx: Tx) => tx`select 1` };
  let pieces = 0;
  const failure = await (async () => {
    const snapshot = inStagedSnapshot(sql, { tenantId: tenant, actor: "test" }, staging, endless, {
      idleMs: 1_000,
      maxMs: 1_500,
    });
    for await (const _ of snapshot) {
      // Bounded, so that without the bound the test fails instead of reading for ever.
      if (++pieces > 200) break;
      await new Promise((r) => setTimeout(r, 20));
    }
  })().then(() => undefined, (err: unknown) => err);
  assert.ok(failure instanceof SnapshotEndedError, String(failure));
  assert.match(failure.message, /held 1500 ms, the longest a snapshot is held/);
  assert.ok(pieces > 1, `pieces read before the bound: ${pieces}`);
  // Its slot is given back with it.
  const again = await startExport(tenant, "");
  await again.body!.cancel();
});

Deno.test({
  ...realServerOnly(
    "export: the copy is one REPEATABLE READ transaction whose statements each get the statement timeout",
    ONE_SERVER,
  ),
  ...opts,
}, async () => {
  // One statement of four statement timeouts (60 s) copied a tenant of 150,000 memories in
  // 59-80 s here: a 503. Now every statement is bounded as any other, the copy as a whole by the
  // deadline, and they read one snapshot. Read here from inside the copy's transaction.
  const pool = createSql(testDatabaseUrl(), { max: 2, statementTimeoutMs: 1_500 });
  try {
    const staging = {
      stage: async (tx: Tx, deadline: number) => {
        const [row] = await tx<{ iso: string; t: string }[]>`
          select current_setting('transaction_isolation') as iso, current_setting('statement_timeout') as t`;
        return { ...row!, left: deadline - Date.now() };
      },
      drop: (tx: Tx) => tx`select 1`,
    };
    const once = async function* (staged: { iso: string; t: string; left: number }) {
      yield staged;
    };
    const seen = [];
    for await (const s of inStagedSnapshot(pool, { tenantId: newTenant(), actor: "test" }, staging, once)) seen.push(s);
    assert.deepEqual(seen.map((s) => [s.iso, s.t]), [["repeatable read", "1500ms"]]);
    assert.ok(seen[0]!.left > 1_500 && seen[0]!.left <= COPY_FACTOR * 1_500, `the copy's bound: ${seen[0]!.left} ms`);
  } finally {
    await pool.end();
  }
});

/** Sets a public.memory_settings value for fn, then puts the old one back. */
async function withSetting<T>(name: string, value: number, fn: () => Promise<T>): Promise<T> {
  const [old] = await sql<{ value: string }[]>`select value::text from public.memory_settings where name = ${name}`;
  await sql`update public.memory_settings set value = ${value} where name = ${name}`;
  try {
    return await fn();
  } finally {
    await sql`update public.memory_settings set value = ${old!.value}::numeric where name = ${name}`;
  }
}

Deno.test({
  // PGlite's one backend runs no other transaction while the copy's is open: nothing is written between two chunks.
  ...realServerOnly("export: a copy in chunks shows one instant, whatever is written between two", ONE_SERVER),
  ...opts,
}, async () => {
  // Chunks of 100 rows: the 520 memories take six statements, and between the first two another
  // request forgets a memory the first chunk copied and remembers a new one. Chunks each in a
  // transaction of their own would show the forget in `history` and the new memory in `memories`.
  const { tenant, firstId, historyRows } = await tenantWithTwoPages();
  const exportId = crypto.randomUUID();
  let chunks = 0;
  let addedId: string | undefined;
  const afterChunk = async () => {
    if (++chunks === 1) addedId = await writeMeanwhile(tenant, firstId);
  };
  const read = async function* (staged: Record<string, number>, page: PageReader) {
    yield staged;
    for (const part of ["memories", "history"]) {
      yield await page((tx) =>
        tx<{ id: string; event: string; memory_id: string }[]>`
          select p.item->>'id' as id, p.item->>'event' as event, p.item->>'memory_id' as memory_id
            from public.memory_export_page(${exportId}, ${part}, 0, 5000) p`
      );
    }
  };
  const pieces = await withSetting("export_copy_chunk_rows", 100, async () => {
    const got = [];
    const staging = {
      stage: (tx: Tx, deadline: number) =>
        stageExport(tx, exportId, ["memories", "relations", "history"], deadline, afterChunk),
      drop: (tx: Tx) => tx`select public.memory_export_drop(${exportId})`,
    };
    for await (const piece of inStagedSnapshot(sql, { tenantId: tenant, actor: "test" }, staging, read)) {
      got.push(piece);
    }
    return got;
  });
  const [staged, memories, history] = pieces as [
    Record<string, number>,
    { id: string }[],
    { memory_id: string; event: string }[],
  ];
  assert.deepEqual(staged, { memories: MEMORIES, relations: 0, history: historyRows });
  assert.equal(
    chunks,
    6 + 1 + Math.ceil((historyRows + 1) / 100),
    "memories, relations, history: the last chunk of each short",
  );
  assert.equal(memories.length, MEMORIES);
  assert.ok(addedId && !memories.some((m) => m.id === addedId), "not the memory remembered after the first chunk");
  assert.deepEqual(
    history.filter((h) => h.memory_id === firstId || h.memory_id === addedId).map((h) => h.event),
    ["ADD"],
    "nor the forget of a memory the first chunk copied",
  );
});

Deno.test(
  { name: "export: a tenant over export_rows_max is refused (422), and nothing is copied", ...opts },
  async () => {
    const { tenant, historyRows } = await tenantWithTwoPages();
    await withSetting("export_rows_max", MEMORIES + historyRows - 1, async () => {
      const res = await handler(new Request("http://local/memory/export", { headers: await userHeaders(tenant) }));
      const body = await res.json();
      assert.equal(res.status, 422, JSON.stringify(body).slice(0, 300));
      assert.equal(body.error.code, "export_too_large");
      assert.match(
        body.error.message,
        new RegExp(`${MEMORIES + historyRows} rows .* export_rows_max \\(${MEMORIES + historyRows - 1}\\)`),
      );
      assert.equal(await copiedRows(tenant), 0);
      // The Markdown export copies the memories only: within the bound.
      const markdown = await startExport(tenant, "?format=markdown");
      assert.equal((JSON.parse(await markdown.text()) as Exported).files.length, MEMORIES);
    });
    const again = await startExport(tenant, "");
    assert.equal((JSON.parse(await again.text()) as Exported).memories.length, MEMORIES, "its slot given back");
  },
);

Deno.test({
  ...realServerOnly(
    "export: a tenant runs one export at a time (429 while its first is read)",
    ONE_SERVER,
  ),
  ...opts,
}, async () => {
  const { tenant } = await tenantWithTwoPages();
  const first = await startExport(tenant, "");
  try {
    const second = await handler(new Request("http://local/memory/export", { headers: await userHeaders(tenant) }));
    assert.equal(second.status, 429);
    assert.equal(second.headers.get("retry-after"), "5");
    assert.equal((await second.json()).error.code, "export_running");
  } finally {
    await first.body!.cancel();
  }
  const again = await startExport(tenant, "");
  assert.equal((JSON.parse(await again.text()) as Exported).memories.length, MEMORIES, "once the first ended");
});

Deno.test({
  ...realServerOnly(
    "export: exports run at most a quarter of the pool at once; the other requests keep the rest",
    ONE_SERVER,
  ),
  ...opts,
}, async () => {
  // A pool of four connections: one held export at a time, whoever the tenant.
  const [a, b] = [await tenantWithTwoPages(), await tenantWithTwoPages()];
  const pool = createSql(testDatabaseUrl(), { max: 4 });
  const served = createHandler({ sql: pool, config: testConfig(), embedder: localEmbedder() });
  const exportOf = async (tenant: string) =>
    await served(new Request("http://local/memory/export", { headers: await userHeaders(tenant) }));
  const held = await exportOf(a.tenant);
  try {
    assert.equal(held.status, 200);
    const busy = await exportOf(b.tenant);
    assert.equal(busy.status, 503);
    assert.equal((await busy.json()).error.code, "exports_busy");
    const read = await memoryApi(pool)("GET", `/memory/${b.firstId}`, { as: b.tenant });
    assert.equal(read.status, 200, "b's other requests are served meanwhile");
  } finally {
    await held.body!.cancel();
  }
  try {
    const after = await exportOf(b.tenant);
    assert.equal(after.status, 200);
    assert.equal((JSON.parse(await after.text()) as Exported).memories.length, MEMORIES);
  } finally {
    await pool.end();
  }
});

Deno.test({
  name: "export: with a pool of one connection, other requests run while the client reads, and are not in it",
  ...opts,
}, async () => {
  // The embedded server's pool (DB_POOL_MAX=1): a snapshot held while the client reads would take
  // its one connection, and the tenant's next request would wait for it, then fail (503). Its pages
  // were read each as of its own instant there, so the forget showed in `history` of a memory
  // `memories` had shown active; read from the copy, they agree.
  const { tenant, firstId } = await tenantWithTwoPages();
  const pool = createSql(testDatabaseUrl(), { max: 1, statementTimeoutMs: 500 });
  let res: Response | undefined;
  try {
    res = await createHandler({ sql: pool, config: testConfig(), embedder: localEmbedder() })(
      new Request("http://local/memory/export", { headers: await userHeaders(tenant) }),
    );
    assert.equal(res.status, 200);
    const meanwhile = await memoryApi(pool)("GET", `/memory/${firstId}`, { as: tenant });
    assert.equal(meanwhile.status, 200, JSON.stringify(meanwhile.body));
    const forgot = await memoryApi(pool)("POST", `/memory/${firstId}/forget`, { as: tenant });
    assert.equal(forgot.status, 200, JSON.stringify(forgot.body));
    const body = JSON.parse(await res.text()) as Exported;
    assert.equal(body.memories.length, MEMORIES);
    assert.equal(body.memories.find((m) => m.id === firstId)!.state, "active");
    assert.deepEqual(body.history.filter((h) => h.memory_id === firstId).map((h) => h.event), ["ADD"]);
  } finally {
    if (res && !res.bodyUsed) await res.body?.cancel();
    await pool.end();
  }
});

Deno.test({ name: "close the pool", ...opts }, async () => {
  await sql.end();
});
