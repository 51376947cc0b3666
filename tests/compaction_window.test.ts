// memory-compact's prompt stays within target_chunk_tokens however the compacted part is made: one
// turn whose tool calls brought back dozens of long results was shown whole (the newest unit
// always was), each result up to 4,000 tokens: 40 results made a 160k-token prompt, which a
// 128k-token model refuses, leaving an extractive summary.
import assert from "node:assert/strict";
import type { ChatMessage } from "../supabase/functions/_shared/llm.ts";
import { countMessageTokens, countTokens } from "../supabase/functions/_shared/tokens.ts";
import { BLOCK_OVERHEAD_TOKENS, MIN_SHOWN_TOKENS, splitForModel } from "../supabase/functions/memory-compact/chunk.ts";
import { createHandler } from "../supabase/functions/memory-compact/handler.ts";
import { COMPACTION_MARK } from "../supabase/functions/memory-compact/prompt.ts";
import { reply } from "./fake_openai.ts";
import { userHeaders } from "./support/auth.ts";
import { newTenant } from "./support/seed.ts";
import { writeEnv } from "./write_helpers.ts";

/** A turn of `n` calls of `name` at once (ids `<name>_<i>`), and their results (`result(i)`). */
function callsTurn(
  n: number,
  name: string,
  args: (i: number) => unknown,
  result: (i: number) => string,
): ChatMessage[] {
  const ids = Array.from({ length: n }, (_, i) => `${name}_${i}`);
  return [
    {
      role: "assistant",
      content: null,
      tool_calls: ids.map((id, i) => ({
        id,
        type: "function" as const,
        function: { name, arguments: JSON.stringify(args(i)) },
      })),
    },
    ...ids.map((id, i): ChatMessage => ({ role: "tool", tool_call_id: id, content: result(i) })),
  ];
}

/** One turn: the agent reads `files` files at once, each result about 3,000 tokens. */
function wideTurn(files: number): ChatMessage[] {
  return [
    { role: "system", content: "You are DevAI." },
    { role: "user", content: "Task: review every module of src/ for the date bug." },
    ...callsTurn(
      files,
      "read_file",
      (i) => ({ path: `src/module${i}.ts` }),
      (i) =>
        `// src/module${i}.ts: parses dates\n${
          Array.from({ length: 200 }, (_, j) => `export const d${i}_${j} = parse("2026-11-${j % 28 + 1}");`).join("\n")
        }`,
    ),
    { role: "user", content: "Which modules have the bug?" },
  ];
}

Deno.test("compact: one turn of dozens of long tool results is shown within target_chunk_tokens", async () => {
  const env = await writeEnv();
  try {
    env.fake.onChat(COMPACTION_MARK, reply.json({ summary: "The 40 modules were read.", candidates: [] }));
    const messages = wideTurn(40);
    const body = { session_id: "wide", messages, trigger_tokens: 20_000, target_chunk_tokens: 8_000 };
    const res = await createHandler({ ...env.deps, kickWorker: () => Promise.resolve() })(
      new Request("http://localhost/functions/v1/memory-compact", {
        method: "POST",
        headers: await userHeaders(newTenant()),
        body: JSON.stringify(body),
      }),
    );
    const out = await res.json();
    assert.equal(out.summary_mode, "llm", out.llm_error);
    assert.ok(out.tokens_before > 100_000, `${out.tokens_before}`);
    const prompt = String(env.fake.chatRequests()[0]!.body.messages.at(-1).content);
    // The turn's newest results, each cut to its start, within the target; the rest as lines (4,000 tokens at most).
    assert.ok(countTokens(prompt) < 8_000 + 4_000 + 500, `prompt: ${countTokens(prompt)} tokens`);
    for (const i of [0, 39]) assert.match(prompt, new RegExp(`src/module${i}\\.ts: parses dates`));
    assert.match(prompt, /Tool calls: read_file\(\{"path":"src\/module0\.ts"\}\).*\(\+\d+ more\)/);
  } finally {
    await env.close();
  }
});

Deno.test("splitForModel: a unit alone over the part is cut to its newest messages, each at least MIN_SHOWN_TOKENS", () => {
  const messages = wideTurn(40).slice(1, -1); // the request and the wide turn
  const tokensOf = (m: ChatMessage) => Math.min(countMessageTokens(m), 4_000);
  for (const max of [500, 8_000, 60_000]) {
    const { older, shown, messageTokens } = splitForModel(messages, max, tokensOf, 4_000);
    assert.deepEqual([...older, ...shown], messages, "every message, once, in order");
    assert.ok(messageTokens >= MIN_SHOWN_TOKENS);
    assert.ok(
      shown.length * (messageTokens + BLOCK_OVERHEAD_TOKENS) <= max,
      `${max}: ${shown.length} x ${messageTokens}`,
    );
    assert.equal(shown.at(-1), messages.at(-1), "the newest result is shown");
  }
  // A part the newest unit fits: shown whole, as before.
  const small = wideTurn(2).slice(1, -1);
  assert.deepEqual(splitForModel(small, 60_000, tokensOf, 4_000), { older: [], shown: small, messageTokens: 4_000 });
});

Deno.test("compact: the extractive summary keeps the request of a turn of two hundred tool calls", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const messages: ChatMessage[] = [
      { role: "system", content: "You are DevAI." },
      { role: "user", content: "Task: move every call site of parseDate to the new date module." },
      ...callsTurn(200, "edit_file", (i) => ({
        path: `src/features/feature${i}/components/Widget${i}/index.tsx`,
        old: "parseDate(",
        new: "dates.parse(",
      }), () => " "),
      { role: "user", content: `Now run the tests. ${"Context: ".repeat(2_000)}` },
    ];
    const res = await createHandler({ ...env.deps, kickWorker: () => Promise.resolve() })(
      new Request("http://localhost/functions/v1/memory-compact", {
        method: "POST",
        headers: await userHeaders(newTenant()),
        body: JSON.stringify({ session_id: "calls", messages, trigger_tokens: 5_000 }),
      }),
    );
    const out = await res.json();
    assert.equal(out.summary_mode, "extractive", JSON.stringify(out).slice(0, 300));
    // One line of the calls (the first ones and how many more), and the request before them.
    assert.match(out.summary, /User: Task: move every call site of parseDate/);
    assert.match(
      out.summary,
      /- Tool calls: edit_file\(\{"path":"src\/features\/feature0\/components\/Widget0\/index\.tsx".*\(\+\d+ more\)/,
    );
  } finally {
    await env.close();
  }
});
