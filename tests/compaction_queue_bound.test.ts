// memory-compact at the tenant's queue bound (docs/operations.md#a-tenants-queued-jobs): the
// compaction is answered and stored, only its candidates' dedup jobs are refused, and the answer
// says so (candidates_refused). Before, the model was called and then the whole compaction was a
// 429 queue_full: the model's work spent, the conversation not compacted, the agent stuck with a
// full context. Once the backlog drains, the same list sent again queues its candidates.
import assert from "node:assert/strict";
import { createHandler } from "../supabase/functions/memory-compact/handler.ts";
import { COMPACTION_MARK } from "../supabase/functions/memory-compact/prompt.ts";
import { reply } from "./fake_openai.ts";
import { userHeaders } from "./support/auth.ts";
import { postExtract } from "./support/extract.ts";
import { overrideSettings } from "./support/lifecycle.ts";
import { newTenant } from "./support/seed.ts";
import { drainAll, jobsOf, writeEnv } from "./write_helpers.ts";

/** Over a 1,000-token trigger; its oldest turn asks to remember something (a rule-based candidate). */
const conversation = [
  { role: "system", content: "You are DevAI." },
  { role: "user", content: `Remember that builds use pnpm. Task: billing ${"please look at the file ".repeat(300)}` },
  { role: "assistant", content: `Done: ${"it was fixed ".repeat(300)}` },
  { role: "user", content: "next" },
];

async function compact(deps: Parameters<typeof createHandler>[0], tenant: string, sessionId: string) {
  const handler = createHandler({ ...deps, kickWorker: () => Promise.resolve() });
  const res = await handler(
    new Request("http://localhost/functions/v1/memory-compact", {
      method: "POST",
      headers: await userHeaders(tenant),
      body: JSON.stringify({ session_id: sessionId, project: "x", messages: conversation, trigger_tokens: 1_000 }),
    }),
  );
  return { status: res.status, body: await res.json() };
}

/** The tenant's one queued job: an extraction, which puts it at a bound of 1. */
async function fillQueue(env: Awaited<ReturnType<typeof writeEnv>>, tenant: string) {
  const ex = await postExtract(env, tenant, { session_id: "other", messages: [{ role: "user", content: "hi" }] });
  assert.equal(ex.status, 202, JSON.stringify(ex.body));
}

Deno.test("compaction at the queue bound: compacted with one model call, its candidates refused and said so", async () => {
  const env = await writeEnv();
  const settings = await overrideSettings(env.sql, { job_queue_tenant_max: 1 });
  try {
    const tenant = newTenant();
    await fillQueue(env, tenant);
    env.fake.onChat(
      COMPACTION_MARK,
      reply.json({
        summary: "The user asked about billing; fixed.",
        candidates: [{
          content: "The billing service listens on port 8080.",
          type: "semantic",
          namespace: "devai/project/x",
          source: "discovery",
          priority: "low",
          importance: 3,
        }],
      }),
    );
    const calls = env.fake.chatRequests().length;
    const res = await compact(env.deps, tenant, "s1");
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(env.fake.chatRequests().length - calls, 1, "one model call");
    assert.equal(res.body.compacted, true);
    assert.equal(res.body.summary_mode, "llm");
    assert.ok(res.body.messages.some((m: { content: string }) => m.content?.includes("billing; fixed")));
    assert.equal(res.body.candidates_queued, 0);
    assert.deepEqual(res.body.dedup_job_ids, []);
    assert.equal(res.body.candidates_refused.code, "queue_full");
    assert.equal(res.body.candidates_refused.count, 2, "the model's candidate and the stated one");
    assert.ok(res.body.candidates_refused.retry_after > 0);
    const [stored] = await env.sql`select summary from public.memory_session_summaries where owner_id = ${tenant}`;
    assert.equal(stored?.summary, res.body.summary, "the summary is the session's layer-2 record");
    assert.equal((await jobsOf(env.sql, tenant)).length, 1, "no dedup job queued past the bound");

    // The backlog drained, the same list again (the answer lost) queues the candidates.
    await drainAll(env.deps, tenant);
    const again = await compact(env.deps, tenant, "s1");
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(again.body.candidates_queued, 2);
    assert.equal(again.body.candidates_refused, undefined);
  } finally {
    await settings.restore();
    await env.close();
  }
});

Deno.test("compaction at the queue bound without a model: the extractive summary, the stated candidate refused", async () => {
  const env = await writeEnv({ withLlm: false });
  const settings = await overrideSettings(env.sql, { job_queue_tenant_max: 1 });
  try {
    const tenant = newTenant();
    await fillQueue(env, tenant);
    const res = await compact(env.deps, tenant, "s2");
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.compacted, true);
    assert.equal(res.body.summary_mode, "extractive");
    assert.equal(res.body.candidates_queued, 0);
    assert.equal(res.body.candidates_refused.count, 1);
    assert.equal(res.body.candidates_refused.code, "queue_full");
  } finally {
    await settings.restore();
    await env.close();
  }
});
