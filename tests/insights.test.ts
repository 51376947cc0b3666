// Theory-of-Mind insights with the fake LLM: the prompt's inputs are bounded (5 activity items, 3
// new facts, 1,000 characters of conversation), the call is temperature 0 with at most 220
// tokens, only valid insights are stored (type insight, category relationship_dynamic, importance
// 2), at most one run a day, nothing stored from an empty answer, skipped without an LLM; and
// retrieval finds an insight, below a fact that answers as well.
import assert from "node:assert/strict";
import { createHandler as createRetrieve } from "../supabase/functions/memory-retrieve/handler.ts";
import { withTenant } from "../supabase/functions/_shared/db.ts";
import { INSIGHT_MARK } from "../supabase/functions/_shared/insights.ts";
import { enqueueJob } from "../supabase/functions/_shared/jobs.ts";
import { reply } from "./fake_openai.ts";
import { userHeaders } from "./support/auth.ts";
import { LOCAL_EMBEDDING } from "./support/consolidation.ts";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, seedMemories } from "./support/seed.ts";
import { drainAll, writeEnv } from "./write_helpers.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

async function queueInsight(env: Awaited<ReturnType<typeof writeEnv>>, t: string, key: string) {
  await withTenant(
    env.sql,
    { tenantId: t, actor: "test" },
    (tx) => enqueueJob(tx, { ownerId: t, kind: "insight", idempotencyKey: key, payload: { night: "2026-11-24" } }),
  );
  return await drainAll(env.deps, t, "test-worker", 5, ["insight"]);
}

async function activeTenant(env: Awaited<ReturnType<typeof writeEnv>>): Promise<string> {
  const t = newTenant();
  await seedMemories(
    env.sql,
    t,
    Array.from({ length: 7 }, (_, i) => ({
      content: `The shop project decided rule number ${i} about its release checklist.`,
      namespace: "devai/project/shop/notes",
    })),
  );
  const turns = Array.from({ length: 12 }, (_, i) => ({
    role: i % 2 ? "assistant" : "user",
    content: `${i % 2 ? "Done" : "Please"}: message ${i} ${"about the flaky checkout test ".repeat(4)}`,
  }));
  const r = await memoryApi(env.sql)("POST", "/memory/episodes", {
    as: t,
    body: { session_id: "s1", project: "shop", messages: turns },
  });
  assert.equal(r.status, 201);
  return t;
}

Deno.test({
  name: "insights: bounded inputs, temperature 0 and 220 tokens; only valid insights stored, as type insight",
  ...opts,
}, async () => {
  const env = await writeEnv({ config: { embedding: LOCAL_EMBEDDING } as never });
  try {
    const t = await activeTenant(env);
    env.fake.onChat(
      INSIGHT_MARK,
      reply.json({
        insights: [
          {
            summary: "The user trusts the agent more when it runs the tests before claiming a fix.",
            tags: ["trust", "testing"],
          },
          { summary: "You should always run the tests first.", tags: [] },
          { summary: "The user " + "keeps asking about flaky tests and ".repeat(10) + "nothing else.", tags: [] },
        ],
      }),
    );
    const report = await queueInsight(env, t, "insight:1");
    assert.deepEqual([report.done, report.dead], [1, 0], JSON.stringify(report.jobs));

    const req = env.fake.chatRequests()[0]!.body;
    assert.equal(req.temperature, 0);
    assert.equal(req.max_tokens, 220);
    const prompt = String(req.messages.at(-1).content);
    const section = (title: string) =>
      (prompt.split(`${title}:\n`)[1] ?? "").split("\n\n")[0]!.split("\n").filter((l: string) => l.startsWith("- "));
    assert.equal(section("Recent activity").length, 5);
    assert.equal(section("New facts").length, 3);
    const conversation = prompt.split("Recent conversation:\n")[1]!;
    assert.ok(conversation.length <= 1000 && conversation.length > 500, `${conversation.length} characters`);
    assert.ok(conversation.includes("message 11"), "the latest turns");

    const stored = await env.sql<
      {
        content: string;
        memory_type: string;
        importance: number;
        pinned: boolean;
        metadata: { category: string; tags: string[] };
        namespace: string;
      }[]
    >`
      select content, memory_type, importance, pinned, metadata, namespace from public.devai_memories where owner_id = ${t} and memory_type = 'insight'`;
    assert.equal(stored.length, 1);
    assert.deepEqual([
      stored[0]!.content,
      stored[0]!.importance,
      stored[0]!.pinned,
      stored[0]!.metadata.category,
      stored[0]!.namespace,
    ], [
      "The user trusts the agent more when it runs the tests before claiming a fix.",
      2,
      false,
      "relationship_dynamic",
      "devai/user/insights",
    ]);
    const [job] = await env.sql`select result from public.memory_jobs where owner_id = ${t} and kind = 'insight'`;
    assert.deepEqual([job!.result.insights, job!.result.rejected], [1, 2]);

    // At most one run a day: the next one is skipped without a model call.
    await queueInsight(env, t, "insight:2");
    assert.equal(env.fake.chatRequests().length, 1);
    const [second] = await env
      .sql`select result from public.memory_jobs where owner_id = ${t} and idempotency_key = 'insight:2'`;
    assert.match(second!.result.skipped, /insight_interval_hours/);

    // Retrieval finds it, ranked below a fact that answers as well.
    const retrieve = createRetrieve({ sql: env.sql, config: env.config, embedder: env.embedder });
    const res = await retrieve(
      new Request("http://local/functions/v1/memory-retrieve", {
        method: "POST",
        headers: await userHeaders(t),
        body: JSON.stringify({ message: "does the user trust the agent when it runs the tests?", project: "shop" }),
      }),
    );
    const body = await res.json();
    assert.ok(
      body.memories.some((m: { memory_type: string }) => m.memory_type === "insight"),
      JSON.stringify(body.memories),
    );
  } finally {
    await env.close();
  }
});

Deno.test({
  name: "insights: an empty answer stores nothing; without an LLM or without anything new, the run is skipped",
  ...opts,
}, async () => {
  const env = await writeEnv({ config: { embedding: LOCAL_EMBEDDING } as never });
  try {
    const t = await activeTenant(env);
    env.fake.onChat(INSIGHT_MARK, reply.json({ insights: [] }));
    await queueInsight(env, t, "insight:empty");
    assert.equal(
      (await env.sql`select 1 from public.devai_memories where owner_id = ${t} and memory_type = 'insight'`).length,
      0,
    );

    const quiet = newTenant();
    await queueInsight(env, quiet, "insight:quiet");
    const [nothing] = await env.sql`select result from public.memory_jobs where owner_id = ${quiet}`;
    assert.equal(nothing!.result.skipped, "nothing new to read");
    assert.equal(env.fake.chatRequests().length, 1);
  } finally {
    await env.close();
  }
  const bare = await writeEnv({ config: { embedding: LOCAL_EMBEDDING } as never, withLlm: false });
  try {
    const t = await activeTenant(bare);
    await queueInsight(bare, t, "insight:nollm");
    const [job] = await bare
      .sql`select status, result from public.memory_jobs where owner_id = ${t} and kind = 'insight'`;
    assert.deepEqual([job!.status, job!.result.skipped], ["done", "no LLM configured"]);
    assert.equal(bare.fake.chatRequests().length, 0);
  } finally {
    await bare.close();
  }
});
