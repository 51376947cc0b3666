// memory-retrieve, retrieval mode, against real Postgres: ranking, scoping (incl. `_`/`%` in
// project names), threshold, exclusions, tenant isolation, reinforcement of injected memories
// only, the delta header, related bullets and the memory_events row.
import assert from "node:assert/strict";
import { createHandler } from "../supabase/functions/memory-retrieve/handler.ts";
import { type Embedder, localEmbedder } from "../supabase/functions/_shared/embeddings.ts";
import { serviceHeaders, userHeaders } from "./support/auth.ts";
import { testConfig } from "./support/config.ts";
import { callJson, dbTest } from "./support/http.ts";
import { newTenant, seedMemories, seedMemory, seedRelation, testSql } from "./support/seed.ts";
import { fixedEmbedder, vectorWithSimilarity } from "./support/vectors.ts";
import { countTokens } from "../supabase/functions/_shared/tokens.ts";
import { flushSearchWrites } from "../supabase/functions/_shared/retrieval/write-behind.ts";

const sql = testSql();
const config = testConfig();
const URL = "http://localhost/functions/v1/memory-retrieve";

async function retrieve(tenant: string, body: Record<string, unknown>, embedder: Embedder = fixedEmbedder()) {
  const handler = createHandler({ sql, config, embedder });
  return await callJson(handler, URL, { headers: await userHeaders(tenant), body });
}

const near = (a: number, b: number, eps = 1e-4) => Math.abs(a - b) < eps;

dbTest("vector mode ranks by similarity × strength (+ priority boost) and records one search event", async () => {
  const t = newTenant();
  const [a, b, c, d] = await seedMemories(sql, t, [
    {
      content: "alpha: sim 0.95, strength 0.5",
      namespace: "devai/project/taskforge/arch",
      embedding: vectorWithSimilarity(0.95, 1),
      strength: 0.5,
    },
    {
      content: "beta: sim 0.80, strength 1",
      namespace: "devai/project/taskforge/arch",
      embedding: vectorWithSimilarity(0.8, 2),
    },
    {
      content: "gamma: sim 0.90, strength 0.9",
      namespace: "devai/global/patterns",
      embedding: vectorWithSimilarity(0.9, 3),
      strength: 0.9,
    },
    {
      content: "delta: sim 0.79, user-stated",
      namespace: "devai/user/preferences",
      embedding: vectorWithSimilarity(0.79, 4),
      priority: "highest",
    },
  ]);
  const res = await retrieve(t, { message: "how does task-api auth work?", project: "taskforge", mode: "vector" });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual(res.body.memories.map((m: { id: string }) => m.id), [d!.id, c!.id, b!.id, a!.id]);
  assert.equal(res.body.search.mode, "vector");
  assert.ok(res.body.memories.every((m: { injected: boolean }) => m.injected));
  const scores = res.body.memories.map((m: { score: number }) => m.score);
  assert.deepEqual(scores, [...scores].sort((x, y) => y - x));
  assert.ok(near(res.body.memories[0].similarity, 0.79));
  assert.equal(res.body.truncated_count, 0);
  assert.equal(res.body.token_count, countTokens(res.body.block));
  assert.equal(res.body.embedding_model, config.embedding.model);
  assert.ok(res.body.block.startsWith("## Relevant Memories\n\n### Project Knowledge (taskforge)\n- beta"));
  assert.ok(res.body.block.includes("### User Preferences\n- delta"));
  assert.ok(res.body.block.includes("### General Knowledge\n- gamma"));

  // The event is written behind the answer (docs/operations.md#write-behind-reinforcement-and-search-events):
  // write what waits.
  await flushSearchWrites(sql);
  const events = await sql`select node, op, status, sim, meta from public.memory_events where owner_id = ${t}`;
  assert.equal(events.length, 1);
  assert.equal(events[0]!.node, "context");
  assert.equal(events[0]!.op, "search");
  assert.ok(near(events[0]!.sim, 0.95, 1e-3), `best similarity recorded, got ${events[0]!.sim}`);
  assert.equal(events[0]!.meta.injected, 4);
});

dbTest("scoping: global + this project + user only; `_` and `%` in project names never match lookalikes", async () => {
  const t = newTenant();
  const namespaces = [
    "devai/global/tools",
    "devai/user/preferences",
    "devai/project/task_forge/arch",
    "devai/project/taskxforge/arch",
    "devai/project/task_forge2/arch",
    "devai/project/100%_done/notes",
    "devai/project/100xxdone/notes",
    "devai/project/100%_done2/notes",
    "devai/globalx/tools",
    "devai/other/x",
    "other/global/tools",
  ];
  const seeded = await seedMemories(
    sql,
    t,
    namespaces.map((ns, i) => ({
      content: `memory in ${ns}`,
      namespace: ns,
      embedding: vectorWithSimilarity(0.9, i + 1),
    })),
  );
  const nsOf = (ids: string[]) => ids.map((id) => seeded.find((s) => s.id === id)!.namespace).sort();

  const r1 = await retrieve(t, { message: "q", project: "task_forge" });
  assert.equal(r1.status, 200);
  assert.deepEqual(nsOf(r1.body.memories.map((m: { id: string }) => m.id)), [
    "devai/global/tools",
    "devai/project/task_forge/arch",
    "devai/user/preferences",
  ]);

  const r2 = await retrieve(t, { message: "q", project: "100%_done" });
  assert.deepEqual(nsOf(r2.body.memories.map((m: { id: string }) => m.id)), [
    "devai/global/tools",
    "devai/project/100%_done/notes",
    "devai/user/preferences",
  ]);
  assert.ok(r2.body.block.includes("### Project Knowledge (100%_done)"));

  const r3 = await retrieve(t, { message: "q" });
  assert.deepEqual(nsOf(r3.body.memories.map((m: { id: string }) => m.id)), [
    "devai/global/tools",
    "devai/user/preferences",
  ]);
});

dbTest(
  "threshold: default per model, overridable: the best memory must reach it, others half of it; other embedding models never compared",
  async () => {
    const t = newTenant();
    const [low, mid, high] = await seedMemories(sql, t, [
      { content: "low 0.10", namespace: "devai/global/a", embedding: vectorWithSimilarity(0.1, 1) },
      { content: "mid 0.50", namespace: "devai/global/a", embedding: vectorWithSimilarity(0.5, 2) },
      { content: "high 0.90", namespace: "devai/global/a", embedding: vectorWithSimilarity(0.9, 3) },
      {
        content: "other model 0.99",
        namespace: "devai/global/a",
        embedding: vectorWithSimilarity(0.99, 4),
        embedding_model: "text-embedding-3-small",
      },
    ]);
    const byDefault = await retrieve(t, { message: "q" }); // local model threshold 0.45: companions from 0.225
    assert.deepEqual(byDefault.body.memories.map((m: { id: string }) => m.id), [high!.id, mid!.id]);
    const strict = await retrieve(t, { message: "q", threshold: 0.95 });
    assert.deepEqual(strict.body.memories, [], "the best memory is below the threshold: no answer at all");
    const raised = await retrieve(t, { message: "q", threshold: 0.8 });
    assert.deepEqual(
      raised.body.memories.map((m: { id: string }) => m.id),
      [high!.id, mid!.id],
      "0.9 answers; 0.5 comes with it (above 0.4)",
    );
    const loose = await retrieve(t, { message: "q", threshold: 0 });
    assert.deepEqual(loose.body.memories.map((m: { id: string }) => m.id), [high!.id, mid!.id, low!.id]);
    const topOne = await retrieve(t, { message: "q", threshold: 0, top_k: 1 });
    assert.deepEqual(topOne.body.memories.map((m: { id: string }) => m.id), [high!.id]);
  },
);

dbTest("soft-deleted, invalid and fully decayed memories are excluded", async () => {
  const t = newTenant();
  const [ok] = await seedMemories(sql, t, [
    { content: "active", namespace: "devai/global/a", embedding: vectorWithSimilarity(0.9, 1) },
    {
      content: "soft deleted",
      namespace: "devai/global/a",
      embedding: vectorWithSimilarity(0.95, 2),
      state: "soft_deleted",
    },
    { content: "invalid", namespace: "devai/global/a", embedding: vectorWithSimilarity(0.95, 3), is_valid: false },
    { content: "decayed", namespace: "devai/global/a", embedding: vectorWithSimilarity(0.95, 4), strength: 0.04 },
    { content: "no embedding", namespace: "devai/global/a", embedding: null },
  ]);
  const res = await retrieve(t, { message: "q" });
  assert.deepEqual(res.body.memories.map((m: { id: string }) => m.id), [ok!.id]);
});

dbTest("tenant isolation: another tenant's memories are never returned nor reinforced", async () => {
  const a = newTenant();
  const b = newTenant();
  const [mine] = await seedMemories(sql, a, [{
    content: "A's fact",
    namespace: "devai/global/a",
    embedding: vectorWithSimilarity(0.8, 1),
  }]);
  const [theirs] = await seedMemories(sql, b, [{
    content: "B's fact",
    namespace: "devai/global/a",
    embedding: vectorWithSimilarity(0.99, 2),
  }]);
  const res = await retrieve(a, { message: "q" });
  assert.deepEqual(res.body.memories.map((m: { id: string }) => m.id), [mine!.id]);
  assert.ok(!res.body.block.includes("B's fact"));
  // service_role acting for A sees the same.
  const handler = createHandler({ sql, config, embedder: fixedEmbedder() });
  const svc = await callJson(handler, URL, { headers: await serviceHeaders(a), body: { message: "q" } });
  assert.equal(svc.status, 200);
  assert.deepEqual(svc.body.memories.map((m: { id: string }) => m.id), [mine!.id]);
  await flushSearchWrites(sql);
  const counts = async () =>
    (await sql<{ id: string; n: number }[]>`
      select id, access_count as n from public.devai_memories where id in (${mine!.id}, ${theirs!.id})`)
      .map((r) => [r.id === mine!.id ? "A's" : "B's", r.n]).sort();
  // A's two retrievals reinforced A's memory (so a reinforcement of B's would show).
  assert.deepEqual(await counts(), [["A's", 2], ["B's", 0]]);
  // B's memory is there to find: B's own retrieval returns it.
  const forB = await retrieve(b, { message: "q" });
  assert.deepEqual(forB.body.memories.map((m: { id: string }) => m.id), [theirs!.id]);
});

dbTest("reinforcement: only injected memories; one that did not fit the budget is untouched", async () => {
  const t = newTenant();
  const old = new Date(Date.now() - 10 * 86400_000);
  const [first, big, third] = await seedMemories(sql, t, [
    {
      content: "first: short fact",
      namespace: "devai/global/a",
      embedding: vectorWithSimilarity(0.95, 1),
      strength: 0.5,
      last_accessed_at: old,
    },
    // Not the best (0.9 × 0.3): the best memory is shortened to fit rather than left out, others are skipped.
    {
      content: `big: ${"a very long memory that cannot fit ".repeat(40)}`,
      namespace: "devai/global/a",
      embedding: vectorWithSimilarity(0.9, 2),
      strength: 0.3,
      last_accessed_at: old,
    },
    {
      content: "third: short",
      namespace: "devai/global/a",
      embedding: vectorWithSimilarity(0.85, 3),
      strength: 1,
      last_accessed_at: old,
    },
  ]);
  const res = await retrieve(t, { message: "q", budget_tokens: 40 });
  assert.equal(res.status, 200);
  assert.ok(res.body.token_count <= 40);
  const injected = Object.fromEntries(
    res.body.memories.map((m: { id: string; injected: boolean }) => [m.id, m.injected]),
  );
  assert.deepEqual(injected, { [first!.id]: true, [big!.id]: false, [third!.id]: true });
  assert.equal(res.body.truncated_count, 1);
  assert.ok(res.body.block.endsWith("[truncated - 1 more memories available]"));
  await flushSearchWrites(sql);
  const rows = await sql<{ id: string; access_count: number; last_accessed_at: Date; strength: number }[]>`
    select id, access_count, last_accessed_at, strength from public.devai_memories where owner_id = ${t}`;
  const byId = new Map(rows.map((r) => [r.id, r]));
  assert.equal(byId.get(first!.id)!.access_count, 1);
  assert.ok(byId.get(first!.id)!.last_accessed_at > old);
  // Decayed strength would be base × 0.95^10 ≈ 0.30; reinforcement restores it above that.
  assert.ok(
    byId.get(first!.id)!.strength > 0.5 * 0.95 ** 10 + 0.05,
    `strength restored, got ${byId.get(first!.id)!.strength}`,
  );
  assert.equal(byId.get(third!.id)!.access_count, 1);
  assert.equal(byId.get(big!.id)!.access_count, 0);
  assert.equal(byId.get(big!.id)!.last_accessed_at.getTime(), old.getTime());
  // Reinforcement is not an edit: no history rows beyond the seed's ADDs.
  const [h] = await sql`select count(*)::int as n from public.memory_history where owner_id = ${t} and event <> 'ADD'`;
  assert.equal(h!.n, 0);
});

dbTest("budget: never exceeded for many budgets, truncation count matches", async () => {
  const t = newTenant();
  await seedMemories(
    sql,
    t,
    Array.from({ length: 20 }, (_, i) => ({
      content: `fact ${i}: ${"deployment detail ".repeat(1 + (i % 5))}`,
      namespace: i % 2 ? "devai/project/p1/arch" : "devai/global/patterns",
      memory_type: (i % 3 === 0 ? "procedural" : "semantic") as "procedural" | "semantic",
      embedding: vectorWithSimilarity(0.99 - i * 0.01, i + 1),
    })),
  );
  for (const budget of [1, 5, 10, 17, 30, 64, 100, 250, 2000]) {
    const res = await retrieve(t, { message: "q", project: "p1", budget_tokens: budget, top_k: 20 });
    assert.equal(res.status, 200);
    assert.ok(res.body.token_count <= budget, `budget ${budget}: ${res.body.token_count}`);
    assert.equal(res.body.token_count, countTokens(res.body.block));
    const injected = res.body.memories.filter((m: { injected: boolean }) => m.injected).length;
    assert.equal(res.body.truncated_count, 20 - injected);
    // A budget too small for the best memory's first words gets no block at all, not a heading
    // over "N more memories available".
    if (injected === 0) assert.equal(res.body.block, "", `budget ${budget}`);
    if (res.body.truncated_count > 0 && res.body.block) {
      assert.ok(res.body.block.endsWith(`[truncated - ${res.body.truncated_count} more memories available]`));
    }
  }
});

dbTest("budget: the top hit that alone does not fit is shown shortened (…), flagged, and leads the block", async () => {
  const t = newTenant();
  const [top, low] = await seedMemories(sql, t, [
    {
      content: `The release train: ${
        "every service deploys behind a feature flag and is verified on staging first. ".repeat(3)
      }`,
      namespace: "devai/global/a",
      embedding: vectorWithSimilarity(0.69, 1),
    },
    { content: "Flags are cleaned up monthly", namespace: "devai/global/a", embedding: vectorWithSimilarity(0.43, 2) },
  ]);
  for (const budget of [30, 40]) {
    const res = await retrieve(t, { message: "q", budget_tokens: budget, threshold: 0.3 });
    assert.equal(res.status, 200);
    assert.ok(res.body.token_count <= budget);
    const byId = new Map(res.body.memories.map((m: { id: string }) => [m.id, m]));
    assert.deepEqual(byId.get(top!.id), { ...byId.get(top!.id) as object, injected: true, shortened: true });
    // The top hit leads the block; the lower one only ever comes after it.
    assert.match(
      res.body.block,
      /^## Relevant Memories\n\n### General Knowledge\n- The release train: every service\b[^\n]*…(\n|$)/,
    );
    if ((byId.get(low!.id) as { injected: boolean }).injected) {
      assert.ok(res.body.block.endsWith("- Flags are cleaned up monthly"));
    }
  }
});

dbTest("delta header: up to 3 bullets of changes after since_revision; revision returned", async () => {
  const t = newTenant();
  for (let i = 1; i <= 5; i++) {
    await seedMemory(sql, t, {
      content: `change ${i}`,
      namespace: "devai/global/a",
      embedding: vectorWithSimilarity(0.01, i),
      metadata: { category: "tasks" },
      importance: 4,
    }, "thread-1");
  }
  await seedMemory(sql, t, {
    content: "other thread",
    namespace: "devai/global/a",
    embedding: vectorWithSimilarity(0.01, 9),
  }, "thread-2");

  const res = await retrieve(t, { message: "q", thread_id: "thread-1", since_revision: 2 });
  assert.equal(res.status, 200);
  assert.equal(res.body.revision, 5);
  assert.equal(
    res.body.block,
    [
      "## Relevant Memories",
      "",
      "Memory updates since rev 2:",
      "- +created: [Tasks] change 5 (imp=4)",
      "- +created: [Tasks] change 4 (imp=4)",
      "- +created: [Tasks] change 3 (imp=4)",
    ].join("\n"),
  );
  const one = await retrieve(t, { message: "q", thread_id: "thread-1", since_revision: 4 });
  assert.ok(one.body.block.includes("- +created: [Tasks] change 5"));
  assert.ok(!one.body.block.includes("change 4"));
  const upToDate = await retrieve(t, { message: "q", thread_id: "thread-1", since_revision: 5 });
  assert.equal(upToDate.body.block, "");
  const noSince = await retrieve(t, { message: "q", thread_id: "thread-1" });
  assert.equal(noSince.body.block, "");
  assert.equal(noSince.body.revision, 5);
  const unknownThread = await retrieve(t, { message: "q", thread_id: "never-seen", since_revision: 0 });
  assert.equal(unknownThread.body.revision, 0);
  assert.equal(unknownThread.body.block, "");
});

dbTest("related bullets: linked memories in scope appear under their anchor, never from another project", async () => {
  const t = newTenant();
  const [anchor, linked, elsewhere] = await seedMemories(sql, t, [
    { content: "task-api uses JWT auth", namespace: "devai/project/p1/arch", embedding: vectorWithSimilarity(0.9, 1) },
    {
      content: "tfapi_ keys for api-project-access",
      namespace: "devai/project/p1/arch",
      embedding: vectorWithSimilarity(0.0, 2),
    },
    { content: "secret of project p2", namespace: "devai/project/p2/arch", embedding: vectorWithSimilarity(0.0, 3) },
  ]);
  await seedRelation(sql, t, anchor!.id, linked!.id, 0.8);
  await seedRelation(sql, t, elsewhere!.id, anchor!.id, 0.9);
  // graph_depth 0: the linked memory is not a search result of its own, only a related bullet.
  const res = await retrieve(t, { message: "q", project: "p1", graph_depth: 0 });
  assert.equal(res.status, 200);
  assert.ok(
    res.body.block.includes("- task-api uses JWT auth\n  - related: tfapi_ keys for api-project-access"),
    res.body.block,
  );
  assert.ok(!res.body.block.includes("p2"));
  assert.deepEqual(res.body.related.map((r: { id: string }) => r.id), [linked!.id]);
});

dbTest("local embedder end to end: the relevant memory ranks first", async () => {
  const t = newTenant();
  await seedMemories(sql, t, [
    {
      content: "task-api uses JWT auth, api-project-access uses tfapi_ keys",
      namespace: "devai/project/taskforge/arch",
    },
    { content: "User prefers TypeScript, never use any type", namespace: "devai/user/preferences" },
    { content: "grep is faster than multiple file_read calls for searching", namespace: "devai/global/tools" },
  ]);
  const res = await retrieve(t, {
    message: "which auth does the task-api use? JWT?",
    project: "taskforge",
    project_context: "TaskForge task management API",
  }, localEmbedder());
  assert.equal(res.status, 200);
  assert.ok(res.body.memories.length >= 1);
  assert.match(res.body.memories[0].content, /JWT auth/);
});

dbTest("no match: empty block, still one search event", async () => {
  const t = newTenant();
  const res = await retrieve(t, { message: "q" });
  assert.equal(res.status, 200);
  assert.equal(res.body.block, "");
  assert.equal(res.body.token_count, 0);
  assert.deepEqual(res.body.memories, []);
  await flushSearchWrites(sql);
  const [e] = await sql`select count(*)::int as n, max(sim) as sim from public.memory_events where owner_id = ${t}`;
  assert.equal(e!.n, 1);
  assert.equal(e!.sim, null);
});

dbTest("close pool", async () => {
  await sql.end();
});
