// memory-extract end to end on the real database with the fake LLM: POST → 202 with a durable job
// → worker → extract job → dedup job → memories, audited and linked; idempotent re-submission;
// bad input never enqueues; LLM repair. (A failing model: write_extract_model_failure.test.ts.)
import assert from "node:assert/strict";
import { createHandler } from "../supabase/functions/memory-extract/handler.ts";
import { reply } from "./fake_openai.ts";
import { userHeaders } from "./support/auth.ts";
import { newTenant } from "./support/seed.ts";
import { drainAll, jobsOf, memoriesOf, writeEnv } from "./write_helpers.ts";

const URL_ = "http://localhost/functions/v1/memory-extract";
const EXTRACT_MARK = "What from this conversation would help you do a better job next time?";

const transcript = [
  { role: "system", content: "You are DevAI." },
  { role: "user", content: "Deploy the task-api function please." },
  {
    role: "assistant",
    content: null,
    tool_calls: [{
      id: "call_1",
      type: "function",
      function: { name: "bash", arguments: '{"cmd":"appwrite push --force"}' },
    }],
  },
  { role: "tool", tool_call_id: "call_1", content: "Deployed, but inactive." },
  { role: "assistant", content: "Pushed; activating via PATCH." },
  { role: "user", content: "Remember that the task-api uses JWT auth." },
];

const llmCandidate = {
  content: "Appwrite functions need manual deployment activation via REST API PATCH after push --force.",
  type: "procedural",
  namespace: "devai/project/taskforge/deployment",
  source: "error_resolution",
  priority: "high",
  importance: 4,
};

async function post(
  handler: (r: Request) => Promise<Response>,
  tenant: string,
  body: unknown,
  headers: Record<string, string> = {},
) {
  return await handler(
    new Request(URL_, { method: "POST", headers: await userHeaders(tenant, headers), body: JSON.stringify(body) }),
  );
}

Deno.test("extract: POST answers 202 with a durable job; the worker turns it into deduplicated, audited memories", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    env.fake.onChat(
      EXTRACT_MARK,
      reply.json({ stored: [llmCandidate], filtered: [{ content: "hello", reason: "greeting" }] }),
    );
    let kicks = 0;
    const handler = createHandler({ ...env.deps, kickWorker: () => (kicks++, Promise.resolve()) });
    const res = await post(handler, tenant, { session_id: "s-1", messages: transcript, project: "taskforge" });
    assert.equal(res.status, 202);
    const body = await res.json();
    assert.equal(body.status, "queued");
    assert.equal(body.deduplicated, false);
    assert.equal(kicks, 1);
    // The job exists before any worker ran.
    assert.equal((await jobsOf(env.sql, tenant)).length, 1);

    const report = await drainAll(env.deps, tenant);
    assert.equal(report.done, 3, JSON.stringify(report)); // extract + the rules' dedup + the model's dedup
    const mems = await memoriesOf(env.sql, tenant);
    assert.deepEqual(mems.map((m) => m.content).sort(), [
      "Appwrite functions need manual deployment activation via REST API PATCH after push --force.",
      "The task-api uses JWT auth.",
    ]);
    const stated = mems.find((m) => m.content === "The task-api uses JWT auth.")!;
    assert.equal(stated.source, "user_stated");
    assert.equal(stated.priority, "highest");
    assert.equal(stated.namespace, "devai/project/taskforge");
    // Every write is in the history with the worker as actor.
    const history = await env.sql<
      { event: string; actor: string }[]
    >`select event, actor from public.memory_history where owner_id = ${tenant}`;
    assert.ok(history.filter((h) => h.event === "ADD").length >= 2);
    assert.ok(history.every((h) => h.actor === "worker:dedup"), JSON.stringify(history));
    const events = await env.sql<
      { op: string; node: string }[]
    >`select op, node from public.memory_events where owner_id = ${tenant}`;
    assert.ok(events.some((e) => e.op === "extract"));
    assert.equal(events.filter((e) => e.op === "create").length, 2);

    // Status readable by its owner, not by another tenant.
    const get = await handler(new Request(`${URL_}?job_id=${body.job_id}`, { headers: await userHeaders(tenant) }));
    assert.equal(get.status, 200);
    const status = await get.json();
    assert.equal(status.status, "done");
    assert.equal(status.result.candidates, 2);
    const other = await handler(
      new Request(`${URL_}?job_id=${body.job_id}`, { headers: await userHeaders(newTenant()) }),
    );
    assert.equal(other.status, 404);
    // Unknown query parameters are refused, as everywhere.
    const extra = await handler(
      new Request(`${URL_}?job_id=${body.job_id}&verbose=1`, { headers: await userHeaders(tenant) }),
    );
    assert.equal(extra.status, 400);
    assert.equal((await extra.json()).error.code, "invalid_request");
    // A job_id given twice is refused, whichever comes first (the last one used to win).
    const twice = await handler(
      new Request(`${URL_}?job_id=${crypto.randomUUID()}&job_id=${body.job_id}`, {
        headers: await userHeaders(tenant),
      }),
    );
    assert.equal(twice.status, 400);
    assert.equal((await twice.json()).error.issues[0].message, "given more than once");
  } finally {
    await env.close();
  }
});

Deno.test("extract: re-submitting the same session is idempotent (same job, extracted once)", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    env.fake.onChat(EXTRACT_MARK, reply.json({ stored: [llmCandidate], filtered: [] }));
    const handler = createHandler({ ...env.deps, kickWorker: () => Promise.resolve() });
    const first = await (await post(handler, tenant, { session_id: "s-2", messages: transcript, project: "taskforge" }))
      .json();
    const again = await post(handler, tenant, { session_id: "s-2", messages: transcript, project: "taskforge" });
    assert.equal(again.status, 202);
    const second = await again.json();
    assert.equal(second.job_id, first.job_id);
    assert.equal(second.deduplicated, true);
    await drainAll(env.deps, tenant);
    // Also after completion: the same POST does not queue anything new.
    const third = await (await post(handler, tenant, { session_id: "s-2", messages: transcript, project: "taskforge" }))
      .json();
    assert.equal(third.job_id, first.job_id);
    assert.equal(third.status, "done");
    assert.equal(env.fake.chatRequests().length, 1, "extraction ran once");
    assert.equal((await jobsOf(env.sql, tenant)).filter((j) => j.kind === "extract").length, 1);
  } finally {
    await env.close();
  }
});

Deno.test("extract: bad input is a 4xx and nothing is enqueued", async () => {
  const env = await writeEnv({ config: { maxBodyBytes: 16384, maxExtractBodyBytes: 16384 } });
  try {
    const tenant = newTenant();
    const handler = createHandler({ ...env.deps, kickWorker: () => Promise.reject(new Error("must not kick")) });
    const cases: [unknown, number][] = [
      [{ session_id: "s", messages: [] }, 400],
      [{ session_id: "s" }, 400],
      [{ session_id: "s", messages: [{ role: "human", text: "hi" }] }, 400],
      [{ session_id: "s", messages: [{ role: "user" }] }, 400],
      [{ session_id: "s", messages: [{ role: "tool", content: "x" }] }, 400], // tool result without tool_call_id
      [{ session_id: "s", messages: [{ role: "assistant", content: null }] }, 400],
      [{ session_id: "", messages: [{ role: "user", content: "hi" }] }, 400],
      [{ session_id: "s", messages: [{ role: "user", content: "x".repeat(20000) }] }, 413],
      [{ session_id: "s", messages: [{ role: "user", content: "hi \u0000 there" }] }, 400], // was a 500
      [{ session_id: "s", thread_id: "t\u0000", messages: [{ role: "user", content: "hi" }] }, 400], // was a 500
      [{ session_id: "s\u0001\u0007", messages: [{ role: "user", content: "hi" }] }, 400], // was accepted
    ];
    // A message nested 3,000 levels deep overflowed the canonical JSON's recursion (a 500).
    const deep = `{"session_id": "s", "messages": [{"role": "user", "content": "hi", "extra": ${"[".repeat(3000)}${
      "]".repeat(3000)
    }}]}`;
    const tooDeep = await handler(
      new Request(URL_, { method: "POST", headers: await userHeaders(tenant), body: deep }),
    );
    assert.equal(tooDeep.status, 400);
    assert.equal((await tooDeep.json()).error.code, "malformed_json");
    const unknownPath = await handler(
      new Request(`${URL_}/anything`, { method: "POST", headers: await userHeaders(tenant), body: "{}" }),
    );
    assert.equal(unknownPath.status, 404);
    for (const [body, status] of cases) {
      const res = await post(handler, tenant, body);
      assert.equal(res.status, status, JSON.stringify(body).slice(0, 100));
      const err = await res.json();
      assert.ok(err.error?.code, "one error shape");
      if (status === 400) assert.ok(Array.isArray(err.error.issues) || err.error.code === "malformed_json");
    }
    const malformed = await handler(
      new Request(URL_, { method: "POST", headers: await userHeaders(tenant), body: "{not json" }),
    );
    assert.equal(malformed.status, 400);
    const wrongType = await handler(
      new Request(URL_, {
        method: "POST",
        headers: { ...(await userHeaders(tenant)), "content-type": "text/plain" },
        body: "{}",
      }),
    );
    assert.equal(wrongType.status, 415);
    const noAuth = await handler(
      new Request(URL_, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ session_id: "s", messages: [{ role: "user", content: "hi" }] }),
      }),
    );
    assert.equal(noAuth.status, 401);
    assert.equal((await jobsOf(env.sql, tenant)).length, 0);
  } finally {
    await env.close();
  }
});

Deno.test("extract: invalid JSON from the LLM is repaired once and the job succeeds", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    env.fake.onChat(EXTRACT_MARK, [
      reply.text("Sure! Here are the memories: {stored: ["),
      reply.json({ stored: [llmCandidate], filtered: [] }),
    ]);
    const handler = createHandler({ ...env.deps, kickWorker: () => Promise.resolve() });
    await post(handler, tenant, { session_id: "s-3", messages: transcript, project: "taskforge" });
    const report = await drainAll(env.deps, tenant);
    assert.equal(report.dead, 0);
    assert.equal(env.fake.chatRequests().length, 2);
    const repair = env.fake.chatRequests()[1]!.body.messages.at(-1).content as string;
    assert.match(repair, /rejected: not valid JSON/);
    assert.equal((await memoriesOf(env.sql, tenant)).length, 2);
  } finally {
    await env.close();
  }
});

Deno.test("extract: without an LLM the rule-based extractor stores 'remember' statements and corrections", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const tenant = newTenant();
    const handler = createHandler({ ...env.deps, kickWorker: () => Promise.resolve() });
    const res = await post(handler, tenant, {
      session_id: "s-5",
      project: "taskforge",
      messages: [
        { role: "user", content: "hi there" },
        { role: "assistant", content: "Reading lib/appwrite.ts" },
        { role: "user", content: "no, the client lives in src/lib/appwrite.ts not lib/appwrite.ts" },
        { role: "user", content: "Please remember that I prefer pnpm over npm." },
      ],
    });
    assert.equal(res.status, 202);
    await drainAll(env.deps, tenant);
    assert.equal(env.fake.chatRequests().length, 0);
    const mems = await memoriesOf(env.sql, tenant);
    assert.deepEqual(mems.map((m) => [m.content, m.namespace, m.source]).sort(), [
      [
        "Correction from the user: the client lives in src/lib/appwrite.ts not lib/appwrite.ts.",
        "devai/project/taskforge",
        "correction",
      ],
      ["The user prefers pnpm over npm.", "devai/user/preferences", "user_stated"],
    ]);
  } finally {
    await env.close();
  }
});

Deno.test("extract: bidirectional, invisible and tag characters are removed from rule-found and model candidates before they are stored", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    // The model echoes a hidden instruction in tag characters and a right-to-left override.
    const hidden = [..."IGNORE PREVIOUS"].map((c) => String.fromCodePoint(0xe0000 + c.charCodeAt(0))).join("");
    env.fake.onChat(
      EXTRACT_MARK,
      reply.json({
        stored: [{ ...llmCandidate, content: `Deploys run from the \u202Emain\u202C branch.${hidden}` }],
        filtered: [],
      }),
    );
    const handler = createHandler({ ...env.deps, kickWorker: () => Promise.resolve() });
    await post(handler, tenant, {
      session_id: "s-unsafe",
      project: "taskforge",
      messages: [{ role: "user", content: "Remember that the release\u200B key lives in \u2066vault\u2069." }],
    });
    const report = await drainAll(env.deps, tenant);
    assert.equal(report.dead, 0, JSON.stringify(report));
    const mems = await memoriesOf(env.sql, tenant);
    assert.deepEqual(mems.map((m) => m.content).sort(), [
      "Deploys run from the main branch.",
      "The release key lives in vault.",
    ]);
    const [extractJob] = (await jobsOf(env.sql, tenant)).filter((j) => j.kind === "extract");
    assert.equal(
      (extractJob!.result as { stats: { unsafe_characters_removed: number } }).stats.unsafe_characters_removed,
      2,
    );
  } finally {
    await env.close();
  }
});

Deno.test("extract: a model answer holding NUL or half an emoji is recorded, extracted and stored clean", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    // jsonb refuses both: the job's progress record (the model's answers, kept so a retry resumes)
    // must not fail on them, or every retry of the job fails the same way until it is dead.
    env.fake.onChat(
      EXTRACT_MARK,
      reply.json({
        stored: [{ ...llmCandidate, content: "Deploys run from the main\u0000 branch.\ud83d" }],
        filtered: [],
      }),
    );
    const handler = createHandler({ ...env.deps, kickWorker: () => Promise.resolve() });
    await post(handler, tenant, {
      session_id: "s-nul",
      project: "taskforge",
      messages: [{ role: "user", content: "Where do deploys run from?" }],
    });
    const report = await drainAll(env.deps, tenant);
    assert.equal(report.dead, 0, JSON.stringify(report));
    const mems = await memoriesOf(env.sql, tenant);
    assert.deepEqual(mems.map((m) => m.content), ["Deploys run from the main branch."]);
    const [extractJob] = (await jobsOf(env.sql, tenant)).filter((j) => j.kind === "extract");
    assert.equal(extractJob!.status, "done");
  } finally {
    await env.close();
  }
});

Deno.test("extract: a lone surrogate (a tool output cut mid-emoji) becomes U+FFFD; the session is still extracted", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const tenant = newTenant();
    const handler = createHandler({ ...env.deps, kickWorker: () => Promise.resolve() });
    const messages = [
      { role: "user", content: "Remember that the deploy key is rotated monthly." },
      { role: "tool", tool_call_id: "call_1", content: "build ok \ud83d" }, // a high surrogate without its pair
      { role: "user", content: "truncated \udc00 too", note: { "k\ud800": "\udfff" } }, // in an extra field and a key as well
    ];
    const res = await post(handler, tenant, { session_id: "s-surrogate", messages });
    const answer = await res.json();
    assert.equal(res.status, 202, JSON.stringify(answer));
    assert.equal(answer.new_messages, 3);
    const again = await (await post(handler, tenant, { session_id: "s-surrogate", messages })).json();
    assert.deepEqual(
      [again.job_id, again.deduplicated],
      [answer.job_id, true],
      "the same transcript again is the same job",
    );

    const [job] = await env.sql<{ payload: { messages: { content: string; note?: Record<string, string> }[] } }[]>`
      select payload from public.memory_jobs where id = ${answer.job_id}`;
    assert.equal(job!.payload.messages[1]!.content, "build ok \uFFFD");
    assert.equal(job!.payload.messages[2]!.content, "truncated \uFFFD too");
    assert.deepEqual(job!.payload.messages[2]!.note, { "k\uFFFD": "\uFFFD" });
    const report = await drainAll(env.deps, tenant);
    assert.equal(report.dead + report.retried, 0, JSON.stringify(report));
    assert.deepEqual((await memoriesOf(env.sql, tenant)).map((m) => m.content), ["The deploy key is rotated monthly."]);
  } finally {
    await env.close();
  }
});

Deno.test("extract: a 200-character name or tool call id holding a password outgrows 200 when redacted; the job is still extracted", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const tenant = newTenant();
    const handler = createHandler({ ...env.deps, kickWorker: () => Promise.resolve() });
    const label = "a".repeat(183) + " password=hunter2"; // 200 characters: the most a request takes
    const messages = [
      { role: "user", name: label, content: "Remember that the staging database is reset nightly." },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: label, type: "function", function: { name: label, arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: label, content: "ok" },
    ];
    const res = await post(handler, tenant, { session_id: "s-long-label", messages });
    const answer = await res.json();
    assert.equal(res.status, 202, JSON.stringify(answer));
    const [job] = await env.sql<{ payload: { messages: { name?: string }[] } }[]>`
      select payload from public.memory_jobs where id = ${answer.job_id}`;
    assert.ok(job!.payload.messages[0]!.name!.length > 200, "the stored name holds the marker");
    assert.doesNotMatch(job!.payload.messages[0]!.name!, /hunter2/);
    const report = await drainAll(env.deps, tenant);
    assert.equal(report.dead + report.retried, 0, JSON.stringify(report));
    assert.deepEqual((await memoriesOf(env.sql, tenant)).map((m) => m.content), [
      "The staging database is reset nightly.",
    ]);
  } finally {
    await env.close();
  }
});

Deno.test("extract → worker → dedup → memory-retrieve returns the learned memory", async () => {
  const { createHandler: createRetrieve } = await import("../supabase/functions/memory-retrieve/handler.ts");
  const { hashVector } = await import("./fake_openai.ts");
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    env.fake.onChat(EXTRACT_MARK, reply.json({ stored: [llmCandidate], filtered: [] }));
    const question = "How do I activate an Appwrite deployment after push?";
    const v = hashVector("appwrite activation");
    env.fake.setEmbedding(llmCandidate.content, v).setEmbedding(question, v);
    const extract = createHandler({ ...env.deps, kickWorker: () => Promise.resolve() });
    assert.equal(
      (await post(extract, tenant, { session_id: "s-e2e", messages: transcript, project: "taskforge" })).status,
      202,
    );
    await drainAll(env.deps, tenant);
    const retrieve = createRetrieve(env.deps);
    const res = await retrieve(
      new Request("http://localhost/functions/v1/memory-retrieve", {
        method: "POST",
        headers: await userHeaders(tenant),
        body: JSON.stringify({ message: question, project: "taskforge" }),
      }),
    );
    assert.equal(res.status, 200);
    const text = JSON.stringify(await res.json());
    assert.ok(text.includes("manual deployment activation via REST API PATCH"), text.slice(0, 500));
  } finally {
    await env.close();
  }
});

Deno.test("extract: the LLM's candidates are capped at 5 per chunk, not 5 × chunks over the transcript", async () => {
  const { extractWithModel } = await import("../supabase/functions/_shared/extraction.ts");
  const env = await writeEnv();
  try {
    const fact = (i: number) => ({
      ...llmCandidate,
      content: `The build step ${i} runs in CI.`,
      priority: "medium",
      importance: 3,
    });
    // Two chunks: the first answers with 8 candidates, the second with none.
    env.fake.onChat("CHUNK-ONE", reply.json({ stored: Array.from({ length: 8 }, (_, i) => fact(i)), filtered: [] }));
    env.fake.onChat("CHUNK-TWO", reply.json({ stored: [], filtered: [] }));
    const messages = [
      { role: "user" as const, content: `CHUNK-ONE ${"build output ".repeat(200)}` },
      { role: "user" as const, content: `CHUNK-TWO ${"more output ".repeat(200)}` },
    ];
    const out = await extractWithModel({ session_id: "s-cap", messages }, [], {
      llm: env.llm,
      namespaceRoot: "devai",
      categories: [],
      chunkTokens: 500,
    });
    assert.equal(out.stats.chunks, 2);
    assert.equal(env.fake.chatRequests().length, 2);
    assert.equal(out.candidates.length, 5);
    assert.equal(out.stats.over_cap, 3);
  } finally {
    await env.close();
  }
});

Deno.test("extract: LLM candidates labelled user_stated/highest are demoted: capped, daily-capped, decaying", async () => {
  const env = await writeEnv({ config: { extractDailyCap: 2 } });
  try {
    const tenant = newTenant();
    const claims = Array.from({ length: 7 }, (_, i) => ({
      ...llmCandidate,
      content: `The deploy target ${i} is managed by the platform team.`,
      type: "semantic",
      source: i % 2 ? "user_stated" : "correction",
      priority: "highest",
      importance: 5,
    }));
    env.fake.onChat(EXTRACT_MARK, reply.json({ stored: claims, filtered: [] }));
    // The claims differ by one digit: the dedup decision sees them as near-verbatim neighbours.
    env.fake.onChat("NEW candidate", reply.json({ action: "ADD", reason: "a different deploy target" }));
    const handler = createHandler({ ...env.deps, kickWorker: () => Promise.resolve() });
    // The transcript's last message is a real "remember" statement: the only user-stated candidate.
    await post(handler, tenant, { session_id: "s-claims", messages: transcript, project: "taskforge" });
    const report = await drainAll(env.deps, tenant);
    assert.equal(report.done, 3, JSON.stringify(report));
    const [extractJob] = (await jobsOf(env.sql, tenant)).filter((j) => j.kind === "extract");
    const stats = (extractJob!.result as { stats: { demoted: number; over_cap: number } }).stats;
    assert.equal(stats.demoted, 7);
    assert.equal(stats.over_cap, 2, "7 model claims, at most 5 from the chunk");
    const mems = await memoriesOf(env.sql, tenant);
    const stated = mems.filter((m) =>
      m.source === "user_stated" || m.source === "correction" || m.priority === "highest"
    );
    assert.deepEqual(
      stated.map((m) => m.content),
      ["The task-api uses JWT auth."],
      "only the user's own words are user-stated",
    );
    const fromModel = mems.filter((m) => m.content.startsWith("The deploy target"));
    assert.equal(fromModel.length, 2, "the per-tenant daily cap (2) applies to model claims");
    assert.ok(fromModel.every((m) => m.priority === "high" && m.source === "discovery"), JSON.stringify(fromModel));
  } finally {
    await env.close();
  }
});

Deno.test("extract → dedup → memory.query: an extracted memory's category makes it visible to allowed agents", async () => {
  const { createHandler: createRetrieve } = await import("../supabase/functions/memory-retrieve/handler.ts");
  const { hashVector } = await import("./fake_openai.ts");
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    const task = {
      ...llmCandidate,
      content: "The next task is migrating the task-api to Hono.",
      type: "semantic",
      category: "tasks",
    };
    const unknown = {
      ...llmCandidate,
      content: "The task-api bundle is built with esbuild.",
      type: "semantic",
      category: "made_up",
    };
    env.fake.onChat(EXTRACT_MARK, reply.json({ stored: [task, unknown], filtered: [] }));
    const question = "What is the next task for the task-api?";
    const v = hashVector("next task");
    env.fake.setEmbedding(task.content, v).setEmbedding(question, v);
    const extract = createHandler({ ...env.deps, kickWorker: () => Promise.resolve() });
    assert.equal(
      (await post(extract, tenant, { session_id: "s-cat", messages: transcript, project: "taskforge" })).status,
      202,
    );
    await drainAll(env.deps, tenant);

    // The prompt offered the configured categories.
    const system = String(env.fake.chatRequests()[0]!.body.messages[0].content);
    assert.match(system, /category \(optional\).*\btasks\b.*/);
    const [job] = (await jobsOf(env.sql, tenant)).filter((j) => j.kind === "extract");
    assert.equal((job!.result as { stats: { category_dropped: number } }).stats.category_dropped, 1);
    const rows = await env.sql<{ content: string; category: string | null }[]>`
      select content, metadata ->> 'category' as category from public.devai_memories where owner_id = ${tenant}`;
    assert.deepEqual(rows.map((r) => [r.content, r.category]).sort(), [
      ["The next task is migrating the task-api to Hono.", "tasks"],
      ["The task-api bundle is built with esbuild.", null],
      ["The task-api uses JWT auth.", null],
    ]);
    const created = await env
      .sql`select category from public.memory_events where owner_id = ${tenant} and op = 'create' and category = 'tasks'`;
    assert.equal(created.length, 1, "the event records the real category");

    const retrieve = createRetrieve(env.deps);
    const ask = async (agent: string) =>
      await retrieve(
        new Request("http://localhost/functions/v1/memory-retrieve/query", {
          method: "POST",
          headers: await userHeaders(tenant),
          body: JSON.stringify({ agent, query: question, project: "taskforge" }),
        }),
      );
    const planner = await ask("planner"); // allowlist: goals, tasks, projects, procedural
    assert.equal(planner.status, 200);
    const body = await planner.json();
    assert.deepEqual(body.results.map((r: { category: string; text: string }) => [r.category, r.text]), [[
      "tasks",
      `[tasks] ${task.content}`,
    ]]);
    const stylist = await (await ask("stylist")).json(); // preferences, tone, style: not tasks
    assert.deepEqual(stylist.results, []);
  } finally {
    await env.close();
  }
});
