// The memory function's read-only views: explain (supersede chain, relations, source, history,
// decay), weak (what will decay soon), stats, and export as JSON and as Markdown files (streamed: a
// page that fails after the first ends the body early, and is logged; an archive's so that tar fails).
import assert from "node:assert/strict";
import { createHandler } from "../supabase/functions/memory/handler.ts";
import { createSql } from "../supabase/functions/_shared/db.ts";
import { SnapshotEndedError } from "../supabase/functions/_shared/db-snapshot.ts";
import { localEmbedder } from "../supabase/functions/_shared/embeddings.ts";
import { INCOMPLETE_FILE } from "../supabase/functions/_shared/memories/tar.ts";
import { EXPORT_PAGE_ROWS } from "../supabase/functions/_shared/services/memory-export.ts";
import { userHeaders } from "./support/auth.ts";
import { testConfig, testDatabaseUrl } from "./support/config.ts";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, seedMemories, seedMemory, seedRelation, testSql } from "./support/seed.ts";

const sql = testSql();
const DAY = 86_400_000;
const NOW = new Date();
// A frozen clock, so predicted strengths are exact.
const api = memoryApi(sql, { clock: () => NOW });
const opts = { sanitizeOps: false, sanitizeResources: false };

Deno.test(
  { name: "explain shows the supersede chain both ways, relations with content, source and history", ...opts },
  async () => {
    const t = newTenant();
    const v1 = await seedMemory(sql, t, {
      content: "Node 16 in CI",
      namespace: "devai/project/web/notes",
      session_id: "sess-1",
    });
    const v2 = (await api("POST", `/memory/${v1.id}/correct`, {
      as: t,
      body: { content: "Node 18 in CI", session_id: "sess-2" },
    })).body.memory;
    const v3 =
      (await api("POST", `/memory/${v2.id}/correct`, { as: t, body: { content: "Node 22 in CI" } })).body.memory;
    const episode = await seedMemory(sql, t, {
      content: "Upgraded CI image",
      namespace: "devai/project/web/notes",
      memory_type: "episodic",
    });
    await seedRelation(sql, t, v2.id, episode.id, 0.8, "derived_from");

    const e = await api("GET", `/memory/${v2.id}/explain`, { as: t });
    assert.equal(e.status, 200);
    assert.equal(e.body.memory.id, v2.id);
    assert.deepEqual(e.body.supersedes.map((l: { depth: number; memory: { id: string } }) => [l.depth, l.memory.id]), [[
      1,
      v1.id,
    ]]);
    assert.deepEqual(
      e.body.superseded_by.map((l: { depth: number; memory: { id: string } }) => [l.depth, l.memory.id]),
      [[1, v3.id]],
    );
    assert.equal(e.body.current_id, v3.id);
    const rels = e.body.relations.map((
      r: { relation_type: string; direction: string; other: { id: string; content: string } },
    ) => `${r.relation_type}:${r.direction}:${r.other.content}`).sort();
    assert.deepEqual(rels, [
      "derived_from:outgoing:Upgraded CI image",
      "supersedes:incoming:Node 22 in CI",
      "supersedes:outgoing:Node 16 in CI",
    ]);
    assert.equal(e.body.source.session_id, "sess-2");
    assert.equal(e.body.source.source, "correction");
    assert.equal(e.body.source.actor, `user:${t}`);
    assert.deepEqual(e.body.source.derived_from, [episode.id]);
    assert.equal(e.body.history.by_event.ADD, 1);
    assert.equal(e.body.history.by_event.MERGE, 1);
    assert.equal(e.body.history.by_event.LINK, 2, "its supersedes edge to v1 and its derived_from edge");
    assert.equal(e.body.history.total, 4);
    assert.equal(e.body.decay.protected, true);
    assert.equal(e.body.decay.reason, "highest_priority");

    // From the oldest version: the whole chain forward, nothing behind.
    const first = await api("GET", `/memory/${v1.id}/explain`, { as: t });
    assert.deepEqual(first.body.superseded_by.map((l: { memory: { id: string } }) => l.memory.id), [v2.id, v3.id]);
    assert.deepEqual(first.body.supersedes, []);
    assert.equal(first.body.current_id, v3.id);
    const last = await api("GET", `/memory/${v3.id}/explain`, { as: t });
    assert.deepEqual(last.body.supersedes.map((l: { memory: { id: string } }) => l.memory.id), [v2.id, v1.id]);
    assert.equal((await api("GET", `/memory/${crypto.randomUUID()}/explain`, { as: t })).status, 404);
  },
);

Deno.test({ name: "explain predicts decay for an unprotected memory", ...opts }, async () => {
  const t = newTenant();
  const m = await seedMemory(sql, t, {
    content: "Staging URL is staging.example.com",
    namespace: "devai/global/x",
    strength: 0.8,
    last_accessed_at: new Date(NOW.getTime() - 10 * DAY),
  });
  const e = await api("GET", `/memory/${m.id}/explain`, { as: t });
  assert.equal(e.body.decay.protected, false);
  assert.ok(Math.abs(e.body.decay.predicted_strength - 0.8 * 0.95 ** 10) < 1e-6);
  const expectedDays = Math.floor(Math.log(0.05 / 0.8) / Math.log(0.95)) + 1 - 10; // whole days, as the nightly decay counts
  assert.ok(Math.abs(e.body.decay.days_until_prune - expectedDays) < 1e-6);
});

Deno.test({
  name: "weak lists the valid, active, unprotected memories that decay first, with days until prune",
  ...opts,
}, async () => {
  const t = newTenant();
  const ago = (days: number) => new Date(NOW.getTime() - days * DAY);
  const ns = "devai/global/x";
  const [fading, fresh, older] = await seedMemories(sql, t, [
    { content: "fading", namespace: ns, strength: 0.5, last_accessed_at: ago(30) },
    { content: "fresh", namespace: ns, strength: 1, last_accessed_at: ago(0) },
    { content: "older but strong", namespace: ns, strength: 1, last_accessed_at: ago(20) },
    { content: "pinned", namespace: ns, strength: 0.1, pinned: true, last_accessed_at: ago(90) },
    { content: "user stated", namespace: ns, strength: 0.1, priority: "highest", last_accessed_at: ago(90) },
    { content: "invalid", namespace: ns, strength: 0.1, is_valid: false, last_accessed_at: ago(90) },
    { content: "forgotten", namespace: ns, strength: 0.1, state: "soft_deleted", last_accessed_at: ago(90) },
  ]);
  const w = await api("GET", "/memory/weak?limit=10", { as: t });
  assert.equal(w.status, 200);
  assert.deepEqual(w.body.memories.map((x: { memory: { id: string } }) => x.memory.id), [
    fading!.id,
    older!.id,
    fresh!.id,
  ]);
  const top = w.body.memories[0];
  assert.ok(Math.abs(top.predicted_strength - 0.5 * 0.95 ** 30) < 1e-6);
  assert.ok(Math.abs(top.days_since_access - 30) < 1e-6);
  assert.equal(top.days_until_prune, Math.floor(Math.log(0.05 / 0.5) / Math.log(0.95)) + 1 - 30);
  assert.equal(w.body.prune_threshold, 0.05);
  const one = await api("GET", "/memory/weak?limit=1", { as: t });
  assert.equal(one.body.memories.length, 1);
  // Past the threshold already: 0 days left, never negative.
  const dead = await seedMemory(sql, t, {
    content: "long gone",
    namespace: ns,
    strength: 0.3,
    last_accessed_at: ago(400),
  });
  const again = await api("GET", "/memory/weak?limit=1", { as: t });
  assert.equal(again.body.memories[0].memory.id, dead.id);
  assert.equal(again.body.memories[0].days_until_prune, 0);
});

Deno.test(
  { name: "stats counts by type, namespace, state, validity, pinned, relations and history", ...opts },
  async () => {
    const t = newTenant();
    const [a, b] = await seedMemories(sql, t, [
      { content: "s1", namespace: "devai/project/p/notes", memory_type: "semantic", pinned: true },
      { content: "s2", namespace: "devai/project/p/notes", memory_type: "semantic" },
      { content: "e1", namespace: "devai/user/preferences", memory_type: "episodic", state: "soft_deleted" },
      { content: "p1", namespace: "devai/global/x", memory_type: "procedural", is_valid: false },
    ]);
    await seedRelation(sql, t, a!.id, b!.id, 0.5);
    const s = await api("GET", "/memory/stats?top_namespaces=2", { as: t });
    assert.equal(s.status, 200);
    assert.equal(s.body.total, 4);
    assert.deepEqual(s.body.by_memory_type, { semantic: 2, episodic: 1, procedural: 1 });
    assert.deepEqual(s.body.by_state, { active: 3, soft_deleted: 1 });
    assert.deepEqual(s.body.validity, { valid: 3, invalid: 1, superseded: 0 });
    assert.deepEqual(s.body.pinned, { pinned: 1, unpinned: 3 });
    assert.equal(s.body.namespaces.distinct, 3);
    assert.equal(s.body.namespaces.top.length, 2);
    assert.deepEqual(s.body.namespaces.top[0], { namespace: "devai/project/p/notes", count: 2 });
    assert.deepEqual(s.body.relations, { total: 1, by_type: { related_to: 1 } });
    assert.equal(s.body.history.by_event.ADD, 4);
    assert.equal(s.body.history.by_event.LINK, 1);
    assert.equal(s.body.history.total, 5);
  },
);

Deno.test(
  { name: "export json: every memory (soft-deleted flagged, no embeddings) + relations + history", ...opts },
  async () => {
    const t = newTenant();
    const [keep, gone] = await seedMemories(sql, t, [
      { content: "kept", namespace: "devai/global/x" },
      { content: "gone", namespace: "devai/global/x" },
    ]);
    await api("POST", `/memory/${gone!.id}/forget`, { as: t });
    await seedRelation(sql, t, keep!.id, gone!.id, 0.9);
    const e = await api("GET", "/memory/export", { as: t });
    assert.equal(e.status, 200);
    assert.equal(e.body.format, "json");
    assert.equal(e.body.tenant_id, t);
    assert.deepEqual(e.body.counts, { memories: 2, soft_deleted: 1, relations: 1, history: 4 });
    const byId = new Map(e.body.memories.map((m: { id: string }) => [m.id, m]));
    assert.equal((byId.get(gone!.id) as { soft_deleted: boolean }).soft_deleted, true);
    assert.equal((byId.get(gone!.id) as { state: string }).state, "soft_deleted");
    assert.equal((byId.get(keep!.id) as { soft_deleted: boolean }).soft_deleted, false);
    for (const m of e.body.memories) assert.ok(!("embedding" in m) && !("fts" in m));
    assert.deepEqual(e.body.history.map((h: { event: string }) => h.event).sort(), ["ADD", "ADD", "DELETE", "LINK"]);
  },
);

Deno.test(
  { name: "export markdown: one file per memory under <type>/<date>-<slug>.md with front matter", ...opts },
  async () => {
    const t = newTenant();
    const [a, , c] = await seedMemories(sql, t, [
      {
        content: "The API uses JWT tokens: 24h expiry",
        namespace: "devai/global/api",
        metadata: { keywords: ["api", "jwt"], category: "fact" },
      },
      { content: "The API uses JWT tokens; 24h expiry!", namespace: "devai/global/api" },
      {
        content: "Deployed v2.1",
        namespace: "devai/project/web/notes",
        memory_type: "episodic",
        state: "soft_deleted",
      },
    ]);
    const e = await api("GET", "/memory/export?format=markdown", { as: t });
    assert.equal(e.status, 200);
    assert.equal(e.body.format, "markdown");
    assert.equal(e.body.files.length, 3);
    const paths = e.body.files.map((f: { path: string }) => f.path);
    assert.equal(new Set(paths).size, 3, "same date + slug still gives distinct paths");
    const date = new Date().toISOString().slice(0, 10);
    for (const p of paths) assert.match(p, new RegExp(`^(semantic|episodic)/${date}-[a-z0-9-]+(-[0-9a-f]{8})?\\.md$`));
    const jwt = e.body.files.find((f: { content: string }) => f.content.includes(`id: ${a!.id}`));
    assert.ok(jwt, "file of the first memory");
    assert.match(jwt.path, /^semantic\/\d{4}-\d{2}-\d{2}-the-api-uses-jwt-tokens-24h-expiry(-[0-9a-f]{8})?\.md$/);
    assert.match(jwt.content, /^---\n/);
    assert.match(jwt.content, /\nnamespace: devai\/global\/api\n/);
    assert.match(jwt.content, /\nkeywords: \[api, jwt\]\n/);
    assert.match(jwt.content, /\ncategory: fact\n/);
    assert.match(jwt.content, /\ncreated_at: \d{4}-\d{2}-\d{2}T[\d:.]+Z\n/);
    assert.match(jwt.content, /\n---\n\nThe API uses JWT tokens: 24h expiry\n$/);
    const deleted = e.body.files.find((f: { content: string }) => f.content.includes(`id: ${c!.id}`));
    assert.match(deleted.path, /^episodic\//);
    assert.match(deleted.content, /\nstate: soft_deleted\n/);
    assert.match(deleted.content, /\npurge_at: /);
  },
);

Deno.test({
  name: "export markdown with Accept: application/x-tar: the same files as a tar archive tar -x unpacks",
  ...opts,
}, async () => {
  const t = newTenant();
  await seedMemories(sql, t, [
    { content: "Releases are tagged vX.Y.Z — never moved", namespace: "devai/global/release" },
    { content: "Deployed v2.1 after the freeze", namespace: "devai/project/web/notes", memory_type: "episodic" },
  ]);
  const asJson = await api("GET", "/memory/export?format=markdown", { as: t });
  const handler = createHandler({ sql, config: testConfig(), embedder: localEmbedder() });
  const res = await handler(
    new Request("http://local/memory/export?format=markdown", {
      headers: await userHeaders(t, { accept: "application/x-tar" }),
    }),
  );
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "application/x-tar");
  // Read to its end before the next export: a tenant runs one at a time (db-snapshot.ts).
  const archive = new Uint8Array(await res.arrayBuffer());
  // An archive of the JSON export does not exist: without format=markdown the answer says what to add
  // (it was JSON, which tar -x refuses as "not a tar archive"); a client that also takes JSON gets it.
  for (const query of ["", "?format=json"]) {
    const refused = await handler(
      new Request(`http://local/memory/export${query}`, {
        headers: await userHeaders(t, { accept: "application/x-tar" }),
      }),
    );
    assert.equal(refused.status, 400);
    const error = (await refused.json()).error;
    assert.equal(error.code, "invalid_request");
    assert.match(error.message, /add format=markdown/);
  }
  const either = await handler(
    new Request("http://local/memory/export", {
      headers: await userHeaders(t, { accept: "application/x-tar, application/json" }),
    }),
  );
  assert.equal(either.status, 200);
  assert.equal((await either.json()).format, "json");
  assert.match(
    res.headers.get("content-disposition") ?? "",
    /^attachment; filename="devai-memories-\d{4}-\d{2}-\d{2}\.tar"$/,
  );
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeFile(`${dir}/export.tar`, archive);
    const untar = await new Deno.Command("tar", { args: ["-xvf", "export.tar"], cwd: dir }).output();
    assert.ok(untar.success, new TextDecoder().decode(untar.stderr));
    const files = asJson.body.files as { path: string; content: string }[];
    assert.equal(files.length, 2, "a file per memory");
    assert.deepEqual(
      new TextDecoder().decode(untar.stdout).trim().split("\n"),
      files.map((f) => f.path),
      "the archive holds exactly these files",
    );
    for (const f of files) {
      assert.equal(await Deno.readTextFile(`${dir}/${f.path}`), f.content, f.path);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name: "export streams page by page: 1,200 memories, 600 relations and their history, each once, in order",
  ...opts,
}, async () => {
  const t = newTenant();
  const n = EXPORT_PAGE_ROWS * 2 + 200;
  const seeded = await seedMemories(
    sql,
    t,
    Array.from({ length: n }, (_, i) => ({
      // i and i + 600 say the same, a page or two apart: their Markdown paths must still differ.
      content: `export fact ${i % 600}`,
      namespace: "devai/project/web",
      state: i % 100 === 0 ? "soft_deleted" as const : "active" as const,
    })),
  );
  await sql`
    insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength)
    select ${t}::uuid, f, t, 'related_to', 0.5
      from unnest(${seeded.slice(0, 600).map((m) => m!.id)}::uuid[], ${
    seeded.slice(1, 601).map((m) => m!.id)
  }::uuid[]) as e(f, t)`;
  const handler = createHandler({ sql, config: testConfig(), embedder: localEmbedder() });
  const exportOf = async (format: string, accept = "application/json") =>
    await handler(
      new Request(`http://local/memory/export?format=${format}`, { headers: await userHeaders(t, { accept }) }),
    );

  // A write made while the export is read is in none of its arrays: tests/memory_export_snapshot.test.ts.
  const decoder = new TextDecoder();
  const res = await exportOf("json");
  assert.equal(res.status, 200);
  const reader = res.body!.getReader();
  const parts: Uint8Array[] = [];
  for (let r = await reader.read(); !r.done; r = await reader.read()) parts.push(r.value);
  const text = parts.map((p) => decoder.decode(p, { stream: true })).join("") + decoder.decode();
  const body = JSON.parse(text);
  assert.ok(parts.length > 3, `streamed in chunks: ${parts.length}`);
  const ids = body.memories.map((m: { id: string }) => m.id);
  assert.equal(new Set(ids).size, ids.length, "each memory once");
  assert.deepEqual(new Set(ids), new Set(seeded.map((m) => m!.id)), "every memory");
  const keys = body.memories.map((m: { created_at: string; id: string }) => `${m.created_at}|${m.id}`);
  assert.deepEqual(keys, [...keys].sort(), "in creation order");
  assert.deepEqual(body.counts, {
    memories: n,
    soft_deleted: n / 100,
    relations: 600,
    history: body.history.length,
  });
  assert.ok(body.history.length >= n, `a history row per memory at least: ${body.history.length}`);
  assert.equal(
    new Set(body.history.map((h: { id: string }) => h.id)).size,
    body.history.length,
    "each history row once",
  );
  assert.equal(new Set(body.relations.map((r: { id: string }) => r.id)).size, 600);

  // Markdown, as JSON and as a tar archive: a file per memory, paths unique across pages.
  const md = await (await exportOf("markdown")).json();
  assert.equal(md.files.length, n);
  assert.equal(new Set(md.files.map((f: { path: string }) => f.path)).size, n);
  const tar = new Uint8Array(await (await exportOf("markdown", "application/x-tar")).arrayBuffer());
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeFile(`${dir}/export.tar`, tar);
    const list = await new Deno.Command("tar", { args: ["-tf", "export.tar"], cwd: dir }).output();
    assert.ok(list.success, new TextDecoder().decode(list.stderr));
    assert.deepEqual(
      new TextDecoder().decode(list.stdout).trim().split("\n"),
      md.files.map((f: { path: string }) => f.path),
      "the same files, in the same order",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * An export whose pages after the first fail, read by a client to its end: the body it got, the
 * error it ended with and what was logged. Once the response is made (the first page read), the
 * export's copy goes (the database restarted and emptied it, the tenant's next export replaced it:
 * db-snapshot.ts): the next page that reads the database finds fewer rows than were copied, and
 * fails rather than end a partial export as a whole one.
 */
async function exportCutAfterFirstPage(t: string, query: string, accept = "application/json") {
  const pool = createSql(testDatabaseUrl(), { max: 2 });
  const handler = createHandler({ sql: pool, config: testConfig(), embedder: localEmbedder() });
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  const error = console.error;
  const logged: string[] = [];
  console.error = (line: string) => logged.push(line);
  try {
    const res = await handler(
      new Request(`http://local/memory/export${query}`, { headers: await userHeaders(t, { accept }) }),
    );
    assert.equal(res.status, 200, "the first page was read: the status is sent");
    const [gone] = await sql<{ n: number }[]>`
      with d as (delete from memory_private.export_rows where owner_id = ${t} returning 1)
      select count(*)::int as n from d`;
    assert.ok(gone!.n > 0, "the export's copy, waiting for the client");
    reader = res.body!.getReader();
    const parts: Uint8Array[] = [];
    const failure = await (async () => {
      for (let r = await reader.read(); !r.done; r = await reader.read()) parts.push(r.value);
    })().then(() => undefined, (err: unknown) => err);
    const body = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    parts.reduce((at, p) => (body.set(p, at), at + p.length), 0);
    return { body, failure, logged };
  } finally {
    console.error = error;
    await reader?.cancel().catch(() => {});
    await pool.end();
  }
}

/** The error of a page that found its copy gone (db-snapshot.ts). */
const copyGone = (err: unknown) => err instanceof SnapshotEndedError && /copy went/.test(err.message);

Deno.test({
  name: "export: a page that fails after the first was sent ends the body early, and the failure is logged",
  ...opts,
}, async () => {
  const t = newTenant();
  const [m] = await seedMemories(sql, t, [{ content: "Exports stream a page at a time", namespace: "devai/global" }]);
  // The next page that reads the database, the history's, fails.
  const { body, failure, logged } = await exportCutAfterFirstPage(t, "");
  assert.ok(copyGone(failure), `the body ends with the page's error, not cleanly: ${failure}`);
  const text = new TextDecoder().decode(body);
  assert.match(text, /^\{"tenant_id":.*"memories":\[\{.*\]$/, "the head and the memories: the first page");
  assert.ok(text.includes(m!.id));
  assert.throws(() => JSON.parse(text), SyntaxError, "what the client has is a truncated document");
  const aborts = logged.map((l) => JSON.parse(l)).filter((l) => l.msg === "export aborted after its first page");
  assert.equal(aborts.length, 1, logged.join("\n"));
  assert.equal(aborts[0].level, "error");
  assert.match(aborts[0].error, /the export's copy went while it was read \(history: 0 of 1\)/);
});

Deno.test({
  name: "export as a tar archive: a page that fails after the first ends the archive so that tar -x fails, " +
    "beside a file saying the archive is incomplete",
  ...opts,
}, async () => {
  // The archive was cut between two files, where a missing end reads as a complete archive: tar -x
  // extracted the first page's files and exited 0, a partial backup taken for a whole one.
  const t = newTenant();
  await seedMemories(
    sql,
    t,
    Array.from(
      { length: EXPORT_PAGE_ROWS + 1 },
      (_, i) => ({ content: `archived fact ${i}`, namespace: "devai/global" }),
    ),
  );
  const { body, failure } = await exportCutAfterFirstPage(t, "?format=markdown", "application/x-tar");
  assert.ok(copyGone(failure), `the body ends with the page's error: ${failure}`);
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeFile(`${dir}/export.tar`, body);
    await Deno.mkdir(`${dir}/out`);
    const extract = await new Deno.Command("tar", { args: ["-xf", "export.tar", "-C", "out"], cwd: dir }).output();
    assert.equal(extract.success, false, "tar -x fails on the archive of a failed export");
    assert.match(new TextDecoder().decode(extract.stderr), /Skipping to next header/);
    const extracted = [];
    for await (const f of Deno.readDir(`${dir}/out/semantic`)) extracted.push(f.name);
    assert.equal(extracted.length, EXPORT_PAGE_ROWS, "the first page's files are there");
    assert.equal(
      await Deno.readTextFile(`${dir}/out/${INCOMPLETE_FILE}`),
      `This archive is incomplete: the export failed after ${EXPORT_PAGE_ROWS} files. Export again.\n`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({ name: "close the pool", ...opts }, async () => {
  await sql.end();
});
