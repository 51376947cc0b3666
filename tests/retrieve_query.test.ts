// memory-retrieve, memory.query mode (POST /memory-retrieve/query, seed 001 §5/§6/§6.1/§12):
// allowlists from the database (403 naming the category, 400 for one not configured, unknown agent), procedural gating,
// server-side filters, bullets vs full, budget, context 'all' categories.
import assert from "node:assert/strict";
import { createHandler } from "../supabase/functions/memory-retrieve/handler.ts";
import { createHandler as createMemoryHandler } from "../supabase/functions/memory/handler.ts";
import { countTokens } from "../supabase/functions/_shared/tokens.ts";
import { flushSearchWrites } from "../supabase/functions/_shared/retrieval/write-behind.ts";
import { userHeaders } from "./support/auth.ts";
import { testConfig } from "./support/config.ts";
import { callJson, dbTest } from "./support/http.ts";
import { newTenant, seedMemories, type SeedMemory, tenantWrites, testSql } from "./support/seed.ts";
import { fixedEmbedder, vectorWithSimilarity } from "./support/vectors.ts";

const sql = testSql();
const config = testConfig();
const URL = "http://localhost/functions/v1/memory-retrieve/query";

async function query(tenant: string, body: Record<string, unknown>, embedder = fixedEmbedder()) {
  const handler = createHandler({ sql, config, embedder });
  return await callJson(handler, URL, { headers: await userHeaders(tenant), body });
}

let axis = 1;
function m(content: string, category: string | null, over: Partial<SeedMemory> = {}): SeedMemory {
  return {
    content,
    namespace: "devai/global/notes",
    embedding: vectorWithSimilarity(0.9 - axis * 0.001, axis++),
    metadata: category ? { category, ...(over.metadata ?? {}) } : { ...(over.metadata ?? {}) },
    ...Object.fromEntries(Object.entries(over).filter(([k]) => k !== "metadata")),
  };
}

const ids = (res: { body: { results: { id: string }[] } }) => res.body.results.map((r) => r.id).sort();

dbTest("allowed categories only, bullets '[category] text'", async () => {
  const t = newTenant();
  const [task, goal, profile] = await seedMemories(sql, t, [
    m("ship the importer", "tasks"),
    m("v1 by September", "goals"),
    m("name is Ana", "profile"),
    m("no category at all", null),
  ]);
  const res = await query(t, { agent: "planner", query: "plan", categories: ["tasks"] });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual(res.body.results, [{ id: task!.id, category: "tasks", text: "[tasks] ship the importer" }]);
  const all = await query(t, { agent: "planner", query: "plan" });
  assert.deepEqual(ids(all), [task!.id, goal!.id].sort(), "default = every allowed category; uncategorised never");
  assert.ok(!all.body.results.some((r: { id: string }) => r.id === profile!.id));
});

dbTest("a disallowed category is a 403 naming it, and nothing is written", async () => {
  const t = newTenant();
  await seedMemories(sql, t, [m("name is Ana", "profile")]);
  const before = await tenantWrites(sql, t);
  const embedder = fixedEmbedder();
  const res = await query(t, { agent: "planner", query: "who", categories: ["tasks", "profile"] }, embedder);
  assert.equal(res.status, 403);
  assert.equal(res.body.error.code, "category_not_allowed");
  assert.match(res.body.error.message, /profile/);
  assert.doesNotMatch(res.body.error.message, /tasks/);
  const viaFilter = await query(t, { agent: "stylist", query: "who", filters: { category: "profile" } }, embedder);
  assert.equal(viaFilter.status, 403);
  assert.match(viaFilter.body.error.message, /profile/);
  assert.equal(embedder.calls, 0, "refused before the embedding call");
  assert.deepEqual(await tenantWrites(sql, t), before);
});

dbTest("a category no one configured is a 400 unknown_category naming the configured ones, as remember's", async () => {
  // A typo is no permission problem: it was a 403 "may not read category: profle", which sent the
  // user to the agent's allowlist, while remember and memory-dedup answered the same name 400.
  const t = newTenant();
  const before = await tenantWrites(sql, t);
  const embedder = fixedEmbedder();
  const typo = await query(t, { agent: "planner", query: "who", categories: ["tasks", "profle"] }, embedder);
  assert.equal(typo.status, 400, JSON.stringify(typo.body));
  assert.equal(typo.body.error.code, "unknown_category");
  assert.match(typo.body.error.message, /unknown category 'profle'; configured categories: .*\bprofile\b/);
  assert.deepEqual(typo.body.error.issues[0].path, ["categories", 1]);
  const viaFilter = await query(t, { agent: "planner", query: "who", filters: { category: "profle" } }, embedder);
  assert.equal(viaFilter.status, 400);
  assert.equal(viaFilter.body.error.code, "unknown_category");
  assert.deepEqual(viaFilter.body.error.issues[0].path, ["filters", "category"]);
  const remembered = await callJson(
    createMemoryHandler({ sql, config, embedder }),
    "http://localhost/functions/v1/memory/remember",
    { headers: await userHeaders(t), body: { content: "name is Ana", metadata: { category: "profle" } } },
  );
  assert.equal(remembered.body.error.code, typo.body.error.code, "the same name, the same answer");
  // A configured category outside the allowlist stays a 403.
  const refused = await query(t, { agent: "planner", query: "who", categories: ["profile"] }, embedder);
  assert.equal(refused.status, 403);
  assert.equal(refused.body.error.code, "category_not_allowed");
  assert.equal(embedder.calls, 0, "refused before the embedding call");
  assert.deepEqual(await tenantWrites(sql, t), before);
});

dbTest("unknown agent is a 403", async () => {
  const t = newTenant();
  const res = await query(t, { agent: "intruder", query: "anything" });
  assert.equal(res.status, 403);
  assert.equal(res.body.error.code, "unknown_agent");
  assert.deepEqual(await tenantWrites(sql, t), { events: 0, accessTotal: 0, history: 0, memories: 0 });
});

dbTest("procedural memories only for agents allowed 'procedural' (planner, executor)", async () => {
  const t = newTenant();
  const [proc, task] = await seedMemories(sql, t, [
    m("1. run migrations 2. deploy 3. activate", "tasks", { memory_type: "procedural" }),
    m("deploy the task-api", "tasks"),
  ]);
  const sup = await query(t, { agent: "supervisor", query: "deploy" });
  assert.deepEqual(ids(sup), [task!.id], "supervisor: tasks yes, procedural never (even with category tasks)");
  const supTasks = await query(t, { agent: "supervisor", query: "deploy", categories: ["tasks"] });
  assert.deepEqual(ids(supTasks), [task!.id]);
  const supProc = await query(t, { agent: "supervisor", query: "deploy", categories: ["procedural"] });
  assert.equal(supProc.status, 403);
  assert.match(supProc.body.error.message, /procedural/);
  const exec = await query(t, { agent: "executor", query: "deploy", categories: ["procedural"] });
  assert.deepEqual(exec.body.results, [{
    id: proc!.id,
    category: "procedural",
    text: "[procedural] 1. run migrations 2. deploy 3. activate",
  }]);
  const planner = await query(t, { agent: "planner", query: "deploy" });
  assert.deepEqual(ids(planner), [proc!.id, task!.id].sort());
});

dbTest("filters are applied in SQL: metadata keys, pinned, importance range, updated range", async () => {
  const t = newTenant();
  const day = 86400_000;
  const [a, b, c, d] = await seedMemories(sql, t, [
    m("a", "tasks", {
      metadata: { agent_id: "ag1", run_id: "r1", actor_id: "x1", user_id: "u1", role: "user" },
      importance: 1,
      pinned: true,
      updated_at: new Date(Date.now() - 30 * day),
    }),
    m("b", "tasks", {
      metadata: { agent_id: "ag2", run_id: "r1", actor_id: "x2", user_id: "u1", role: "assistant" },
      importance: 3,
      updated_at: new Date(Date.now() - 10 * day),
    }),
    m("c", "tasks", {
      metadata: { agent_id: "ag2", run_id: "r2", actor_id: "x2", user_id: "u2", role: "assistant" },
      importance: 5,
      updated_at: new Date(Date.now() - 1 * day),
    }),
    m("d", "goals", { metadata: { agent_id: "ag1" }, importance: 4 }),
  ]);
  const q = (filters: Record<string, unknown>, categories = ["tasks", "goals"]) =>
    query(t, { agent: "planner", query: "q", categories, filters, top_k: 50 });
  assert.deepEqual(ids(await q({ agent_id: "ag1" })), [a!.id, d!.id].sort());
  assert.deepEqual(ids(await q({ run_id: "r1" })), [a!.id, b!.id].sort());
  assert.deepEqual(ids(await q({ actor_id: "x2" })), [b!.id, c!.id].sort());
  assert.deepEqual(ids(await q({ user_id: "u2" })), [c!.id]);
  assert.deepEqual(ids(await q({ role: "user" })), [a!.id]);
  assert.deepEqual(ids(await q({ pinned: true })), [a!.id]);
  assert.deepEqual(ids(await q({ pinned: false })), [b!.id, c!.id, d!.id].sort());
  assert.deepEqual(ids(await q({ importance_min: 3, importance_max: 4 })), [b!.id, d!.id].sort());
  assert.deepEqual(
    ids(
      await q({
        updated_after: new Date(Date.now() - 20 * day).toISOString(),
        updated_before: new Date(Date.now() - 5 * day).toISOString(),
      }),
    ),
    [b!.id],
  );
  assert.deepEqual(ids(await q({ category: "goals" })), [d!.id]);
  assert.deepEqual(
    ids(await q({ agent_id: "ag1", updated_before: null, importance_min: null })),
    [a!.id, d!.id].sort(),
    "null = no filter",
  );
  assert.deepEqual(ids(await q({ agent_id: "nobody" })), []);
  // A value Postgres cannot hold is a 400 naming the filter (it was the database's error, naming none).
  const nul = await q({ user_id: "u1\u0000" });
  assert.equal(nul.status, 400);
  assert.deepEqual(nul.body.error.issues[0].path, ["filters", "user_id"], JSON.stringify(nul.body));
});

dbTest("return 'full' gives rows with metadata; bullets respect the budget exactly", async () => {
  const t = newTenant();
  await seedMemories(
    sql,
    t,
    Array.from(
      { length: 12 },
      (_, i) => m(`task number ${i}: ${"detail ".repeat(i + 1)}`, "tasks", { metadata: { agent_id: "ag" } }),
    ),
  );
  const full = await query(t, { agent: "planner", query: "q", categories: ["tasks"], return: "full", top_k: 2 });
  assert.equal(full.status, 200);
  assert.equal(full.body.results.length, 2);
  const r = full.body.results[0];
  assert.equal(r.category, "tasks");
  assert.equal(r.metadata.agent_id, "ag");
  for (
    const key of [
      "content",
      "memory_type",
      "namespace",
      "similarity",
      "strength",
      "score",
      "importance",
      "pinned",
      "created_at",
      "updated_at",
    ]
  ) {
    assert.ok(key in r, key);
  }
  for (const budget of [1, 5, 12, 40, 90]) {
    const res = await query(t, {
      agent: "planner",
      query: "q",
      categories: ["tasks"],
      top_k: 12,
      budget_tokens: budget,
    });
    assert.equal(res.status, 200);
    const text = res.body.results.map((x: { text: string }) => x.text).join("\n");
    assert.ok(countTokens(text) <= budget, `budget ${budget}`);
    assert.equal(res.body.token_count, countTokens(text));
    assert.equal(res.body.truncated_count, 12 - res.body.results.length);
  }
});

dbTest("threshold drops low-similarity results; context 'all' categories (profile) bypass it", async () => {
  const t = newTenant();
  const [hi, , prof] = await seedMemories(sql, t, [
    {
      content: "close",
      namespace: "devai/global/n",
      metadata: { category: "tasks" },
      embedding: vectorWithSimilarity(0.9, 1),
    },
    {
      content: "far",
      namespace: "devai/global/n",
      metadata: { category: "tasks" },
      embedding: vectorWithSimilarity(0.3, 2),
    },
    {
      content: "name is Ana",
      namespace: "devai/user/profile",
      metadata: { category: "profile" },
      embedding: vectorWithSimilarity(0.05, 3),
    },
  ]);
  const res = await query(t, { agent: "supervisor", query: "q", threshold: 0.65 });
  assert.equal(res.status, 200);
  assert.deepEqual(ids(res), [hi!.id, prof!.id].sort());
});

dbTest("query returns are reinforced and recorded; another tenant's memories never appear", async () => {
  const a = newTenant();
  const b = newTenant();
  const [mine] = await seedMemories(sql, a, [m("mine", "tasks")]);
  const [theirs] = await seedMemories(sql, b, [m("theirs", "tasks")]);
  const res = await query(a, { agent: "executor", query: "q", thread_id: "t-9" });
  assert.deepEqual(ids(res), [mine!.id]);
  await flushSearchWrites(sql);
  const [row] = await sql`select access_count from public.devai_memories where id = ${mine!.id}`;
  assert.equal(row!.access_count, 1);
  const events = await sql`select node, op, thread_id, meta from public.memory_events where owner_id = ${a}`;
  assert.equal(events.length, 1);
  assert.equal(events[0]!.thread_id, "t-9");
  assert.equal(events[0]!.meta.agent, "executor");
  // The control: B's memory is there to find, for B.
  assert.deepEqual(ids(await query(b, { agent: "executor", query: "q" })), [theirs!.id]);
});

dbTest("query: only the memories returned within budget are reinforced", async () => {
  const a = newTenant();
  const seeded = await seedMemories(sql, a, [m("short one", "tasks"), m("x ".repeat(400).trim(), "tasks")]);
  const res = await query(a, { agent: "executor", query: "q", budget_tokens: 10 });
  const returned = new Set(ids(res));
  await flushSearchWrites(sql);
  for (const s of seeded) {
    const [row] = await sql`select access_count from public.devai_memories where id = ${s!.id}`;
    assert.equal(row!.access_count, returned.has(s!.id) ? 1 : 0);
  }
  assert.ok(returned.size < seeded.length, "the budget left one out");
});

dbTest(
  "an empty answer says when memories without a category are in scope: memory.query never serves them",
  async () => {
    const t = newTenant();
    const noHint = await query(t, { agent: "coder", query: "how do we install packages" });
    assert.equal(noHint.status, 200, JSON.stringify(noHint.body));
    assert.deepEqual(noHint.body.results, []);
    assert.equal(noHint.body.hint, undefined, "nothing stored: nothing to explain");

    await seedMemories(sql, t, [m("Use pnpm to install packages", null)]);
    const empty = await query(t, { agent: "coder", query: "how do we install packages" });
    assert.deepEqual(empty.body.results, [], "a memory without a category is never served, whatever the query");
    assert.match(empty.body.hint, /without a category/);
    assert.match(empty.body.hint, /agent 'coder''s allowlist/);
    assert.match(empty.body.hint, /POST memory-retrieve/);

    const [cmd] = await seedMemories(sql, t, [m("pnpm install --frozen-lockfile in CI", "commands")]);
    const found = await query(t, { agent: "coder", query: "how do we install packages" });
    assert.deepEqual(ids(found), [cmd!.id]);
    assert.equal(found.body.hint, undefined, "an answer with results has no hint");
  },
);

dbTest("close pool", async () => {
  await sql.end();
});
