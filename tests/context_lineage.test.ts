// Code lineage end to end (docs/context.md#code-lineage): memories record repo, branch, commit and
// files through the API and the write path; an unmerged branch's notes are never injected on main
// (assembly and retrieval), become project knowledge once merged; the branch checked out is
// preferred; a memory citing a deleted or renamed file is flagged stale instead of injected; and a
// model's compression forms are stored with the memories it writes.
import assert from "node:assert/strict";
import { createHandler as createExtractHandler } from "../supabase/functions/memory-extract/handler.ts";
import { contentDigest } from "../supabase/functions/_shared/context/compress.ts";
import { reply } from "./fake_openai.ts";
import { userHeaders } from "./support/auth.ts";
import { contextApi, MEMORY_URL, ns, seedLinked } from "./support/context.ts";
import { callJson, dbTest } from "./support/http.ts";
import { newTenant, seedRelation, testSql } from "./support/seed.ts";
import { createHandler as createMemoryHandler } from "../supabase/functions/memory/handler.ts";
import { createHandler as createRetrieveHandler } from "../supabase/functions/memory-retrieve/handler.ts";
import { testConfig } from "./support/config.ts";
import { localEmbedder } from "../supabase/functions/_shared/embeddings.ts";
import { drainAll, writeEnv } from "./write_helpers.ts";

const sql = testSql();
const api = contextApi(sql);
const memory = createMemoryHandler({ sql, config: testConfig(), embedder: localEmbedder() });
const retrieveHandler = createRetrieveHandler({ sql, config: testConfig(), embedder: localEmbedder() });

async function remember(tenant: string, body: Record<string, unknown>) {
  const res = await callJson(memory, `${MEMORY_URL}/remember`, { headers: await userHeaders(tenant), body });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.memory as { id: string; metadata: Record<string, unknown> };
}

const ids = (body: { memories: { id: string; tier: string }[] }) =>
  body.memories.filter((m) => m.tier !== "index").map((m) => m.id);

dbTest("remember records repo, branch, commit and files; assembly finds the memory by its file", async () => {
  const t = newTenant();
  const m = await remember(t, {
    content: "The rate limiter keeps one token bucket per API key in Redis.",
    project: "api",
    metadata: {
      category: "decisions",
      repo: "acme/api",
      branch: "main",
      commit: "9fceb02d0ae598e95dc970b74767f19372d61af8",
      files: ["./src/limits/bucket.ts"],
    },
  });
  assert.deepEqual(
    [m.metadata.repo, m.metadata.branch, m.metadata.commit, m.metadata.files],
    ["acme/api", "main", "9fceb02d0ae598e95dc970b74767f19372d61af8", ["src/limits/bucket.ts"]],
  );
  const bad = await callJson(memory, `${MEMORY_URL}/remember`, {
    headers: await userHeaders(t),
    body: { content: "x y z", metadata: { branch: "has space" } },
  });
  assert.equal(bad.status, 400);
  assert.deepEqual(bad.body.error.issues[0].path, ["metadata", "branch"]);
  // The content never names the file: the link comes from metadata.files.
  const res = await api.assemble(t, {
    project: "api",
    signals: { current_file: "src/limits/bucket.ts", repo: "acme/api" },
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const placed = res.body.memories.find((x: { id: string }) => x.id === m.id);
  assert.equal(placed.tier, "critical");
  assert.equal(placed.tag, "decision");
});

dbTest("an unmerged branch's note is not injected on main; after the merge it is project knowledge", async () => {
  const t = newTenant();
  const [wip, base] = await seedLinked(sql, t, [
    {
      content: "Work in progress: the checkout retries payment capture three times with jitter.",
      namespace: ns("shop"),
      metadata: { category: "decisions", branch: "feat/retry-capture", commit: "a1b2c3d4e5f6" },
    },
    {
      content: "The checkout captures payment once, after the order is confirmed.",
      namespace: ns("shop"),
      metadata: { category: "decisions", branch: "main" },
    },
  ]);
  const message = "how does checkout capture payment?";
  const onMain = await api.assemble(t, { project: "shop", message, signals: { branch: "main" } });
  assert.ok(!ids(onMain.body).includes(wip!.id), onMain.body.context);
  assert.ok(!onMain.body.context.includes("Work in progress"));
  assert.ok(ids(onMain.body).includes(base!.id));
  assert.deepEqual(onMain.body.excluded, [{ id: wip!.id, reason: "unmerged_branch", branch: "feat/retry-capture" }]);
  // No branch said: the default branch, the same answer.
  const unsaid = await api.assemble(t, { project: "shop", message });
  assert.ok(!ids(unsaid.body).includes(wip!.id));
  // Retrieval applies the same rule.
  const retrieved = await api.retrieve(t, {
    project: "shop",
    message,
    signals: { branch: "main" },
    threshold: 0,
    keyword_threshold: 0,
  });
  assert.equal(retrieved.status, 200, JSON.stringify(retrieved.body));
  assert.ok(!retrieved.body.memories.some((m: { id: string }) => m.id === wip!.id));
  assert.ok(!retrieved.body.block.includes("Work in progress"));
  assert.deepEqual(retrieved.body.excluded.map((e: { id: string }) => e.id), [wip!.id]);
  // An as_of answer is about the past, but lineage still holds (docs/retrieval.md#usage-and-code-lineage).
  const asOf = new Date().toISOString();
  const pastRetrieve = await api.retrieve(t, {
    project: "shop",
    message,
    signals: { branch: "main" },
    as_of: asOf,
    threshold: 0,
    keyword_threshold: 0,
  });
  assert.equal(pastRetrieve.status, 200, JSON.stringify(pastRetrieve.body));
  assert.ok(!pastRetrieve.body.block.includes("Work in progress"), pastRetrieve.body.block);
  assert.deepEqual(pastRetrieve.body.excluded.map((e: { id: string }) => e.id), [wip!.id]);
  const pastQuery = await callJson(retrieveHandler, "http://localhost/functions/v1/memory-retrieve/query", {
    headers: await userHeaders(t),
    body: {
      agent: "planner",
      query: message,
      project: "shop",
      categories: ["decisions"],
      return: "full",
      signals: { branch: "main" },
      as_of: asOf,
      threshold: 0,
    },
  });
  assert.equal(pastQuery.status, 200, JSON.stringify(pastQuery.body));
  const pastIds = pastQuery.body.results.map((r: { id: string }) => r.id);
  assert.ok(pastIds.includes(base!.id) && !pastIds.includes(wip!.id), JSON.stringify(pastQuery.body.results));

  // On its own branch it is preferred: the branch checked out ranks first.
  const onBranch = await api.assemble(t, { project: "shop", message, signals: { branch: "feat/retry-capture" } });
  const branchMem = onBranch.body.memories.find((m: { id: string }) => m.id === wip!.id);
  assert.equal(branchMem.lineage, "current_branch");
  assert.ok(onBranch.body.context.includes("Work in progress"));

  // Merged (the client says so by name, or by the commit in its history): project knowledge on main.
  for (const merged of [{ merged_branches: ["feat/retry-capture"] }, { ancestor_commits: ["a1b2c3d4e5f60718"] }]) {
    const after = await api.assemble(t, { project: "shop", message, signals: { branch: "main", ...merged } });
    const m = after.body.memories.find((x: { id: string }) => x.id === wip!.id);
    assert.ok(m && m.tier !== "index", JSON.stringify(merged));
    assert.equal(m.lineage, "merged");
    assert.deepEqual(after.body.excluded, []);
  }
});

dbTest("a memory citing a deleted or renamed file is flagged stale in the index, not injected as fact", async () => {
  const t = newTenant();
  const [deleted, renamed, fine] = await seedLinked(sql, t, [
    {
      content: "Legacy sessions are refreshed by src/auth/refresh.ts every ten minutes.",
      namespace: ns("web"),
      metadata: { category: "architecture" },
    },
    {
      content: "Session cookies are parsed in src/auth/cookies.ts with the signed-cookie helper.",
      namespace: ns("web"),
      metadata: { category: "architecture" },
    },
    {
      content: "Session cookies are HttpOnly and SameSite=Lax.",
      namespace: ns("web"),
      metadata: { category: "conventions", files: ["src/auth/policy.ts"] },
    },
  ]);
  const res = await api.assemble(t, {
    project: "web",
    message: "how are session cookies handled and refreshed?",
    signals: {
      deleted_files: ["src/auth/refresh.ts"],
      renamed_files: [{ from: "src/auth/cookies.ts", to: "src/http/cookies.ts" }],
    },
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const byId = new Map(res.body.memories.map((m: { id: string }) => [m.id, m]));
  assert.equal((byId.get(deleted!.id) as { tier: string }).tier, "index");
  assert.deepEqual((byId.get(renamed!.id) as { stale: unknown }).stale, {
    file: "src/auth/cookies.ts",
    reason: "renamed",
    to: "src/http/cookies.ts",
  });
  assert.notEqual((byId.get(fine!.id) as { tier: string }).tier, "index");
  assert.ok(!res.body.context.includes("every ten minutes"), res.body.context);
  const staleLine = res.body.context.split("\n").find((l: string) => l.startsWith("Stale, check before use: ")) ?? "";
  assert.ok(
    staleLine.includes("(src/auth/refresh.ts deleted)") &&
      staleLine.includes("(src/auth/cookies.ts → src/http/cookies.ts)"),
    res.body.context,
  );
  assert.deepEqual(
    res.body.excluded.map((e: { id: string; reason: string }) => [e.id, e.reason]).sort(),
    [[deleted!.id, "stale_file"], [renamed!.id, "stale_file"]].sort(),
  );
  // Retrieval leaves them out of its block too.
  const retrieved = await api.retrieve(t, {
    project: "web",
    message: "session cookies refreshed",
    signals: { deleted_files: ["src/auth/refresh.ts"] },
    threshold: 0,
    keyword_threshold: 0,
  });
  assert.ok(!retrieved.body.block.includes("every ten minutes"));
  // An as_of answer reads no usage rows (they describe today): the files a memory's metadata cites
  // still leave it out.
  const past = await api.retrieve(t, {
    project: "web",
    message: "session cookies HttpOnly SameSite",
    signals: { deleted_files: ["src/auth/policy.ts"] },
    as_of: new Date().toISOString(),
    threshold: 0,
    keyword_threshold: 0,
  });
  assert.equal(past.status, 200, JSON.stringify(past.body));
  assert.ok(!past.body.block.includes("HttpOnly"), past.body.block);
  assert.deepEqual(past.body.excluded.map((e: { id: string; reason: string }) => [e.id, e.reason]), [[
    fine!.id,
    "stale_file",
  ]]);
});

dbTest("a renamed file's new name is shown redacted: a token in it never reaches the context", async () => {
  const t = newTenant();
  const [refund] = await seedLinked(sql, t, [{
    content: "Refunds in src/pay/refund.ts go back to the original card.",
    namespace: ns("web"),
    metadata: { files: ["src/pay/refund.ts"] },
  }]);
  const pat = "ghp_Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2";
  const res = await api.assemble(t, {
    project: "web",
    message: "refunds",
    signals: { renamed_files: [{ from: "src/pay/refund.ts", to: `src/pay/${pat}.ts` }] },
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.ok(!JSON.stringify(res.body).includes(pat), JSON.stringify(res.body));
  assert.ok(res.body.context.includes("(src/pay/refund.ts → src/pay/[REDACTED:github_token].ts)"), res.body.context);
  assert.deepEqual(res.body.excluded, [{
    id: refund!.id,
    reason: "stale_file",
    stale: { file: "src/pay/refund.ts", reason: "renamed", to: "src/pay/[REDACTED:github_token].ts" },
  }]);
  await api.settle();
});

dbTest("extraction records the session's lineage and the model's compression forms with each memory", async () => {
  const env = await writeEnv();
  try {
    const t = newTenant();
    const content = "The orders service retries Kafka publishes with exponential backoff capped at thirty seconds.";
    env.fake.onChat(
      "What from this conversation would help you do a better job next time?",
      reply.json({
        stored: [{
          content,
          type: "semantic",
          namespace: "devai/project/orders/notes",
          source: "discovery",
          priority: "medium",
          importance: 3,
          files: ["internal/events/publish.go"],
          summary: "Kafka publishes retry with capped backoff.",
          compressed: "kafka: retry→backoff (≤30 s)",
          index_key: "kafka_retry",
        }],
      }),
    );
    const handler = createExtractHandler({ ...env.deps, kickWorker: () => Promise.resolve() });
    const res = await handler(
      new Request("http://localhost/functions/v1/memory-extract", {
        method: "POST",
        headers: await userHeaders(t),
        body: JSON.stringify({
          session_id: "s-lineage",
          project: "orders",
          lineage: { repo: "acme/orders", branch: "feat/outbox", commit: "ABCDEF1234567" },
          messages: [{ role: "user", content: "Why do publishes retry?" }, {
            role: "assistant",
            content: "They back off exponentially.",
          }],
        }),
      }),
    );
    assert.equal(res.status, 202, await res.clone().text());
    await drainAll(env.deps, t);
    const [row] = await env.sql<{ metadata: Record<string, unknown>; id: string }[]>`
      select id, metadata from public.devai_memories where owner_id = ${t} and content = ${content}`;
    assert.ok(row, "the model's memory was stored");
    assert.equal(row.metadata.branch, "feat/outbox");
    assert.equal(row.metadata.repo, "acme/orders");
    assert.equal(row.metadata.commit, "abcdef1234567");
    assert.deepEqual(row.metadata.files, ["internal/events/publish.go"]);
    assert.deepEqual(row.metadata.compression, {
      summary: "Kafka publishes retry with capped backoff.",
      compressed: "kafka: retry→backoff (≤30 s)",
      index: "kafka_retry",
      by: "llm",
      for: contentDigest(content),
    });
    const [link] = await env.sql`
      select e.canonical_name from public.memory_entity_links l join public.memory_entities e on e.id = l.entity_id
       where l.memory_id = ${row.id} and e.entity_type = 'file'`;
    assert.equal(link!.canonical_name, "internal/events/publish.go");
  } finally {
    await env.close();
  }
});

dbTest("a contradiction with another branch's unmerged note does not make the fact [unresolved] on main", async () => {
  const t = newTenant();
  const F = "src/pay/refund.ts";
  const [fact, wip] = await seedLinked(sql, t, [
    {
      content: "Refunds are issued within five business days.",
      namespace: ns("refunds"),
      metadata: { category: "decisions", files: [F] },
    },
    {
      content: "Refunds are issued the same day through instant payouts.",
      namespace: ns("refunds"),
      metadata: { category: "decisions", branch: "feat/instant", files: [F] },
    },
  ]);
  await seedRelation(sql, t, wip!.id, fact!.id, 0.9, "contradicts");
  const on = (signals: Record<string, unknown>) =>
    api.assemble(t, { project: "refunds", signals: { current_file: F, ...signals } });
  const main = await on({});
  assert.equal(main.status, 200, JSON.stringify(main.body));
  // Before: "- [unresolved] Refunds are issued within five business days.", disputed by a note
  // this branch does not have.
  assert.ok(
    main.body.context.includes("- [decision] Refunds are issued within five business days."),
    main.body.context,
  );
  assert.ok(!main.body.context.includes("[unresolved]") && !main.body.context.includes("instant"), main.body.context);
  assert.deepEqual(main.body.excluded.map((e: { id: string }) => e.id), [wip!.id]);
  const predicted = await api.predict(t, { project: "refunds", file_opened: F });
  assert.deepEqual(predicted.body.predicted_memories.map((p: { id: string; tag: string }) => [p.id, p.tag]), [[
    fact!.id,
    "decision",
  ]]);
  // Merged, both sides are facts here: one [unresolved] bullet with both.
  const merged = await on({ branch: "main", merged_branches: ["feat/instant"] });
  assert.ok(merged.body.context.includes("- [unresolved] "), merged.body.context);
  assert.ok(merged.body.context.includes("instant payouts"), merged.body.context);
});

dbTest("a memory found only as the other side of an unmerged note's contradiction is counted in omitted", async () => {
  const t = newTenant();
  // No signal finds the fact (no file, no search, a category no tier's background reads): only
  // the open contradiction does, and its other side is feat/instant's unmerged note.
  const [fact, wip] = await seedLinked(sql, t, [
    { content: "Refund payouts run nightly.", namespace: ns("payouts"), metadata: { category: "deployment" } },
    {
      content: "Refund payouts run instantly.",
      namespace: ns("payouts"),
      metadata: { category: "deployment", branch: "feat/instant" },
    },
  ]);
  await seedRelation(sql, t, wip!.id, fact!.id, 0.9, "contradicts");
  const res = await api.assemble(t, { project: "payouts" });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual(res.body.memories, []);
  assert.deepEqual(res.body.excluded.map((e: { id: string }) => e.id), [wip!.id]);
  // Before: 0, the fact in neither list although the assembly found it.
  assert.equal(res.body.omitted, 1);
  // Merged, the contradiction is shown with both sides: nothing left out.
  const merged = await api.assemble(t, { project: "payouts", signals: { merged_branches: ["feat/instant"] } });
  assert.deepEqual(merged.body.memories.map((m: { id: string }) => m.id).sort(), [fact!.id, wip!.id].sort());
  assert.deepEqual([merged.body.excluded, merged.body.omitted], [[], 0]);
});

dbTest("close the pool", async () => {
  await api.settle();
  await sql.end();
});
