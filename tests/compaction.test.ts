// memory-compact on a 200k-token synthetic agent conversation with tool calls: under the trigger
// afterwards, tool calls never separated from their results, one LLM call, progressive summaries
// stored as the session's layer-2 record, candidates queued for dedup; and the pure chunker.
import assert from "node:assert/strict";
import type { ChatMessage } from "../supabase/functions/_shared/llm.ts";
import { countConversationTokens, countTokens } from "../supabase/functions/_shared/tokens.ts";
import { groupUnits, MARKER, planCompaction } from "../supabase/functions/memory-compact/chunk.ts";
import { createHandler } from "../supabase/functions/memory-compact/handler.ts";
import { COMPACTION_MARK } from "../supabase/functions/memory-compact/prompt.ts";
import { reply } from "./fake_openai.ts";
import { userHeaders } from "./support/auth.ts";
import { newTenant } from "./support/seed.ts";
import { jobsOf, writeEnv } from "./write_helpers.ts";

const URL_ = "http://localhost/functions/v1/memory-compact";

/** One compaction as the tenant, with no worker kicked; its answer's body. */
async function compactAs(env: { deps: Parameters<typeof createHandler>[0] }, tenant: string, body: unknown) {
  const handler = createHandler({ ...env.deps, kickWorker: () => Promise.resolve() });
  const res = await handler(
    new Request(URL_, { method: "POST", headers: await userHeaders(tenant), body: JSON.stringify(body) }),
  );
  return await res.json();
}

/** About `turns` × 4.4k tokens: user asks, assistant calls two tools, results are long, assistant reports. */
function syntheticConversation(turns: number): ChatMessage[] {
  const messages: ChatMessage[] = [{ role: "system", content: "You are DevAI, a coding agent." }];
  for (let t = 0; t < turns; t++) {
    const fileDump = Array.from({ length: 170 }, (_, j) => `export const value${t}_${j} = compute(${j}, "file-${t}");`)
      .join("\n");
    messages.push({ role: "user", content: `Task ${t}: inspect module ${t} and fix the failing test.` });
    messages.push({
      role: "assistant",
      content: null,
      tool_calls: [
        {
          id: `call_${t}_a`,
          type: "function",
          function: { name: "read_file", arguments: JSON.stringify({ path: `src/module${t}.ts` }) },
        },
        {
          id: `call_${t}_b`,
          type: "function",
          function: { name: "bash", arguments: JSON.stringify({ cmd: `npm test -- module${t}` }) },
        },
      ],
    });
    messages.push({ role: "tool", tool_call_id: `call_${t}_a`, content: fileDump });
    messages.push({
      role: "tool",
      tool_call_id: `call_${t}_b`,
      content: `FAIL module${t}.test.ts\n${fileDump.slice(0, 2000)}`,
    });
    messages.push({ role: "assistant", content: `Fixed module ${t}: the import path was wrong.` });
  }
  return messages;
}

/** Every tool result directly follows (within its unit) the assistant message that called it, and every call has its result. */
function assertToolPairsIntact(messages: ChatMessage[]) {
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    if (m.role === "assistant" && m.tool_calls?.length) {
      const ids = m.tool_calls.map((c) => c.id);
      const following = messages.slice(i + 1, i + 1 + ids.length);
      assert.deepEqual(
        following.map((f) => f.role === "tool" ? f.tool_call_id : `<${f.role}>`),
        ids,
        `results of ${ids} follow their call`,
      );
    }
    if (m.role === "tool") {
      let j = i - 1;
      while (j >= 0 && messages[j]!.role === "tool") j--;
      const caller = messages[j];
      assert.ok(
        caller?.role === "assistant" && caller.tool_calls?.some((c) => c.id === m.tool_call_id),
        `tool result ${m.tool_call_id} has its call`,
      );
    }
  }
}

Deno.test("chunker: tool calls stay with their results, the system prompt is never compacted", () => {
  const msgs = syntheticConversation(6);
  const units = groupUnits(msgs.slice(1));
  assert.equal(units.length, 6 * 3);
  assert.equal(units[1]!.length, 3); // assistant + 2 tool results
  const total = countConversationTokens(msgs);
  for (const target of [100, 3000, 9000, 15000]) {
    const plan = planCompaction(msgs, {
      totalTokens: total,
      triggerTokens: total - 10,
      targetChunkTokens: target,
      summaryReserveTokens: 0,
    })!;
    assert.equal(plan.head.length, 1);
    assert.equal(plan.head[0]!.role, "system");
    assert.notEqual(plan.rest[0]!.role, "tool", `target ${target}: rest never starts with an orphan tool result`);
    assertToolPairsIntact([...plan.chunk]);
    assertToolPairsIntact([...plan.rest]);
    assert.ok(plan.rest.length > 0);
  }
});

Deno.test("compact: a 200k-token conversation is compacted under the trigger in one LLM call, pairs intact", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    const messages = syntheticConversation(58);
    const before = countConversationTokens(messages);
    assert.ok(before > 200_000, `synthetic conversation has ${before} tokens`);
    env.fake.onChat(
      COMPACTION_MARK,
      reply.json({
        summary: "Modules 0-15 were fixed; each failure was a wrong import path. Next: module 14.",
        candidates: [{
          content: "Failing module tests in this repo are usually caused by wrong import paths.",
          type: "semantic",
          namespace: "devai/project/taskforge/fixes",
          source: "error_resolution",
          priority: "high",
          importance: 4,
        }],
      }),
    );
    let kicks = 0;
    const handler = createHandler({ ...env.deps, kickWorker: () => (kicks++, Promise.resolve()) });
    const res = await handler(
      new Request(URL_, {
        method: "POST",
        headers: await userHeaders(tenant),
        body: JSON.stringify({ session_id: "long-1", messages, project: "taskforge" }),
      }),
    );
    assert.equal(res.status, 200);
    const out = await res.json();
    assert.equal(out.compacted, true);
    assert.equal(out.summary_mode, "llm");
    assert.ok(out.tokens_after < 160_000, `after: ${out.tokens_after}`);
    assert.equal(countConversationTokens(out.messages), out.tokens_after);
    assert.equal(out.messages[0].role, "system");
    assert.ok(out.messages[1].content.startsWith(MARKER));
    assert.match(out.messages[1].content, /Modules 0-15 were fixed/);
    assertToolPairsIntact(out.messages);
    // The untouched tail is exactly the original's tail.
    const tail = out.messages.slice(2);
    assert.deepEqual(tail, messages.slice(messages.length - tail.length));
    assert.equal(out.compacted_messages + tail.length + 1, messages.length);

    assert.equal(env.fake.chatRequests().length, 1, "ONE LLM call");
    const prompt = String(env.fake.chatRequests()[0]!.body.messages.at(-1).content);
    const calls = [...prompt.matchAll(/\[call (call_\d+_[ab])\]/g)].map((m) => m[1]);
    const results = [...prompt.matchAll(/\[tool result for (call_\d+_[ab])\]/g)].map((m) => m[1]);
    assert.deepEqual(results, calls, "the LLM saw every call with its result");

    const [summary] = await env
      .sql`select summary, compactions from public.memory_session_summaries where owner_id = ${tenant} and session_id = 'long-1'`;
    assert.equal(summary!.compactions, 1);
    const jobs = await jobsOf(env.sql, tenant);
    assert.equal(jobs.length, 1);
    assert.equal(jobs[0]!.kind, "dedup");
    assert.match(jobs[0]!.idempotency_key, /^compact:long-1:[0-9a-f]{64}$/);
    assert.equal(kicks, 1);

    // Progressive: the next compaction sends the stored summary and replaces it with the merged one.
    env.fake.reset();
    env.fake.onChat("PRIOR SUMMARY", reply.json({ summary: "Modules 0-27 fixed (merged).", candidates: [] }));
    const grown = [...out.messages, ...syntheticConversation(20).slice(1)];
    const res2 = await handler(
      new Request(URL_, {
        method: "POST",
        headers: await userHeaders(tenant),
        body: JSON.stringify({ session_id: "long-1", messages: grown }),
      }),
    );
    const out2 = await res2.json();
    assert.equal(out2.compacted, true);
    assert.match(
      String(env.fake.chatRequests()[0]!.body.messages.at(-1).content),
      /PRIOR SUMMARY:\nModules 0-15 were fixed/,
    );
    assert.equal(
      out2.messages.filter((m: ChatMessage) => m.role === "user" && String(m.content).startsWith(MARKER)).length,
      1,
      "one marker",
    );
    const [merged] = await env
      .sql`select summary, compactions from public.memory_session_summaries where owner_id = ${tenant} and session_id = 'long-1'`;
    assert.equal(merged!.summary, "Modules 0-27 fixed (merged).");
    assert.equal(merged!.compactions, 2);
  } finally {
    await env.close();
  }
});

Deno.test("compact: under the trigger the messages come back unchanged, with no LLM call", async () => {
  const env = await writeEnv();
  try {
    const handler = createHandler({ ...env.deps, kickWorker: () => Promise.resolve() });
    const messages = syntheticConversation(2);
    const res = await handler(
      new Request(URL_, {
        method: "POST",
        headers: await userHeaders(newTenant()),
        body: JSON.stringify({ session_id: "short", messages }),
      }),
    );
    const out = await res.json();
    assert.equal(out.compacted, false);
    assert.deepEqual(out.messages, messages);
    assert.equal(env.fake.chatRequests().length, 0);
  } finally {
    await env.close();
  }
});

Deno.test("compact: without an LLM an extractive summary still brings the context under the trigger", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const handler = createHandler({ ...env.deps, kickWorker: () => Promise.resolve() });
    const messages = syntheticConversation(12);
    const res = await handler(
      new Request(URL_, {
        method: "POST",
        headers: await userHeaders(newTenant()),
        body: JSON.stringify({ session_id: "nollm", messages, trigger_tokens: 30_000, target_chunk_tokens: 10_000 }),
      }),
    );
    const out = await res.json();
    assert.equal(out.compacted, true);
    assert.equal(out.summary_mode, "extractive");
    assert.ok(out.tokens_after < 30_000, `after: ${out.tokens_after}`);
    assert.match(out.summary, /User: Task 0/);
    assertToolPairsIntact(out.messages);
  } finally {
    await env.close();
  }
});

Deno.test("compact: bad input is a 4xx that writes nothing; the same tenant's valid request writes", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const handler = createHandler({ ...env.deps, kickWorker: () => Promise.resolve() });
    const tenant = newTenant();
    const headers = await userHeaders(tenant);
    const long = syntheticConversation(12);
    for (
      const body of [
        { session_id: "x", messages: [] },
        { session_id: "x", messages: [{ role: "assistant", tool_calls: [{ id: "1", type: "function" }] }] },
        { session_id: "x", messages: [{ role: "user", content: "hi" }], trigger_tokens: 5 },
        // A conversation long enough to compact, with one message the schema refuses.
        { session_id: "x", messages: [...long, { role: "robot", content: "hi" }], trigger_tokens: 30_000 },
      ]
    ) {
      const res = await handler(new Request(URL_, { method: "POST", headers, body: JSON.stringify(body) }));
      assert.equal(res.status, 400, JSON.stringify(body).slice(0, 200));
    }
    const written = async () => {
      const [row] = await env.sql<{ summaries: number; events: number }[]>`
        select (select count(*)::int from public.memory_session_summaries where owner_id = ${tenant}) as summaries,
               (select count(*)::int from public.memory_events where owner_id = ${tenant}) as events`;
      return { ...row!, jobs: (await jobsOf(env.sql, tenant)).length };
    };
    assert.deepEqual(await written(), { summaries: 0, events: 0, jobs: 0 });
    // The control: the same tenant's valid request of that conversation writes its summary and event.
    const res = await handler(
      new Request(URL_, {
        method: "POST",
        headers,
        body: JSON.stringify({ session_id: "x", messages: long, trigger_tokens: 30_000, target_chunk_tokens: 10_000 }),
      }),
    );
    assert.equal((await res.json()).compacted, true);
    const after = await written();
    assert.equal(after.summaries, 1);
    assert.ok(after.events >= 1, JSON.stringify(after));
  } finally {
    await env.close();
  }
});

Deno.test("compact: the extractive summary holds no secret its lines would cut or run together", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const tenant = newTenant();
    const key = `sk-proj-${"AbCd1234".repeat(8)}`;
    // A YAML password is one alone on its line; a line's 300 characters end inside the key.
    const config = "config.yml:\ndatabase:\n  password: hunter2\n  host: db\n";
    const messages = [
      { role: "system", content: "You are DevAI, a coding agent." },
      { role: "user", content: `${"a".repeat(290)} ${key}` },
      {
        role: "assistant",
        content: null,
        tool_calls: [{
          id: "c1",
          type: "function",
          function: { name: "bash", arguments: JSON.stringify({ cmd: "cat config.yml" }) },
        }],
      },
      { role: "tool", tool_call_id: "c1", content: config },
      { role: "assistant", content: `${config}${"filler ".repeat(800)}` },
      { role: "user", content: `next ${"filler ".repeat(800)}` },
    ];
    const out = await compactAs(env, tenant, { session_id: "secrets", messages, trigger_tokens: 1_000 });
    assert.equal(out.summary_mode, "extractive", JSON.stringify(out).slice(0, 300));
    const [stored] = await env.sql<{ summary: string }[]>`
      select summary from public.memory_session_summaries where owner_id = ${tenant} and session_id = 'secrets'`;
    for (const text of [out.summary as string, stored!.summary]) {
      assert.ok(!text.includes("hunter2"), text);
      assert.ok(!text.includes("sk-proj-AbCd"), text);
      assert.match(text, /password: \[REDACTED:password\] host: db/);
    }
  } finally {
    await env.close();
  }
});

Deno.test("compact: a list far over the trigger shows the model the chunk's newest part, the older part as lines", async () => {
  const env = await writeEnv();
  try {
    env.fake.onChat(COMPACTION_MARK, reply.json({ summary: "Modules 0-24 were fixed.", candidates: [] }));
    const messages = syntheticConversation(30);
    const body = { session_id: "far", messages, trigger_tokens: 20_000, target_chunk_tokens: 5_000 };
    const out = await compactAs(env, newTenant(), body);
    assert.ok(out.tokens_before > 100_000, `before: ${out.tokens_before}`);
    assert.equal(out.summary_mode, "llm", out.llm_error);
    assert.ok(out.tokens_after < 20_000, `after: ${out.tokens_after}`);
    assert.equal(env.fake.chatRequests().length, 1, "ONE LLM call");
    const prompt = String(env.fake.chatRequests()[0]!.body.messages.at(-1).content);
    // The chunk's newest ~5k tokens in full (every message of up to 4k tokens), the older part
    // as lines under the prior summary: not the ~90k tokens of the whole chunk.
    assert.ok(countTokens(prompt) < 5_000 + 4_000 + 500, `prompt: ${countTokens(prompt)} tokens`);
    assert.match(
      prompt,
      /^PRIOR SUMMARY:\nRequests, tool calls and outcomes of the oldest part[^]*User: Task 10: inspect module 10/,
    );
    // The chunk's newest message (after the system prompt) is in the prompt whole.
    const newest = String(messages[out.compacted_messages]!.content);
    assert.ok(prompt.includes(newest), newest);
  } finally {
    await env.close();
  }
});

Deno.test("compact: the extractive summary keeps the prior summary however many lines the part has", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const tenant = newTenant();
    const turns = Array.from({ length: 60 }, (_, i) => [
      { role: "user", content: `Task ${i}: ${"please look at the file ".repeat(60)}` },
      { role: "assistant", content: `Done ${i}: ${"it was fixed ".repeat(60)}` },
    ]).flat();
    // What earlier compactions replaced: the summary the conversation carries.
    const marker = { role: "user", content: `${MARKER}\nThe deploy uses fly.io; modules 0-3 are done.` };
    const messages = [{ role: "system", content: "You are DevAI." }, marker, ...turns];
    const out = await compactAs(env, tenant, { session_id: "prior", messages, trigger_tokens: 5_000 });
    assert.equal(out.summary_mode, "extractive");
    assert.match(out.summary, /older lines omitted/, "a part of more lines than the summary holds");
    const [stored] = await env.sql<{ summary: string }[]>`
      select summary from public.memory_session_summaries where owner_id = ${tenant} and session_id = 'prior'`;
    for (const text of [out.summary as string, stored!.summary]) {
      assert.match(text, /^Earlier: The deploy uses fly\.io; modules 0-3 are done\.$/m);
    }
    assert.equal(out.messages.filter((m: ChatMessage) => String(m.content).startsWith(MARKER)).length, 1);
  } finally {
    await env.close();
  }
});

Deno.test("compact: a model that hangs gets one request's time, then the summary is extractive", async () => {
  const env = await writeEnv(); // LLM_TIMEOUT_MS 2 s, three retries
  try {
    const messages = [
      { role: "system", content: "You are DevAI." },
      { role: "user", content: `Task 1: ${"please look at the file ".repeat(300)}` },
      { role: "assistant", content: `Done 1: ${"it was fixed ".repeat(300)}` },
      { role: "user", content: "Task 2: next" },
    ];
    env.fake.onChat(COMPACTION_MARK, reply.hang());
    const hung = await compactAs(env, newTenant(), { session_id: "hang", messages, trigger_tokens: 1_000 });
    assert.equal(hung.summary_mode, "extractive");
    assert.match(hung.summary, /User: Task 1/);
    // One request, not the client's four (4 x LLM_TIMEOUT_MS and the backoff: 243 s by default).
    assert.equal(env.fake.chatRequests().length, 1);

    // A quick transient failure is still retried within that time.
    env.fake.reset();
    env.fake.onChat(COMPACTION_MARK, [reply.error(503), reply.json({ summary: "Task 1 done.", candidates: [] })]);
    const retried = await compactAs(env, newTenant(), { session_id: "retry", messages, trigger_tokens: 1_000 });
    assert.equal(retried.summary_mode, "llm", retried.llm_error);
    assert.equal(env.fake.chatRequests().length, 2);
  } finally {
    await env.close();
  }
});
