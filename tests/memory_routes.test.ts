// The memory function's write and read routes against real Postgres: remember, get, list, correct,
// forget, restore, pin/confirm/unpin and history, with the history rows the triggers write.
import assert from "node:assert/strict";
import { memoryApi } from "./support/memory-api.ts";
import { serviceHeaders } from "./support/auth.ts";
import { newTenant, seedMemories, seedMemory, tenantWrites, testSql } from "./support/seed.ts";
import { LOCAL_EMBEDDING_MODEL } from "../supabase/functions/_shared/env.ts";
import { dbNow } from "./support/as-of.ts";

const sql = testSql();
const api = memoryApi(sql);
const opts = { sanitizeOps: false, sanitizeResources: false };
const DAY = 86_400_000;

async function historyOf(
  id: string,
): Promise<{ event: string; actor: string; new_ref: string | null; meta: Record<string, unknown> }[]> {
  return await sql`select event, actor, new_ref, meta from public.memory_history where memory_id = ${id} order by ts, event`;
}

Deno.test(
  { name: "remember stores a user-stated, never-decaying memory with its embedding model (201)", ...opts },
  async () => {
    const t = newTenant();
    const r = await api("POST", "/memory/remember", {
      as: t,
      body: {
        content: "  Always use pnpm in this repo  ",
        importance: 4,
        metadata: { keywords: ["pnpm"], category: "conventions" },
        session_id: "s-1",
      },
    });
    assert.equal(r.status, 201);
    assert.equal(r.body.created, true);
    const m = r.body.memory;
    assert.equal(m.content, "Always use pnpm in this repo");
    assert.equal(m.namespace, "devai/user/preferences");
    assert.equal(m.memory_type, "semantic");
    assert.equal(m.priority, "highest");
    assert.equal(m.source, "user_stated");
    assert.equal(m.importance, 4);
    assert.equal(m.session_id, "s-1");
    assert.equal(m.embedding_model, LOCAL_EMBEDDING_MODEL);
    assert.deepEqual(m.metadata, { keywords: ["pnpm"], category: "conventions" });
    assert.equal(m.embedding, undefined, "embeddings are never returned");
    const [row] =
      await sql`select owner_id, embedding is not null as has_vector from public.devai_memories where id = ${m.id}`;
    assert.equal(row!.owner_id, t);
    assert.equal(row!.has_vector, true);
    const h = await historyOf(m.id);
    assert.deepEqual(h.map((e) => e.event), ["ADD"]);
    assert.equal(h[0]!.actor, `user:${t}`);
  },
);

Deno.test(
  { name: "remember builds the project namespace and honours an explicit one and the thread", ...opts },
  async () => {
    const t = newTenant();
    const a = await api("POST", "/memory/remember", {
      as: t,
      body: { content: "Tests run with deno", project: "task_forge" },
    });
    assert.equal(a.status, 201);
    assert.equal(a.body.memory.namespace, "devai/project/task_forge/notes");
    const b = await api("POST", "/memory/remember", {
      as: t,
      body: {
        content: "Use snake_case for SQL",
        namespace: "devai/global/style",
        memory_type: "procedural",
        thread_id: "thread-7",
      },
    });
    assert.equal(b.status, 201);
    assert.equal(b.body.memory.namespace, "devai/global/style");
    assert.equal(b.body.memory.memory_type, "procedural");
    const [rev] =
      await sql`select revision from public.memory_thread_revisions where owner_id = ${t} and thread_id = 'thread-7'`;
    assert.equal(Number(rev!.revision), 1);
  },
);

Deno.test(
  { name: "remember of an exact duplicate (case/whitespace-insensitive) is a 200 no-op", ...opts },
  async () => {
    const t = newTenant();
    const first = await api("POST", "/memory/remember", { as: t, body: { content: "The API uses JWT tokens" } });
    assert.equal(first.status, 201);
    const before = await tenantWrites(sql, t);
    const again = await api("POST", "/memory/remember", {
      as: t,
      body: { content: "the api   uses JWT tokens", namespace: "devai/global/x" },
    });
    assert.equal(again.status, 200);
    assert.equal(again.body.created, false);
    assert.equal(again.body.memory.id, first.body.memory.id);
    assert.deepEqual(await tenantWrites(sql, t), before);
    // Another tenant's identical text is not a duplicate.
    const other = await api("POST", "/memory/remember", {
      as: newTenant(),
      body: { content: "The API uses JWT tokens" },
    });
    assert.equal(other.status, 201);
  },
);

Deno.test(
  { name: "remember after the original was forgotten or superseded creates a new memory", ...opts },
  async () => {
    const t = newTenant();
    const namespace = "devai/user/preferences";
    const [active, forgotten, superseded] = await seedMemories(sql, t, [
      { content: "Cache TTL is 60 seconds", namespace },
      { content: "Port is 5432", namespace, state: "soft_deleted" },
      { content: "Logs go to stdout", namespace, is_valid: false },
    ]);
    const remember = (content: string) => api("POST", "/memory/remember", { as: t, body: { content } });
    // The control: a seeded memory that is still active is found as the duplicate it is.
    const again = await remember(active!.content);
    assert.deepEqual([again.status, again.body.created, again.body.memory.id], [200, false, active!.id]);
    for (const old of [forgotten!, superseded!]) {
      const r = await remember(old.content);
      assert.deepEqual([r.status, r.body.created], [201, true], old.content);
      assert.notEqual(r.body.memory.id, old.id);
      assert.equal(r.body.memory.state, "active");
    }
  },
);

Deno.test({ name: "concurrent remembers of the same text store it once", ...opts }, async () => {
  const t = newTenant();
  const results = await Promise.all(
    Array.from(
      { length: 5 },
      () => api("POST", "/memory/remember", { as: t, body: { content: "Deploys happen on Fridays" } }),
    ),
  );
  assert.equal(results.filter((r) => r.status === 201).length, 1);
  assert.equal(results.filter((r) => r.status === 200).length, 4);
  assert.equal(new Set(results.map((r) => r.body.memory.id)).size, 1);
  assert.equal((await tenantWrites(sql, t)).memories, 1);
});

Deno.test({ name: "service_role acting for a tenant writes that tenant's memory", ...opts }, async () => {
  const t = newTenant();
  const r = await api("POST", "/memory/remember", {
    headers: await serviceHeaders(t),
    body: { content: "Service wrote this" },
  });
  assert.equal(r.status, 201);
  const [row] = await sql`select owner_id from public.devai_memories where id = ${r.body.memory.id}`;
  assert.equal(row!.owner_id, t);
  const [h] = await sql`select actor from public.memory_history where memory_id = ${r.body.memory.id}`;
  assert.equal(h!.actor, "service_role");
  const got = await api("GET", `/memory/${r.body.memory.id}`, { as: t });
  assert.equal(got.status, 200);
});

Deno.test({ name: "get returns one memory, 404 for an unknown id, 400 for a malformed one", ...opts }, async () => {
  const t = newTenant();
  const m = await seedMemory(sql, t, {
    content: "Uses Postgres 17",
    namespace: "devai/global/db",
    state: "soft_deleted",
  });
  const r = await api("GET", `/memory/${m.id}`, { as: t });
  assert.equal(r.status, 200);
  assert.equal(r.body.memory.id, m.id);
  assert.equal(r.body.memory.state, "soft_deleted");
  assert.ok(r.body.memory.purge_at);
  const missing = await api("GET", `/memory/${crypto.randomUUID()}`, { as: t });
  assert.equal(missing.status, 404);
  assert.equal(missing.body.error.code, "not_found");
  const bad = await api("GET", "/memory/not-a-uuid", { as: t });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error.code, "invalid_id");
  // A mistyped fixed route reads as an id: the message quotes it and says it may be a misspelt route.
  const typo = await api("GET", "/memory/stat", { as: t });
  assert.equal(typo.body.error.code, "invalid_id");
  assert.match(
    typo.body.error.message,
    /^memory id must be a uuid, not "stat" \(in GET \/memory\/stat\); a misspelt route .* lands here too/,
  );
});

Deno.test(
  { name: "the gateway prefix /functions/v1/memory is accepted; unknown routes are 404", ...opts },
  async () => {
    const t = newTenant();
    const m = await seedMemory(sql, t, { content: "Prefixed path", namespace: "devai/global/x" });
    const r = await api("GET", `/functions/v1/memory/${m.id}`, { as: t });
    assert.equal(r.status, 200);
    const unknown = await api("GET", `/memory/${m.id}/nothing-here`, { as: t });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error.code, "route_not_found");
  },
);

Deno.test(
  { name: "a fixed path with the wrong method is 405 with Allow, never read as a memory id", ...opts },
  async () => {
    const t = newTenant();
    for (
      const [method, path, allow] of [
        ["GET", "/memory/remember", "POST"],
        ["POST", "/memory/stats", "GET"],
        ["DELETE", "/memory/weak", "GET"],
        ["POST", "/memory/export", "GET"],
        ["GET", "/memory/episodes", "POST"],
        ["POST", "/memory", "GET"],
        ["DELETE", "/memory", "GET"],
        ["PUT", "/memory/entities", "GET"],
        ["POST", "/memory/agents", "GET"],
        ["POST", "/memory/categories", "GET"],
      ]
    ) {
      const r = await api(method!, path!, { as: t, body: method === "GET" ? undefined : {} });
      assert.equal(r.status, 405, `${method} ${path}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error.code, "method_not_allowed");
      assert.equal(r.headers.get("allow"), allow);
    }
    // The right methods still work.
    assert.equal((await api("GET", "/memory/stats", { as: t })).status, 200);
    assert.equal((await api("GET", "/memory", { as: t })).status, 200);
    // A name or id path with another method is still no route, answered as every other 404 is.
    for (
      const [method, path] of [
        ["DELETE", "/memory/agents/planner"],
        ["GET", "/memory/agents/planner/extra"],
        ["POST", "/memory/categories/decisions"],
        ["DELETE", "/memory/00000000-0000-4000-8000-000000000000/nothing-here"],
      ]
    ) {
      const r = await api(method!, path!, { as: t, body: method === "GET" ? undefined : {} });
      assert.equal(r.status, 404, `${method} ${path}`);
      assert.equal(r.body.error.code, "route_not_found");
      assert.equal(r.body.error.message, `no route for ${method} ${path}; the routes are in the README's API table`);
    }
  },
);

Deno.test(
  { name: "a GET route without parameters refuses any: an explain as_of is a 400, not today's answer", ...opts },
  async () => {
    const t = newTenant();
    const m = await seedMemory(sql, t, { content: "deploys go out on Fridays", namespace: "devai/project/web" });
    const ok = await api("GET", `/memory/${m.id}/explain`, { as: t });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    for (
      const path of [
        `/memory/${m.id}/explain?as_of=0001-01-01T00:00:00Z`,
        `/memory/entities/${crypto.randomUUID()}?limit=abc`,
        "/memory/agent-tokens?foo=bar",
        "/memory/agents?x=1",
        "/memory/categories?x=1",
      ]
    ) {
      const r = await api("GET", path, { as: t });
      assert.equal(r.status, 400, `${path}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error.code, "invalid_request", path);
    }
    // A parameter named like an Object property is an unknown one, not one "given more than once".
    const inherited = await api("GET", "/memory?constructor=1", { as: t });
    assert.equal(inherited.status, 400);
    assert.equal(inherited.body.error.issues[0].code, "unrecognized_keys", JSON.stringify(inherited.body));
  },
);

Deno.test(
  { name: "list filters and pages with a keyset cursor, newest first, without gaps or repeats", ...opts },
  async () => {
    const t = newTenant();
    const rows = await seedMemories(
      sql,
      t,
      Array.from({ length: 7 }, (_, i) => ({
        content: `project fact ${i}`,
        namespace: i % 2 === 0 ? "devai/project/task_forge" : "devai/project/task_forge2",
        importance: (i % 5) + 1,
        pinned: i === 3,
        metadata: i < 2 ? { category: "decisions" } : {},
      })),
    );
    // Same created_at for every row seeded in one transaction: the id breaks the tie.
    await seedMemory(sql, t, { content: "forgotten", namespace: "devai/project/task_forge", state: "soft_deleted" });
    await seedMemory(sql, t, { content: "invalid", namespace: "devai/project/task_forge", is_valid: false });

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const path = `/memory?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
      const r = await api("GET", path, { as: t });
      assert.equal(r.status, 200);
      assert.ok(r.body.memories.length <= 3);
      seen.push(...r.body.memories.map((m: { id: string }) => m.id));
      cursor = r.body.next_cursor;
      pages++;
    } while (cursor && pages < 10);
    assert.equal(pages, 3);
    assert.equal(seen.length, 8, "7 seeded + the invalid one; the forgotten one is hidden by default");
    assert.equal(new Set(seen).size, 8);

    const ids = (r: { body: { memories: { id: string }[] } }) => r.body.memories.map((m) => m.id).sort();
    const scoped = await api("GET", "/memory?namespace_prefix=devai/project/task_forge&is_valid=true", { as: t });
    assert.deepEqual(
      ids(scoped),
      rows.filter((_, i) => i % 2 === 0).map((m) => m.id).sort(),
      "task_forge must not match task_forge2",
    );
    const pinned = await api("GET", "/memory?pinned=true", { as: t });
    assert.deepEqual(ids(pinned), [rows[3]!.id]);
    const important = await api("GET", "/memory?importance_min=4&is_valid=true", { as: t });
    assert.deepEqual(ids(important), rows.filter((r) => (r.importance ?? 0) >= 4).map((m) => m.id).sort());
    const category = await api("GET", "/memory?category=decisions", { as: t });
    assert.deepEqual(ids(category), [rows[0]!.id, rows[1]!.id].sort());
    // A category that is not configured is no empty page: the 400 remember answers for it.
    const unknown = await api("GET", "/memory?category=decision", { as: t });
    assert.equal(unknown.status, 400, JSON.stringify(unknown.body));
    assert.equal(unknown.body.error.code, "unknown_category");
    assert.match(unknown.body.error.message, /^unknown category 'decision'; configured categories: .*decisions/);
    assert.deepEqual(unknown.body.error.issues.map((i: { path: string[] }) => i.path), [["category"]]);
    const forgotten = await api("GET", "/memory?state=soft_deleted", { as: t });
    assert.equal(forgotten.body.memories.length, 1);
    assert.equal(forgotten.body.memories[0].content, "forgotten");
    const all = await api("GET", "/memory?state=all&limit=100", { as: t });
    assert.equal(all.body.memories.length, 9);
    assert.equal(all.body.next_cursor, null);
    const byType = await api("GET", "/memory?memory_type=procedural", { as: t });
    assert.equal(byType.body.memories.length, 0);
  },
);

Deno.test({ name: "list rejects a forged cursor and a limit above 100", ...opts }, async () => {
  const t = newTenant();
  const forged = await api("GET", "/memory?cursor=bm90LWEtY3Vyc29y", { as: t });
  assert.equal(forged.status, 400);
  assert.equal(forged.body.error.code, "invalid_cursor");
  const big = await api("GET", "/memory?limit=101", { as: t });
  assert.equal(big.status, 400);
  assert.equal(big.body.error.issues[0].path[0], "limit");
});

Deno.test(
  { name: "list: a history's cursor is a 400 naming the cursor, not a position in the list", ...opts },
  async () => {
    const t = newTenant();
    const memories = [];
    for (const content of ["oldest fact", "middle fact", "newest fact"]) {
      memories.push((await api("POST", "/memory/remember", { as: t, body: { content } })).body.memory);
      await dbNow(sql); // the list is newest first: each is created later, even on PGlite's millisecond clock
    }
    const m = memories[2]!;
    for (const action of ["pin", "unpin"]) await api("POST", `/memory/${m.id}/${action}`, { as: t });
    const history = await api("GET", `/memory/${m.id}/history?limit=1`, { as: t });
    assert.ok(history.body.next_cursor);
    // The same cursor as encoded before cursors named their listing ([ts, id]): its id is a history row's.
    const [, ts, id] = JSON.parse(atob(history.body.next_cursor.replace(/-/g, "+").replace(/_/g, "/")));
    for (const cursor of [history.body.next_cursor, btoa(JSON.stringify([ts, id]))]) {
      const r = await api("GET", `/memory?cursor=${encodeURIComponent(cursor)}`, { as: t });
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.equal(r.body.error.code, "invalid_cursor");
      assert.equal(
        r.body.error.message,
        "cursor is not a next_cursor of GET memory: it is a next_cursor of GET memory/{id}/history",
      );
      assert.deepEqual(r.body.error.issues, [{
        path: ["cursor"],
        message: "the next_cursor of the previous GET memory page, unchanged (opaque text)",
      }]);
    }
    // The list's own cursors page on, also one encoded before (an unmarked [ts, id] of a memory).
    const first = await api("GET", "/memory?limit=1", { as: t });
    const [, lts, lid] = JSON.parse(atob(first.body.next_cursor.replace(/-/g, "+").replace(/_/g, "/")));
    for (const cursor of [first.body.next_cursor, btoa(JSON.stringify([lts, lid]))]) {
      const next = await api("GET", `/memory?limit=5&cursor=${encodeURIComponent(cursor)}`, { as: t });
      assert.equal(next.status, 200, JSON.stringify(next.body));
      assert.deepEqual(next.body.memories.map((x: { content: string }) => x.content), ["middle fact", "oldest fact"]);
    }
  },
);

Deno.test({
  name: "correct creates a superseding memory: MERGE on the old, ADD + LINK on the new, a supersedes relation",
  ...opts,
}, async () => {
  const t = newTenant();
  const old = await seedMemory(sql, t, {
    content: "Use npm for installs",
    namespace: "devai/project/web/notes",
    memory_type: "procedural",
    importance: 4,
    metadata: { keywords: ["npm"] },
  });
  const r = await api("POST", `/memory/${old.id}/correct`, {
    as: t,
    body: { content: "Use pnpm for installs", reason: "switched package manager", session_id: "sess-9" },
  });
  assert.equal(r.status, 201);
  const created = r.body.memory;
  assert.equal(created.content, "Use pnpm for installs");
  assert.equal(created.namespace, "devai/project/web/notes");
  assert.equal(created.memory_type, "procedural");
  assert.equal(created.importance, 4);
  assert.equal(created.priority, "highest");
  assert.equal(created.source, "correction");
  assert.equal(created.session_id, "sess-9");
  assert.equal(created.metadata.correction_reason, "switched package manager");
  assert.equal(r.body.superseded.id, old.id);
  assert.equal(r.body.superseded.superseded_by, created.id);
  assert.equal(r.body.superseded.is_valid, false);

  const oldHistory = await historyOf(old.id);
  assert.deepEqual(oldHistory.map((e) => e.event), ["ADD", "MERGE"]);
  assert.equal(oldHistory[1]!.new_ref, created.id);
  assert.equal(oldHistory[1]!.actor, `user:${t}`);
  const newHistory = await historyOf(created.id);
  assert.deepEqual(newHistory.map((e) => e.event).sort(), ["ADD", "LINK"]);
  // Both rows carry the request's instant; the listing gives them in the order they were written,
  // newest first, whole or a row a page (before, by their random ids: ADD above LINK half the time).
  const listed = await api("GET", `/memory/${created.id}/history`, { as: t });
  assert.deepEqual(listed.body.history.map((e: { event: string }) => e.event), ["LINK", "ADD"]);
  const paged: string[] = [];
  for (let cursor = ""; paged.length < 3;) {
    const page = await api("GET", `/memory/${created.id}/history?limit=1${cursor}`, { as: t });
    assert.equal(page.status, 200, JSON.stringify(page.body));
    paged.push(...page.body.history.map((e: { event: string }) => e.event));
    if (!page.body.next_cursor) break;
    cursor = `&cursor=${encodeURIComponent(page.body.next_cursor)}`;
  }
  assert.deepEqual(paged, ["LINK", "ADD"]);
  const [rel] = await sql`select from_id, to_id, relation_type from public.memory_relations where owner_id = ${t}`;
  assert.deepEqual({ ...rel }, { from_id: created.id, to_id: old.id, relation_type: "supersedes" });

  // The old one cannot be corrected again; its replacement can.
  const before = await tenantWrites(sql, t);
  const again = await api("POST", `/memory/${old.id}/correct`, { as: t, body: { content: "Use yarn" } });
  assert.equal(again.status, 409);
  assert.equal(again.body.error.code, "already_superseded");
  assert.deepEqual(await tenantWrites(sql, t), before);
  const chained = await api("POST", `/memory/${created.id}/correct`, {
    as: t,
    body: { content: "Use bun for installs" },
  });
  assert.equal(chained.status, 201);
  // It keeps the metadata it replaces, but the earlier correction's reason was not its reason.
  assert.deepEqual(chained.body.memory.metadata, { keywords: ["npm"] });
});

Deno.test(
  {
    name:
      "correct: 404 unknown, 409 for invalid or forgotten memories, 422 for unchanged content (spacing aside; case is a change)",
    ...opts,
  },
  async () => {
    const t = newTenant();
    const invalid = await seedMemory(sql, t, { content: "stale", namespace: "devai/global/x", is_valid: false });
    const forgotten = await seedMemory(sql, t, { content: "gone", namespace: "devai/global/x", state: "soft_deleted" });
    const live = await seedMemory(sql, t, { content: "Lint with biome", namespace: "devai/global/x" });
    const before = await tenantWrites(sql, t);
    assert.equal(
      (await api("POST", `/memory/${crypto.randomUUID()}/correct`, { as: t, body: { content: "x" } })).status,
      404,
    );
    assert.equal(
      (await api("POST", `/memory/${invalid.id}/correct`, { as: t, body: { content: "fresh" } })).status,
      409,
    );
    assert.equal(
      (await api("POST", `/memory/${forgotten.id}/correct`, { as: t, body: { content: "back" } })).status,
      409,
    );
    const same = await api("POST", `/memory/${live.id}/correct`, { as: t, body: { content: "Lint  with   biome" } });
    assert.equal(same.status, 422);
    assert.equal(same.body.error.code, "unchanged_content");
    assert.deepEqual(await tenantWrites(sql, t), before);
    // Letter case is a correction: paths, env values and identifiers are case-sensitive.
    const cased = await api("POST", `/memory/${live.id}/correct`, { as: t, body: { content: "Lint with Biome" } });
    assert.equal(cased.status, 201);
    assert.equal(cased.body.memory.content, "Lint with Biome");
    assert.equal(cased.body.superseded.superseded_by, cased.body.memory.id);
  },
);

Deno.test({
  name: "forget soft-deletes with purge_at = now + 30 days (DELETE), restore brings it back (RESTORE)",
  ...opts,
}, async () => {
  const t = newTenant();
  const m = await seedMemory(sql, t, { content: "Old build command", namespace: "devai/global/x", strength: 0.03 });
  const start = Date.now();
  const f = await api("POST", `/memory/${m.id}/forget`, { as: t, body: { reason: "obsolete" } });
  assert.equal(f.status, 200);
  assert.equal(f.body.changed, true);
  assert.equal(f.body.memory.state, "soft_deleted");
  assert.equal(f.body.memory.metadata.forget_reason, "obsolete");
  const purgeAt = new Date(f.body.memory.purge_at).getTime();
  assert.ok(
    Math.abs(purgeAt - (start + 30 * DAY)) < 60_000,
    `purge_at ${f.body.memory.purge_at} is not ~30 days ahead`,
  );
  // Forgetting twice is idempotent and writes nothing.
  const before = await tenantWrites(sql, t);
  const twice = await api("POST", `/memory/${m.id}/forget`, { as: t });
  assert.equal(twice.status, 200);
  assert.equal(twice.body.changed, false);
  assert.deepEqual(await tenantWrites(sql, t), before);

  const r = await api("POST", `/memory/${m.id}/restore`, { as: t });
  assert.equal(r.status, 200);
  assert.equal(r.body.changed, true);
  assert.equal(r.body.memory.state, "active");
  assert.equal(r.body.memory.purge_at, null);
  assert.equal(r.body.memory.is_valid, true);
  assert.equal(r.body.memory.strength, 0.5, "restore_memory: greatest(decayed strength, restore_strength)");
  assert.equal(r.body.memory.metadata.forget_reason, undefined);
  assert.deepEqual((await historyOf(m.id)).map((e) => e.event), ["ADD", "DELETE", "RESTORE"]);
  const noop = await api("POST", `/memory/${m.id}/restore`, { as: t });
  assert.equal(noop.body.changed, false);
});

Deno.test({ name: "restore re-validates an invalidated memory but never a superseded one", ...opts }, async () => {
  const t = newTenant();
  const invalid = await seedMemory(sql, t, {
    content: "dropped by dedup",
    namespace: "devai/global/x",
    is_valid: false,
  });
  const r = await api("POST", `/memory/${invalid.id}/restore`, { as: t });
  assert.equal(r.status, 200);
  assert.equal(r.body.memory.is_valid, true);

  const old = await seedMemory(sql, t, { content: "Node 18", namespace: "devai/global/x" });
  const c = await api("POST", `/memory/${old.id}/correct`, { as: t, body: { content: "Node 22" } });
  assert.equal(c.status, 201);
  const refused = await api("POST", `/memory/${old.id}/restore`, { as: t });
  assert.equal(refused.status, 409);
  // Forgotten then restored, a past version stays a past version.
  assert.equal((await api("POST", `/memory/${old.id}/forget`, { as: t })).status, 200);
  const back = await api("POST", `/memory/${old.id}/restore`, { as: t });
  assert.equal(back.status, 200);
  assert.equal(back.body.memory.state, "active");
  assert.equal(back.body.memory.is_valid, false);
  assert.equal(back.body.memory.superseded_by, c.body.memory.id);
});

Deno.test(
  {
    name:
      "pin and confirm protect a memory (strength 1.0), unpin releases it; history PIN, UNPIN, and CONFIRM for each confirmation",
    ...opts,
  },
  async () => {
    const t = newTenant();
    const m = await seedMemory(sql, t, {
      content: "CI runs on GitHub Actions",
      namespace: "devai/global/ci",
      strength: 0.4,
    });
    const p = await api("POST", `/memory/${m.id}/pin`, { as: t });
    assert.equal(p.status, 200);
    assert.equal(p.body.changed, true);
    assert.equal(p.body.memory.pinned, true);
    assert.equal(p.body.memory.strength, 1);
    assert.equal(p.body.memory.base_strength, 1);
    const p2 = await api("POST", `/memory/${m.id}/pin`, { as: t });
    assert.equal(p2.body.changed, false, "a pin of a pinned memory changes nothing");
    // The user's word that a pinned fact still holds is recorded (history CONFIRM, the change
    // log's 'updated' the delta shows), though the memory itself stays as it was.
    const c = await api("POST", `/memory/${m.id}/confirm`, { as: t, body: {} });
    assert.equal(c.status, 200);
    assert.equal(c.body.changed, true, "a confirmation is recorded, pinned already or not");
    assert.deepEqual([c.body.memory.pinned, c.body.memory.content], [true, "CI runs on GitHub Actions"]);
    assert.deepEqual((await historyOf(m.id)).map((e) => e.event), ["ADD", "PIN", "CONFIRM"]);
    const [logged] = await sql<{ event: string; history_event: string }[]>`
      select event, meta ->> 'history_event' as history_event from public.memory_change_log
       where memory_id = ${m.id} order by revision desc limit 1`;
    assert.deepEqual({ ...logged }, { event: "updated", history_event: "CONFIRM" });
    const u = await api("POST", `/memory/${m.id}/unpin`, { as: t });
    assert.equal(u.body.memory.pinned, false);
    const u2 = await api("POST", `/memory/${m.id}/unpin`, { as: t });
    assert.equal(u2.body.changed, false);
    const c2 = await api("POST", `/memory/${m.id}/confirm`, { as: t });
    assert.equal(c2.body.changed, true);
    assert.deepEqual((await historyOf(m.id)).map((e) => e.event), ["ADD", "PIN", "CONFIRM", "UNPIN", "CONFIRM"]);

    const gone = await seedMemory(sql, t, {
      content: "forgotten fact",
      namespace: "devai/global/ci",
      state: "soft_deleted",
    });
    const refused = await api("POST", `/memory/${gone.id}/pin`, { as: t });
    assert.equal(refused.status, 409);
    assert.equal(refused.body.error.code, "memory_not_active");
  },
);

Deno.test(
  { name: "history lists a memory's events newest first, with a limit; survives a purge", ...opts },
  async () => {
    const t = newTenant();
    const m = await seedMemory(sql, t, { content: "Timeline fact", namespace: "devai/global/x" });
    await api("POST", `/memory/${m.id}/pin`, { as: t });
    await api("POST", `/memory/${m.id}/forget`, { as: t });
    await api("POST", `/memory/${m.id}/restore`, { as: t });
    const h = await api("GET", `/memory/${m.id}/history`, { as: t });
    assert.equal(h.status, 200);
    assert.deepEqual(h.body.history.map((e: { event: string }) => e.event), ["RESTORE", "DELETE", "PIN", "ADD"]);
    assert.equal(h.body.purged, false);
    const limited = await api("GET", `/memory/${m.id}/history?limit=2`, { as: t });
    assert.equal(limited.body.history.length, 2);
    assert.equal((await api("GET", `/memory/${m.id}/history?limit=0`, { as: t })).status, 400);

    // The purge job deletes rows as a privileged role; the audit trail stays readable.
    await sql`delete from public.devai_memories where id = ${m.id}`;
    const after = await api("GET", `/memory/${m.id}/history`, { as: t });
    assert.equal(after.status, 200);
    assert.equal(after.body.purged, true);
    assert.equal(after.body.history[0].event, "PURGE");
    assert.equal((await api("GET", `/memory/${crypto.randomUUID()}/history`, { as: t })).status, 404);
  },
);

Deno.test(
  {
    name: "history: a change another transaction stamps in the instant of the memory's last one comes after it",
    ...opts,
  },
  async () => {
    // PGlite's clock counts milliseconds: two requests in one millisecond begin at one now(). The
    // second's row is stamped here with the instant of the first's, as such a request's is.
    const t = newTenant();
    const m = await seedMemory(sql, t, {
      content: "A fact changed twice in a millisecond",
      namespace: "devai/global/x",
    });
    await api("POST", `/memory/${m.id}/pin`, { as: t });
    await sql`
      insert into public.memory_history (owner_id, memory_id, event, actor, meta, ts)
      select owner_id, memory_id, 'UNPIN', 'user', jsonb_build_object('pinned', false), max(ts)
        from public.memory_history where memory_id = ${m.id} group by owner_id, memory_id`;
    const h = await api("GET", `/memory/${m.id}/history`, { as: t });
    assert.deepEqual(h.body.history.map((e: { event: string }) => e.event), ["UNPIN", "PIN", "ADD"]);
    const [unpin, pin] = await sql<{ ts: string }[]>`
      select ts::text from public.memory_history where memory_id = ${m.id} order by ts desc, id desc limit 2`;
    assert.ok(unpin!.ts > pin!.ts, `${unpin!.ts} after ${pin!.ts}`);
  },
);

Deno.test(
  { name: "history pages with a cursor: every row once, newest first, rows of one transaction split", ...opts },
  async () => {
    const t = newTenant();
    const m = await seedMemory(sql, t, { content: "A much-edited fact", namespace: "devai/global/x" });
    // 250 rows in one transaction (one ts: the order they were written in, seq, orders them), then
    // more in later ones: more than one page of the largest limit (200).
    await sql`
      insert into public.memory_history (owner_id, memory_id, event, actor, meta)
      select ${t}, ${m.id}, 'CONFIRM', 'user', jsonb_build_object('n', n) from generate_series(1, 250) n`;
    for (let i = 0; i < 3; i++) await api("POST", `/memory/${m.id}/${i % 2 ? "unpin" : "pin"}`, { as: t });
    const all = (await sql`select id from public.memory_history where memory_id = ${m.id} order by ts desc, seq desc`)
      .map((r) => r.id as string);
    assert.equal(all.length, 254);

    const first = await api("GET", `/memory/${m.id}/history`, { as: t });
    assert.deepEqual(Object.keys(first.body).sort(), ["history", "memory_id", "next_cursor", "purged"]);
    assert.equal(first.body.history.length, 50, "the default limit, as before");
    for (const limit of [7, 200]) {
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: { status: number; body: { history: { id: string }[]; next_cursor: string | null } } = await api(
          "GET",
          `/memory/${m.id}/history?limit=${limit}${cursor ? `&cursor=${cursor}` : ""}`,
          { as: t },
        );
        assert.equal(page.status, 200, JSON.stringify(page.body));
        assert.ok(page.body.history.length <= limit);
        seen.push(...page.body.history.map((e) => e.id));
        cursor = page.body.next_cursor;
      } while (cursor);
      assert.deepEqual(seen, all, `limit ${limit}: every row once, newest first`);
    }
    const last = await api("GET", `/memory/${m.id}/history?limit=254`, { as: t });
    assert.equal(last.status, 400, "limit is at most 200");
    const whole = await api("GET", `/memory/${m.id}/history?limit=200&cursor=${first.body.next_cursor}`, { as: t });
    assert.deepEqual(whole.body.history.map((e: { id: string }) => e.id), all.slice(50, 250));

    for (const forged of ["not-a-cursor", btoa(JSON.stringify(["2026-02-30T00:00:00.000000", m.id]))]) {
      const r = await api("GET", `/memory/${m.id}/history?cursor=${forged}`, { as: t });
      assert.deepEqual([r.status, r.body.error.code], [400, "invalid_cursor"], forged);
    }
    // Cursors the API returned for another listing: another memory's history (its rows are all
    // newer, so the page came back empty, as if this memory had no history), and the list's.
    const other = await seedMemory(sql, t, { content: "Another fact", namespace: "devai/global/x" });
    const list = await api("GET", "/memory?limit=1", { as: t });
    assert.ok(list.body.next_cursor);
    for (
      const [memory, cursor, what] of [
        [other.id, first.body.next_cursor, "another memory's history cursor"],
        [m.id, list.body.next_cursor, "the list's cursor"],
      ]
    ) {
      const r = await api("GET", `/memory/${memory}/history?cursor=${cursor}`, { as: t });
      assert.deepEqual([r.status, r.body.error?.code], [400, "invalid_cursor"], what);
    }
  },
);

Deno.test(
  { name: "forget's purge date follows purge_grace_days in public.memory_settings, like the TTL job", ...opts },
  async () => {
    const t = newTenant();
    const m = await seedMemory(sql, t, { content: "grace check", namespace: "devai/global/x" });
    const [before] = await sql<
      { value: string }[]
    >`select value::text from public.memory_settings where name = 'purge_grace_days'`;
    await sql`update public.memory_settings set value = 7.5 where name = 'purge_grace_days'`;
    try {
      const f = await api("POST", `/memory/${m.id}/forget`, { as: t });
      assert.equal(f.status, 200);
      const expected = Date.now() + 7.5 * DAY;
      assert.ok(Math.abs(new Date(f.body.memory.purge_at).getTime() - expected) < 60_000, f.body.memory.purge_at);
    } finally {
      await sql`update public.memory_settings set value = ${before!.value}::numeric where name = 'purge_grace_days'`;
    }
  },
);

Deno.test({
  name: "remember: a duplicate in another project does not hide it; a learned duplicate becomes user-stated",
  ...opts,
}, async () => {
  const t = newTenant();
  const a = await api("POST", "/memory/remember", {
    as: t,
    body: { content: "Deploys use pnpm run deploy.", project: "alpha" },
  });
  const b = await api("POST", "/memory/remember", {
    as: t,
    body: { content: "Deploys use pnpm run deploy.", project: "beta" },
  });
  assert.equal(b.status, 201);
  assert.notEqual(b.body.memory.id, a.body.memory.id);
  assert.equal(b.body.memory.namespace, "devai/project/beta/notes");
  const learned = await seedMemory(sql, t, {
    content: "The build uses make.",
    namespace: "devai/user/preferences",
    priority: "low",
    source: "discovery",
    strength: 0.4,
  });
  const r = await api("POST", "/memory/remember", { as: t, body: { content: "The build uses make." } });
  assert.equal(r.body.created, false);
  assert.equal(r.body.memory.id, learned.id);
  assert.equal(r.body.memory.priority, "highest");
  assert.equal(r.body.memory.source, "user_stated");
  assert.equal(r.body.memory.strength, 1);
});

Deno.test({
  name: "optional-body routes accept a POST with no body at all (curl -X POST: empty stream, no length, no type)",
  ...opts,
}, async () => {
  const t = newTenant();
  const m = await seedMemory(sql, t, { content: "bodyless forget", namespace: "devai/global/x" });
  const { userHeaders } = await import("./support/auth.ts");
  const headers = new Headers(await userHeaders(t));
  headers.delete("content-type");
  const empty = () => new ReadableStream({ start: (c) => c.close() });
  for (const route of ["forget", "restore", "pin", "unpin"]) {
    const { createHandler } = await import("../supabase/functions/memory/handler.ts");
    const { testConfig } = await import("./support/config.ts");
    const { localEmbedder } = await import("../supabase/functions/_shared/embeddings.ts");
    const handler = createHandler({ sql, config: testConfig(), embedder: localEmbedder() });
    const res = await handler(
      new Request(`http://local/memory/${m.id}/${route}`, { method: "POST", headers, body: empty() }),
    );
    assert.equal(res.status, 200, `${route}: ${await res.text()}`);
  }
});

Deno.test({ name: "close the pool", ...opts }, async () => {
  await sql.end();
});
