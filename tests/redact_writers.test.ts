// No secret in memory, through every writer: remember and correct (redacted; nothing but a secret
// is a 422 that writes nothing), episodes (redacted; a message that is only a secret is dropped),
// memory-extract (the queued transcript, the model's prompt, what is stored), compaction (the
// model's prompt and the stored summary), memory-dedup's queued candidates; and the counts in
// memory/stats. With the fake LLM: a model never sees a secret.
import assert from "node:assert/strict";
import { createHandler as createCompact } from "../supabase/functions/memory-compact/handler.ts";
import { COMPACTION_MARK } from "../supabase/functions/memory-compact/prompt.ts";
import { createHandler as createDedup } from "../supabase/functions/memory-dedup/handler.ts";
import { createHandler as createExtract } from "../supabase/functions/memory-extract/handler.ts";
import { reply } from "./fake_openai.ts";
import { userHeaders } from "./support/auth.ts";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, seedMemories, tenantWrites } from "./support/seed.ts";
import { drainAll, type WriteEnv, writeEnv } from "./write_helpers.ts";
import { waitUntil } from "./support/wait.ts";
import { realServerOnly } from "./support/backend.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const KEY = "sk-proj-Zx8Kq2Lm5Np7Rt1Vw4Yb6Cd9Fg3Hj0Mn2Pq5St8Uv1Wx4Yz7Ab0Cd3Ef6Gh9Ij2Kl5";
const PAT = "ghp_Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8L9";
const DSN = "postgres://app:Sup3r-S3cret-Pw@db.internal:5432/shop";
const EXTRACT_MARK = "What from this conversation would help you do a better job next time?";

const leaked = (text: string) => [KEY, PAT, "Sup3r-S3cret-Pw"].filter((s) => text.includes(s));

/** A writers' test in an environment of its own (the fake LLM answering when `llm`), as a new tenant. */
function writerTest(
  test: { name: string; llm?: boolean },
  fn: (env: WriteEnv, tenant: string) => Promise<void>,
): void {
  Deno.test({ name: test.name, ...opts }, async () => {
    const env = await writeEnv(test.llm ? {} : { withLlm: false });
    try {
      await fn(env, newTenant());
    } finally {
      await env.close();
    }
  });
}

const HANDLERS = { "memory-extract": createExtract, "memory-compact": createCompact, "memory-dedup": createDedup };

/** A POST to a queueing writer as tenant `t`; the worker is not kicked (the test drains the jobs). */
async function post(env: WriteEnv, t: string, fn: keyof typeof HANDLERS, body: object): Promise<Response> {
  const handler = HANDLERS[fn]({ ...env.deps, kickWorker: () => Promise.resolve() });
  return await handler(
    new Request(`http://local/functions/v1/${fn}`, {
      method: "POST",
      headers: await userHeaders(t),
      body: JSON.stringify(body),
    }),
  );
}

writerTest({
  name: "remember and correct store the redacted text; a statement that is only a secret is a 422 writing nothing",
}, async (env, t) => {
  const api = memoryApi(env.sql);
  const r = await api("POST", "/memory/remember", {
    as: t,
    body: { content: `The staging database is ${DSN}`, project: "shop" },
  });
  assert.equal(r.status, 201);
  assert.equal(
    r.body.memory.content,
    "The staging database is postgres://app:[REDACTED:password]@db.internal:5432/shop",
  );

  const before = await tenantWrites(env.sql, t);
  for (const content of [KEY, `export OPENAI_API_KEY=${KEY}`]) {
    const only = await api("POST", "/memory/remember", { as: t, body: { content } });
    assert.deepEqual([only.status, only.body.error.code], [422, "only_secret"]);
  }
  assert.deepEqual(await tenantWrites(env.sql, t), before);

  const c = await api("POST", `/memory/${r.body.memory.id}/correct`, {
    as: t,
    body: { content: `CI pushes with the token ${PAT}` },
  });
  assert.equal(c.status, 201);
  assert.equal(c.body.memory.content, "CI pushes with the token [REDACTED:github_token]");

  const rows = await env.sql<{ content: string }[]>`select content from public.devai_memories where owner_id = ${t}`;
  const history = await env.sql<
    { new_content: string | null }[]
  >`select new_content from public.memory_history where owner_id = ${t}`;
  assert.deepEqual(leaked(JSON.stringify([rows, history])), []);
  const stats = await api("GET", "/memory/stats", { as: t });
  assert.deepEqual(stats.body.redactions, {
    total: 2,
    dropped: 0,
    by_kind: { password: 1, github_token: 1 },
    by_writer: { remember: 1, correct: 1 },
  });
});

writerTest({
  name: "episodes are stored redacted; a message that is only a secret is dropped, also when sent again",
}, async (env, t) => {
  const api = memoryApi(env.sql);
  const body = {
    session_id: "s1",
    messages: [
      { role: "user", content: `connect with ${DSN} please` },
      { role: "user", content: KEY },
      { role: "assistant", content: "Connected." },
    ],
  };
  const r = await api("POST", "/memory/episodes", { as: t, body });
  assert.equal(r.status, 201);
  assert.deepEqual([r.body.stored, r.body.dropped, r.body.redacted, r.body.duplicates], [2, 1, 1, 0]);
  assert.deepEqual(r.body.episodes[1], { id: null, seq: null, role: "user", duplicate: false, dropped: true });
  assert.deepEqual(r.body.episodes.map((e: { seq: number | null }) => e.seq), [0, null, 1]);
  const again = await api("POST", "/memory/episodes", { as: t, body });
  assert.deepEqual([again.status, again.body.stored, again.body.duplicates, again.body.dropped], [200, 0, 2, 1]);
  const rows = await env.sql<
    { content: string }[]
  >`select content from public.devai_memories where owner_id = ${t} order by (metadata ->> 'seq')::int`;
  assert.deepEqual(rows.map((x) => x.content), [
    "connect with postgres://app:[REDACTED:password]@db.internal:5432/shop please",
    "Connected.",
  ]);
  assert.equal((await api("GET", "/memory/stats", { as: t })).body.redactions.dropped, 2);
});

writerTest({
  name:
    "extraction and compaction: a secret in any field of a message (name, added fields, any part, tool call ids and names) is neither stored nor shown to the model",
  llm: true,
}, async (env, t) => {
  env.fake.onChat(EXTRACT_MARK, reply.json({ stored: [] }));
  env.fake.onChat(COMPACTION_MARK, reply.json({ summary: "A short session.", memories: [] }));
  // Found by an outside attack: only contents and tool call arguments were redacted.
  const messages = [
    { role: "user", content: "my token is in the name", name: `n-${PAT}`, note: PAT, [PAT]: 1 },
    {
      role: "user",
      content: [{ type: "refusal", refusal: PAT }, { type: "image_url", image_url: { url: `https://x:${PAT}@h/` } }],
    },
    {
      role: "assistant",
      content: null,
      tool_calls: [{ id: PAT, type: "function", function: { name: PAT, arguments: "{}", extra: PAT } }],
    },
    { role: "tool", content: "ok", tool_call_id: PAT },
    { role: "user", content: "Remember that deploys run from the main branch." },
  ];
  assert.equal((await post(env, t, "memory-extract", { session_id: "s-fields", messages })).status, 202);
  const [job] = await env.sql`select payload from public.memory_jobs where owner_id = ${t} and kind = 'extract'`;
  const stored = JSON.stringify(job!.payload);
  assert.deepEqual(leaked(stored), [], "the queued transcript is redacted, every field of it");
  assert.ok(stored.includes("[REDACTED:github_token]"));
  await drainAll(env.deps, t);

  const compacted = await post(env, t, "memory-compact", {
    session_id: "s-fields",
    messages: [...messages, ...Array.from({ length: 40 }, () => ({ role: "assistant", content: "ok ".repeat(60) }))],
    trigger_tokens: 1_000,
    target_chunk_tokens: 500_000,
  });
  assert.equal((await compacted.json()).compacted, true);
  const prompts = env.fake.chatRequests().map((q) => JSON.stringify(q.body));
  assert.equal(prompts.length, 2, "one extraction and one compaction call");
  assert.deepEqual(leaked(prompts.join("\n")), [], "the model never saw the token, in no field");
});

writerTest({
  name: "extraction: the queued transcript, the model's prompt and the stored memories hold no secret",
  llm: true,
}, async (env, t) => {
  // A model that echoes secrets back: its candidates are redacted, one that is only a secret dropped.
  env.fake.onChat(
    EXTRACT_MARK,
    reply.json({
      stored: [
        {
          content: `Deploys authenticate with the GitHub token ${PAT}.`,
          type: "semantic",
          namespace: "devai/project/shop/deploy",
          source: "discovery",
          priority: "high",
          importance: 4,
        },
        {
          content: `OPENAI_API_KEY=${KEY}`,
          type: "semantic",
          namespace: "devai/project/shop/env",
          source: "discovery",
          priority: "high",
          importance: 4,
        },
      ],
    }),
  );
  const messages = [
    { role: "user", content: `deploy with ${PAT}.\nRemember that the staging database is ${DSN}` },
    {
      role: "assistant",
      content: null,
      tool_calls: [{
        id: "c1",
        type: "function",
        function: { name: "bash", arguments: JSON.stringify({ cmd: `OPENAI_API_KEY=${KEY} npm run eval` }) },
      }],
    },
    { role: "tool", tool_call_id: "c1", content: "ok" },
  ];
  const res = await post(env, t, "memory-extract", { session_id: "s1", messages, project: "shop" });
  assert.equal(res.status, 202);
  const [job] = await env.sql`select payload from public.memory_jobs where owner_id = ${t}`;
  assert.deepEqual(leaked(JSON.stringify(job!.payload)), [], "the queued transcript is redacted");

  await drainAll(env.deps, t);
  assert.deepEqual(
    leaked(JSON.stringify(env.fake.chatRequests().map((q) => q.body))),
    [],
    "the model never saw a secret",
  );
  const rows = await env.sql<
    { content: string }[]
  >`select content from public.devai_memories where owner_id = ${t} order by content`;
  assert.deepEqual(rows.map((x) => x.content), [
    "Deploys authenticate with the GitHub token [REDACTED:github_token].",
    "The staging database is postgres://app:[REDACTED:password]@db.internal:5432/shop.",
  ]);
  const [extract] = await env.sql`select result from public.memory_jobs where owner_id = ${t} and kind = 'extract'`;
  assert.deepEqual([extract!.result.stats.redacted, extract!.result.stats.secrets_dropped], [1, 1]);
  const stats = await memoryApi(env.sql)("GET", "/memory/stats", { as: t });
  assert.ok(
    stats.body.redactions.total >= 4 && stats.body.redactions.dropped === 1,
    JSON.stringify(stats.body.redactions),
  );
});

writerTest({
  name: "compaction and memory-dedup: no secret to the model, in the stored summary or in a queued candidate",
  llm: true,
}, async (env, t) => {
  env.fake.onChat(
    COMPACTION_MARK,
    reply.json({ summary: `Set up the deploy\u202e; the token is ${PAT}.`, candidates: [] }),
  );
  const messages = [
    { role: "system", content: "You are DevAI." },
    ...Array.from(
      { length: 8 },
      (_, i) => ({
        role: i % 2 ? "assistant" : "user",
        content: `step ${i}: export GH_TOKEN=${PAT} ${"and more words ".repeat(150)}`,
      }),
    ),
  ];
  const res = await post(env, t, "memory-compact", {
    session_id: "s1",
    messages,
    trigger_tokens: 1000,
    target_chunk_tokens: 1500,
  });
  const out = await res.json();
  assert.equal(out.compacted, true, JSON.stringify(out).slice(0, 300));
  assert.deepEqual(leaked(JSON.stringify(env.fake.chatRequests().map((q) => q.body.messages))), []);
  assert.deepEqual(leaked(out.summary), []);
  const [stored] = await env.sql`select summary from public.memory_session_summaries where owner_id = ${t}`;
  assert.deepEqual(leaked(stored!.summary), []);
  assert.ok(!String(stored!.summary).includes("\u202e"), "the model's right-to-left override is not stored");

  const queued = await post(env, t, "memory-dedup", {
    candidates: [{
      content: `The CI token is ${PAT}.`,
      type: "semantic",
      source: "discovery",
      priority: "high",
      importance: 3,
    }],
  });
  assert.equal(queued.status, 202);
  const [job] = await env
    .sql`select payload from public.memory_jobs where owner_id = ${t} and kind = 'dedup' and idempotency_key like 'api:%'`;
  assert.deepEqual(leaked(JSON.stringify(job!.payload)), []);
  const onlySecret = await post(env, t, "memory-dedup", {
    candidates: [{ content: KEY, type: "semantic", source: "discovery", priority: "high", importance: 3 }],
  });
  assert.equal(onlySecret.status, 422);
});

writerTest({
  name: "a file an agent wrote, JSON in a tool call or a hook's line, has its lines read as lines: no password kept",
  llm: true,
}, async (env, t) => {
  // Claude Code's Write tool: the file's lines are one JSON string, `\n` two characters in it.
  const files = ["POSTGRES_USER: app\nPOSTGRES_PASSWORD: postgres\n", "[client]\nuser=app\npassword=s3cr3tpw\n"];
  const held = (text: string) => ["PASSWORD: postgres", "s3cr3tpw"].filter((s) => text.includes(s));
  const write = (content: string, id: string) => ({
    role: "assistant",
    content: null,
    tool_calls: [{
      id,
      type: "function",
      function: { name: "Write", arguments: JSON.stringify({ file_path: ".env", content }) },
    }],
  });
  const messages = [
    { role: "user", content: "set up the database config" },
    write(files[0]!, "c1"),
    { role: "tool", tool_call_id: "c1", content: "written" },
    write(files[1]!, "c2"),
    { role: "tool", tool_call_id: "c2", content: "written" },
    { role: "assistant", content: `Done. ${"and more words ".repeat(400)}` },
    { role: "user", content: "next" },
  ];
  assert.equal((await post(env, t, "memory-extract", { session_id: "s1", messages })).status, 202);
  const [job] = await env.sql`select payload from public.memory_jobs where owner_id = ${t} and kind = 'extract'`;
  const queued = JSON.stringify(job!.payload);
  assert.deepEqual(held(queued), [], queued);
  assert.ok(queued.includes("POSTGRES_PASSWORD: [REDACTED:password]"), queued);

  env.fake.onChat(COMPACTION_MARK, reply.json({ summary: "The database config was written.", candidates: [] }));
  const compacted = await post(env, t, "memory-compact", { session_id: "s1", messages, trigger_tokens: 1000 });
  assert.equal((await compacted.json()).summary_mode, "llm");
  assert.deepEqual(held(JSON.stringify(env.fake.chatRequests().map((q) => q.body.messages))), []);

  // The Claude Code hooks send a tool call as an episode `[Write] {…}`.
  const api = memoryApi(env.sql);
  const line = `[Write] ${JSON.stringify({ file_path: ".env", content: files[1] })}`;
  const r = await api("POST", "/memory/episodes", {
    as: t,
    body: { session_id: "s1", messages: [{ role: "assistant", content: line }] },
  });
  assert.deepEqual([r.status, r.body.redacted], [201, 1]);
  const [episode] = await env.sql<{ content: string }[]>`
    select content from public.devai_memories where owner_id = ${t} and source = 'conversation'`;
  assert.deepEqual(held(episode!.content), [], episode!.content);
  // JSON too deep to walk is read as text only, not a 500 (a RangeError walking 20,000 levels).
  const deep = `password: ${"[".repeat(20_000)}${"]".repeat(20_000)}`;
  const saved = await api("PUT", "/memory/checkpoints/deep", { as: t, body: { state: { note: deep } } });
  assert.equal(saved.status, 201, JSON.stringify(saved.body));
});

writerTest({
  name:
    "the fields stored beside the content are redacted too: a correction's reason, a resolution's note, a candidate's summary, compressed form and index key",
}, async (env, t) => {
  const api = memoryApi(env.sql);
  const r = await api("POST", "/memory/remember", {
    as: t,
    body: { content: "CI pushes with a deploy key.", project: "shop" },
  });
  const c = await api("POST", `/memory/${r.body.memory.id}/correct`, {
    as: t,
    body: { content: "CI pushes with a fine-grained token.", reason: `the old one was ${PAT}` },
  });
  assert.equal(c.status, 201);
  assert.equal(c.body.memory.metadata.correction_reason, "the old one was [REDACTED:github_token]");

  const [a, b] = await seedMemories(env.sql, t, [
    { content: "Node 18 in CI.", namespace: "devai/project/shop/notes" },
    { content: "Node 20 in CI.", namespace: "devai/project/shop/notes" },
  ]);
  const [k] = await env.sql<{ id: string }[]>`
    insert into public.memory_contradictions (owner_id, memory_a, memory_b, detected_by, reason)
    values (${t}, ${a!.id}, ${b!.id}, 'consolidation', 'test') returning id`;
  const resolved = await api("POST", `/memory/contradictions/${k!.id}/resolve`, {
    as: t,
    body: { resolution: "both_valid", note: `checked with ${DSN}` },
  });
  assert.equal(resolved.status, 200);
  assert.equal(
    resolved.body.contradiction.note,
    "checked with postgres://app:[REDACTED:password]@db.internal:5432/shop",
  );

  const queued = await post(env, t, "memory-dedup", {
    candidates: [{
      content: "CI deploys the shop with a GitHub token.",
      type: "semantic",
      source: "discovery",
      priority: "high",
      importance: 3,
      summary: `CI deploys with ${PAT}.`,
      compressed: `ci: token ${PAT}`,
      index_key: `ci:${PAT}`,
    }],
  });
  assert.equal(queued.status, 202);
  await drainAll(env.deps, t);
  const rows = await env.sql<
    { metadata: unknown }[]
  >`select metadata from public.devai_memories where owner_id = ${t}`;
  const notes = await env.sql<
    { note: string | null }[]
  >`select note from public.memory_contradictions where owner_id = ${t}`;
  const history = await env.sql`select * from public.memory_history where owner_id = ${t}`;
  const jobs = await env.sql`select payload, result from public.memory_jobs where owner_id = ${t}`;
  for (const [name, x] of Object.entries({ rows, notes, history, jobs })) {
    assert.deepEqual(leaked(JSON.stringify(x)), [], name);
  }
  const compression = rows.map((x) => (x.metadata as { compression?: Record<string, string> }).compression).find(
    Boolean,
  );
  assert.deepEqual([compression?.summary, compression?.compressed, compression?.index], [
    "CI deploys with [REDACTED:github_token].",
    "ci: token [REDACTED:github_token]",
    undefined,
  ]);
});

writerTest({
  name:
    "memory-dedup and memory-extract: a lineage branch and a candidate's files are redacted as remember's metadata is, and the job still runs",
}, async (env, t) => {
  const lineage = { repo: "acme/shop", branch: `ci/${PAT}`, commit: "abc1234" };
  const dedup = await post(env, t, "memory-dedup", {
    lineage,
    candidates: [{
      content: "CI signs release builds with the shop's signing key.",
      type: "semantic",
      source: "discovery",
      priority: "high",
      importance: 3,
      files: [`ci/${PAT}/sign.sh`, PAT, "ci/release.yml"],
    }],
  });
  assert.equal(dedup.status, 202);
  const extract = await post(env, t, "memory-extract", {
    session_id: "s-lineage",
    lineage,
    messages: [{ role: "user", content: "Remember that release builds run on the arm64 runners." }],
  });
  assert.equal(extract.status, 202);
  await drainAll(env.deps, t);
  const jobs = await env.sql`select kind, status, payload, result from public.memory_jobs where owner_id = ${t}`;
  assert.deepEqual(jobs.filter((j) => j.status !== "done").map((j) => [j.kind, j.status]), [], "every job ran");
  const rows = await env.sql<{ metadata: { branch?: string; files?: string[] } }[]>`
    select metadata from public.devai_memories where owner_id = ${t} order by created_at`;
  assert.equal(rows.length, 2);
  const history = await env.sql`select * from public.memory_history where owner_id = ${t}`;
  const entities = await env.sql`select * from public.memory_entities where owner_id = ${t}`;
  for (const [name, x] of Object.entries({ rows, history, jobs, entities })) {
    assert.deepEqual(leaked(JSON.stringify(x)), [], name);
  }
  assert.deepEqual(rows.map((r) => r.metadata.branch), ["ci/[REDACTED:github_token]", "ci/[REDACTED:github_token]"]);
  assert.deepEqual(rows.map((r) => r.metadata.files).filter(Boolean), [[
    "ci/[REDACTED:github_token]/sign.sh",
    "ci/release.yml",
  ]]);
  // Counted as every writer's are: dedup's branch and two paths (one dropped: nothing but the
  // token), extract's branch.
  const stats = await memoryApi(env.sql)("GET", "/memory/stats", { as: t });
  assert.deepEqual(stats.body.redactions, {
    total: 4,
    dropped: 1,
    by_kind: { github_token: 4 },
    by_writer: { dedup: 4, extract: 1 },
  });
});

writerTest({
  name: "session and thread ids are stored as sent, so one holding a secret is a 400 naming the field, writing nothing",
}, async (env, t) => {
  const api = memoryApi(env.sql);
  const before = await tenantWrites(env.sql, t);
  const cases: [Record<string, unknown>, string][] = [
    [{ session_id: PAT }, "session_id"],
    [{ thread_id: `run-${PAT}` }, "thread_id"],
    // A project and a namespace are scopes, stored as sent (the memory's namespace, its history).
    [{ project: `acme/${PAT}` }, "project"],
    [{ project: undefined, namespace: `devai/project/${PAT}/notes` }, "namespace"],
  ];
  for (const [extra, field] of cases) {
    const r = await api("POST", "/memory/remember", {
      as: t,
      body: { content: "CI deploys the shop on every tag.", project: "shop", ...extra },
    });
    assert.equal(r.status, 400, field);
    const issue = r.body.error.issues.find((i: { path: unknown[] }) => i.path.join(".") === field);
    assert.match(issue?.message ?? "", /holds a secret \(github_token\)/, field);
  }
  const res = await post(env, t, "memory-extract", {
    session_id: PAT,
    messages: [{ role: "user", content: "remember: CI deploys on tags" }],
  });
  assert.equal(res.status, 400);
  assert.match(JSON.stringify(await res.json()), /session_id.*holds a secret \(github_token\)/);
  assert.deepEqual(await tenantWrites(env.sql, t), before);
  // An id is read for secrets by their own shape only: `name:value` there is a naming scheme.
  for (const id of ["sess-2026-11-27.a", "auth:login-bug-123", "token:refresh-fix-7", "pwd:reset-flow-v2"]) {
    const ok = await api("POST", "/memory/remember", {
      as: t,
      body: { content: `CI deploys the shop on every tag (${id}).`, project: "shop", session_id: id, thread_id: id },
    });
    assert.equal(ok.status, 201, `an ordinary id passes: ${id}`);
  }
});

writerTest({
  name: "a forget's reason is redacted (memory, history and export), and dropped when it is only a secret",
}, async (env, t) => {
  const api = memoryApi(env.sql);
  const ids: string[] = [];
  for (const content of ["CI pushes with a deploy key.", "CI caches node_modules."]) {
    ids.push((await api("POST", "/memory/remember", { as: t, body: { content, project: "shop" } })).body.memory.id);
  }
  const f = await api("POST", `/memory/${ids[0]}/forget`, { as: t, body: { reason: `it leaked ${PAT}` } });
  assert.equal(f.status, 200);
  assert.equal(f.body.memory.metadata.forget_reason, "it leaked [REDACTED:github_token]");
  const only = await api("POST", `/memory/${ids[1]}/forget`, { as: t, body: { reason: KEY } });
  assert.deepEqual([only.status, only.body.memory.state, only.body.memory.metadata], [200, "soft_deleted", {}]);

  const history = await env.sql`select meta from public.memory_history where owner_id = ${t}`;
  const exported = await api("GET", "/memory/export", { as: t });
  assert.deepEqual(leaked(JSON.stringify([history, exported.body])), []);
  const stats = await api("GET", "/memory/stats", { as: t });
  // Two secrets replaced, one reason dropped as nothing but a secret.
  assert.deepEqual(stats.body.redactions, {
    total: 2,
    dropped: 1,
    by_kind: { github_token: 1, openai_key: 1 },
    by_writer: { forget: 3 },
  });
});

writerTest({
  name:
    "a remembered memory's metadata is redacted too: ids by their shape, keywords as text (a value that is only a secret is dropped, and counted); a clone URL loses its credentials",
}, async (env, t) => {
  const api = memoryApi(env.sql);
  const r = await api("POST", "/memory/remember", {
    as: t,
    body: {
      content: "CI pushes tags after the release build.",
      project: "shop",
      metadata: {
        agent_id: KEY,
        run_id: `run with ${PAT}`,
        user_id: "auth:login-bug-123",
        keywords: ["ci", PAT, "token: abc12345-x"],
        repo: `https://x-access-token:p@ss@github.com/acme/shop`,
        branch: "fix/auth=token-abc123",
        commit: "a1b2c3d4",
      },
    },
  });
  assert.equal(r.status, 201);
  assert.deepEqual(r.body.memory.metadata, {
    run_id: "run with [REDACTED:github_token]",
    user_id: "auth:login-bug-123",
    keywords: ["ci"],
    repo: "https://github.com/acme/shop",
    branch: "fix/auth=token-abc123",
    commit: "a1b2c3d4",
  });
  const history = await env.sql`select meta from public.memory_history where owner_id = ${t}`;
  const exported = await api("GET", "/memory/export", { as: t });
  assert.deepEqual(leaked(JSON.stringify([history, exported.body])), []);
  const stats = await api("GET", "/memory/stats", { as: t });
  // Ids, the repo and the branch are read as ids, keywords as text (a `token: …` keyword is one).
  assert.deepEqual(stats.body.redactions.by_kind, { github_token: 2, openai_key: 1, secret_assignment: 1 });
  assert.equal(stats.body.redactions.dropped, 3, "the agent id and two keywords, nothing but a secret");
});

writerTest({
  name:
    "remember's metadata: an id holding a blank or starting with NAME= is read as an assignment (a password or key named in it is redacted); `name:value` and a `=` further in stay an id's",
}, async (env, t) => {
  const api = memoryApi(env.sql);
  const r = await api("POST", "/memory/remember", {
    as: t,
    body: {
      content: "The staging database is rebuilt every night.",
      project: "shop",
      metadata: {
        agent_id: "DB_PASSWORD=hunter2abc",
        run_id: "password: Xk9fj2Lq",
        actor_id: "deploy OPENAI_API_KEY=sk-proj-abcdefghij",
        user_id: "token:refresh-fix-7",
        branch: "fix/auth=token-abc123",
      },
    },
  });
  assert.equal(r.status, 201);
  assert.deepEqual(r.body.memory.metadata, {
    actor_id: "deploy OPENAI_API_KEY=[REDACTED:secret_assignment]",
    user_id: "token:refresh-fix-7",
    branch: "fix/auth=token-abc123",
  });
  const history = await env.sql`select meta from public.memory_history where owner_id = ${t}`;
  assert.doesNotMatch(JSON.stringify(history), /hunter2abc|Xk9fj2Lq|abcdefghij/);
});

writerTest({
  name:
    "a repo or branch that is nothing but a secret keeps its marker (remember's metadata, a dedup lineage): with none, the memory would be project knowledge on every branch",
}, async (env, t) => {
  const api = memoryApi(env.sql);
  const r = await api("POST", "/memory/remember", {
    as: t,
    body: { content: "Release builds are signed on the CI runner.", project: "shop", metadata: { branch: PAT } },
  });
  assert.equal(r.status, 201);
  const dedup = await post(env, t, "memory-dedup", {
    lineage: { repo: PAT, branch: PAT },
    candidates: [{
      content: "The arm64 runners build the release images.",
      type: "semantic",
      source: "discovery",
      priority: "high",
      importance: 3,
    }],
  });
  assert.equal(dedup.status, 202);
  await drainAll(env.deps, t);
  const rows = await env.sql<{ metadata: { repo?: string; branch?: string } }[]>`
    select metadata from public.devai_memories where owner_id = ${t} order by created_at`;
  const marker = "[REDACTED:github_token]";
  assert.deepEqual(rows.map((m) => [m.metadata.repo, m.metadata.branch]), [[undefined, marker], [marker, marker]]);
  assert.deepEqual(leaked(JSON.stringify(rows)), []);
  // Replaced, each counted; none dropped.
  const stats = await api("GET", "/memory/stats", { as: t });
  assert.deepEqual(
    [stats.body.redactions.total, stats.body.redactions.dropped, stats.body.redactions.by_writer],
    [3, 0, { remember: 1, dedup: 2 }],
  );
});

Deno.test({
  ...realServerOnly(
    "memory-extract: a transcript holding a secret is queued when another transaction commits between its redaction count and its coverage read",
    "two transactions open at once (PGlite's one backend queues the committing one behind the POST's)",
  ),
  ...opts,
}, async () => {
  const env = await writeEnv({ withLlm: false });
  const t = newTenant();
  const LOCK = 7_342_119;
  // The POST's redaction event waits on a lock the test holds; meanwhile another transaction takes a
  // newer xid and commits. A coverage read after the event then has a snapshot whose xmax is past
  // the POST's own xid, which record_extract_part refuses (the POST was a 400).
  const fn = `public.zz_hold_redact_${t.replaceAll("-", "")}`;
  await env.sql.unsafe(`
    create function ${fn}() returns trigger language plpgsql as
      $$ begin perform pg_advisory_xact_lock(${LOCK}); return null; end $$;
    create trigger zz_hold_redact after insert on public.memory_events for each row
      when (new.owner_id = '${t}' and new.op = 'redact') execute function ${fn}();`);
  const holder = await env.sql.reserve();
  try {
    await holder`select pg_advisory_lock(${LOCK})`;
    const posting = post(env, t, "memory-extract", {
      session_id: "s-interleaved",
      messages: [{ role: "user", content: `Deploys push with ${PAT}; remember the arm64 runners.` }],
    });
    await waitUntil(
      async () =>
        (await env.sql`
        select 1 from pg_stat_activity
         where wait_event_type = 'Lock' and wait_event = 'advisory' and query ilike '%insert into public.memory_events%'`)
          .length > 0,
      "the POST's redaction event to wait on the test's lock",
      { pollMs: 20 },
    );
    await env.sql`select pg_current_xact_id()`; // a newer transaction, committed
    await holder`select pg_advisory_unlock(${LOCK})`;
    const res = await posting;
    assert.equal(res.status, 202, await res.clone().text());
    assert.equal((await res.json()).new_messages, 1);
  } finally {
    holder.release();
    await env.sql.unsafe(
      `drop trigger if exists zz_hold_redact on public.memory_events; drop function if exists ${fn}();`,
    );
    await env.close();
  }
});

writerTest({ name: "an agent token's label is stored redacted" }, async (env, t) => {
  const api = memoryApi(env.sql);
  const issued = await api("POST", "/memory/agent-tokens", {
    as: t,
    body: { agent: "coder", label: `laptop, pushes with ${PAT}` },
  });
  assert.equal(issued.status, 201);
  assert.equal(issued.body.label, "laptop, pushes with [REDACTED:github_token]");
  const listed = await api("GET", "/memory/agent-tokens", { as: t });
  assert.deepEqual(leaked(JSON.stringify(listed.body)), []);
});
