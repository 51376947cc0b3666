// A model that fails never loses what the rules found: with an LLM that answers malformed JSON,
// times out or answers 500, the user's "remember that …" statements and correction are stored
// anyway (the rules' part is queued before the model is asked); the job retries the model's part
// alone and its result says which part failed; a model that recovers completes the job without
// storing the rules' part twice.
import assert from "node:assert/strict";
import { createHandler } from "../supabase/functions/memory-extract/handler.ts";
import { createLlm } from "../supabase/functions/_shared/llm.ts";
import { hashVector, type Reply, reply, vectorWithSimilarity } from "./fake_openai.ts";
import { userHeaders } from "./support/auth.ts";
import { newTenant, seedMemory } from "./support/seed.ts";
import { drainAll, EMBEDDING_MODEL, jobsOf, memoriesOf, writeEnv } from "./write_helpers.ts";

const URL_ = "http://localhost/functions/v1/memory-extract";
const EXTRACT_MARK = "What from this conversation would help you do a better job next time?";

const transcript = [
  { role: "user", content: "Remember that the staging database resets every Monday." },
  { role: "assistant", content: "Noted." },
  { role: "user", content: "Also, remember that releases are tagged vX.Y.Z." },
  { role: "user", content: "Please remember: the API gateway times out after 30 seconds." },
  { role: "user", content: "And don't forget that the CI cache lives in .cache/ci." },
  { role: "assistant", content: "The config is in app.yaml." },
  { role: "user", content: "No, the config is in deploy/app.yaml not app.yaml" },
];

const STATED = [
  "Correction from the user: the config is in deploy/app.yaml not app.yaml.",
  "Releases are tagged vX.Y.Z.",
  "The API gateway times out after 30 seconds.",
  "The CI cache lives in .cache/ci.",
  "The staging database resets every Monday.",
];

interface ExtractResult {
  rules: { status: string; candidates: number; dedup_job_id: string | null };
  model: { status: string; error?: string; candidates?: number };
}

async function runWithModel(failing: Reply, opts: { timeoutMs?: number } = {}) {
  // No in-call retries: each attempt of the job is one model call (plus the repair round trip).
  const env = await writeEnv({ llm: { retry: { maxRetries: 0 } } });
  if (opts.timeoutMs) {
    env.deps.llm = createLlm({ llm: { ...env.config.llm, timeoutMs: opts.timeoutMs } }, { retry: { maxRetries: 0 } })!;
  }
  const tenant = newTenant();
  env.fake.onChat(EXTRACT_MARK, failing);
  const handler = createHandler({ ...env.deps, kickWorker: () => Promise.resolve() });
  const res = await handler(
    new Request(URL_, {
      method: "POST",
      headers: await userHeaders(tenant),
      body: JSON.stringify({ session_id: "s-model-fails", messages: transcript, project: "shop" }),
    }),
  );
  assert.equal(res.status, 202);
  const { job_id } = await res.json();
  return { env, tenant, job_id, handler };
}

/**
 * The extract job, then the dedup jobs its run queued: by kind, as created_at alone cannot say on
 * PGlite's millisecond clock (a job queued in the millisecond of the POST tied with its extract job).
 */
const extractFirst = <J extends { kind: string }>(jobs: J[]) =>
  [...jobs].sort((a, b) => Number(b.kind === "extract") - Number(a.kind === "extract"));

for (
  const [what, failing, timeoutMs, error] of [
    [
      "answers malformed JSON",
      reply.json({ memories: [] }),
      undefined,
      /LlmOutputError: LLM output invalid after one repair attempt/,
    ],
    ["times out", reply.hang(), 150, /LlmRequestError: LLM request failed \(timeout\)/],
    ["answers 500", reply.error(500), undefined, /LlmRequestError: LLM request failed \(HTTP 500\)/],
  ] as const
) {
  Deno.test(`extract: a model that ${what} loses nothing the rules found; the job says the model's part failed`, async () => {
    const { env, tenant, job_id, handler } = await runWithModel(failing, { timeoutMs });
    try {
      const report = await drainAll(env.deps, tenant);
      assert.equal(report.dead, 1, JSON.stringify(report));
      assert.equal(report.retried, 4, "max_attempts 5: the model's part was tried five times");

      const mems = await memoriesOf(env.sql, tenant);
      assert.deepEqual(mems.map((m) => m.content).sort(), STATED);
      assert.ok(
        mems.every((m) => m.priority === "highest" && (m.source === "user_stated" || m.source === "correction")),
      );

      // One rules' dedup job for five attempts: the retries did not queue the rules' part again.
      const jobs = extractFirst(await jobsOf(env.sql, tenant));
      assert.deepEqual(jobs.map((j) => [j.kind, j.status]), [["extract", "dead"], ["dedup", "done"]]);

      const status =
        await (await handler(new Request(`${URL_}?job_id=${job_id}`, { headers: await userHeaders(tenant) }))).json();
      assert.equal(status.status, "dead");
      assert.equal(status.attempts, 5);
      assert.match(status.last_error, /^ModelPartError: model part failed \(the rules' 5 candidate\(s\) are stored\)/);
      assert.match(status.last_error, error);
      const result = status.result as ExtractResult;
      assert.deepEqual(result.rules, {
        status: "stored",
        candidates: 5,
        dedup_job_id: jobs[1]!.id,
        dedup_job_ids: [jobs[1]!.id],
      });
      assert.equal(result.model.status, "failed");
      assert.match(result.model.error!, error);
    } finally {
      await env.close();
    }
  });
}

Deno.test("extract: the model's part is retried alone; when the model recovers the job completes, the rules' part stored once", async () => {
  const fact = {
    content: "The shop deploys from the main branch.",
    type: "semantic",
    namespace: "devai/project/shop/deploy",
    source: "discovery",
    priority: "medium",
    importance: 3,
  };
  const { env, tenant, job_id, handler } = await runWithModel(reply.error(500));
  try {
    env.fake.reset();
    env.fake.onChat(EXTRACT_MARK, [reply.error(500), reply.error(503), reply.json({ stored: [fact], filtered: [] })]);
    const report = await drainAll(env.deps, tenant);
    assert.equal(report.retried, 2, JSON.stringify(report));
    assert.equal(report.dead, 0);
    assert.equal(env.fake.chatRequests().length, 3, "three tries of the model's part");

    const jobs = extractFirst(await jobsOf(env.sql, tenant));
    assert.deepEqual(jobs.map((j) => [j.kind, j.status]), [["extract", "done"], ["dedup", "done"], ["dedup", "done"]]);
    const status =
      await (await handler(new Request(`${URL_}?job_id=${job_id}`, { headers: await userHeaders(tenant) }))).json();
    assert.equal(status.status, "done");
    assert.equal(status.result.rules.candidates, 5);
    assert.deepEqual([status.result.model.status, status.result.model.candidates], ["done", 1]);
    assert.equal(status.result.candidates, 6);

    const mems = await memoriesOf(env.sql, tenant);
    assert.deepEqual(mems.map((m) => m.content).sort(), [...STATED, fact.content].sort(), "each memory once");
  } finally {
    await env.close();
  }
});

// A correction nearly always has a near neighbour (the fact it corrects), so its dedup job asks
// the model too: when that call fails, the rule decides for the user's own words and the dedup job
// completes, counting the failure.
for (
  const [what, failing, timeoutMs] of [
    ["answers malformed JSON", reply.json({ memories: [] }), undefined],
    ["times out", reply.hang(), 150],
    ["answers 500", reply.error(500), undefined],
  ] as const
) {
  Deno.test(`dedup: a model that ${what} still stores a correction that has a near neighbour`, async () => {
    const env = await writeEnv({ llm: { retry: { maxRetries: 0 } } });
    if (timeoutMs) env.deps.llm = createLlm({ llm: { ...env.config.llm, timeoutMs } }, { retry: { maxRetries: 0 } })!;
    try {
      const tenant = newTenant();
      const base = hashVector("config location");
      const old = await seedMemory(env.sql, tenant, {
        content: "The config is in app.yaml.",
        namespace: "devai/user",
        embedding: base,
        embedding_model: EMBEDDING_MODEL,
      });
      const correction = "Correction from the user: the config is in deploy/app.yaml not app.yaml.";
      env.fake.setEmbedding(correction, vectorWithSimilarity(base, 0.92, "correction"));
      env.fake.onChat(() => true, failing); // every model call: extraction and the dedup decision
      const handler = createHandler({ ...env.deps, kickWorker: () => Promise.resolve() });
      const res = await handler(
        new Request(URL_, {
          method: "POST",
          headers: await userHeaders(tenant),
          body: JSON.stringify({
            session_id: "s-neighbour",
            messages: [{ role: "assistant", content: "The config is in app.yaml." }, {
              role: "user",
              content: "No, the config is in deploy/app.yaml not app.yaml",
            }],
          }),
        }),
      );
      assert.equal(res.status, 202);
      await drainAll(env.deps, tenant);

      const mems = await memoriesOf(env.sql, tenant);
      assert.deepEqual(mems.map((m) => [m.id === old.id ? "seeded" : "new", m.content, m.source, m.is_valid]), [
        ["seeded", "The config is in app.yaml.", null, true],
        ["new", correction, "correction", true],
      ]);
      const jobs = extractFirst(await jobsOf(env.sql, tenant));
      assert.deepEqual(jobs.map((j) => [j.kind, j.status]), [["extract", "dead"], ["dedup", "done"]]);
      const dedup = jobs[1]!.result as {
        model_failures: number;
        llm_calls: number;
        outcomes: { action: string; reason: string }[];
      };
      assert.equal(dedup.llm_calls, 1, "the decision asked the model once");
      assert.equal(dedup.model_failures, 1);
      assert.deepEqual(dedup.outcomes.map((o) => [o.action, o.reason]), [["ADD", "model_failed"]]);
    } finally {
      await env.close();
    }
  });
}

Deno.test("extract: a retry of the model's part asks only the chunks the failed attempt had not had answered", async () => {
  // 80 messages of ~1,000 tokens: two chunks of at most 60k tokens.
  const sentence = "the deploy pipeline built the service, ran its checks and published the image. ";
  const long = Array.from({ length: 80 }, (_, i) => ({
    role: i % 2 === 0 ? "user" : "assistant",
    content: `Step ${i}: ${sentence.repeat(60)}`,
  }));
  const fact = (content: string) => ({
    content,
    type: "semantic",
    namespace: "devai/project/shop/deploy",
    source: "discovery",
    priority: "medium",
    importance: 3,
  });
  const env = await writeEnv({ llm: { retry: { maxRetries: 0 } } });
  try {
    const tenant = newTenant();
    env.fake.onChat(EXTRACT_MARK, [
      reply.json({ stored: [fact("The deploy pipeline publishes an image per build.")], filtered: [] }),
      reply.error(500),
      reply.json({ stored: [fact("Every deploy runs the service's checks first.")], filtered: [] }),
    ]);
    const handler = createHandler({ ...env.deps, kickWorker: () => Promise.resolve() });
    const res = await handler(
      new Request(URL_, {
        method: "POST",
        headers: await userHeaders(tenant),
        body: JSON.stringify({ session_id: "s-chunks", messages: long, project: "shop" }),
      }),
    );
    assert.equal(res.status, 202, await res.clone().text());
    const { job_id } = await res.json();
    const report = await drainAll(env.deps, tenant);
    assert.equal(report.retried, 1, JSON.stringify(report));
    assert.equal(env.fake.chatRequests().length, 3, "chunk 1, chunk 2 (failed), then chunk 2 again: not chunk 1");

    const status =
      await (await handler(new Request(`${URL_}?job_id=${job_id}`, { headers: await userHeaders(tenant) }))).json();
    assert.equal(status.status, "done");
    assert.deepEqual([status.result.stats.chunks, status.result.stats.chunks_resumed], [2, 1]);
    const mems = await memoriesOf(env.sql, tenant);
    assert.deepEqual(mems.map((m) => m.content).sort(), [
      "Every deploy runs the service's checks first.",
      "The deploy pipeline publishes an image per build.",
    ]);
  } finally {
    await env.close();
  }
});
