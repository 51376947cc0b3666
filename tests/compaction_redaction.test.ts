// memory-compact's redaction of the request's messages (memory-compact/redacted.ts): each message
// once a request, only as far as the prompt and the summary read it, the event loop given back
// between slices. An 8 MiB list of small JSON messages was redacted whole for the prompt and again
// by the fallback summary: 1.7 s a pass in one synchronous stretch while other tenants' requests on
// the instance waited, and the model's time ran meanwhile.
import assert from "node:assert/strict";
import { createHandler } from "../supabase/functions/memory-compact/handler.ts";
import { COMPACTION_MARK } from "../supabase/functions/memory-compact/prompt.ts";
import { MessageRedactor, READ_CHARS, TAIL_CHARS } from "../supabase/functions/memory-compact/redacted.ts";
import type { ChatMessage } from "../supabase/functions/_shared/llm.ts";
import { messageTokenCounter } from "../supabase/functions/_shared/tokens.ts";
import { reply } from "./fake_openai.ts";
import { userHeaders } from "./support/auth.ts";
import { newTenant } from "./support/seed.ts";
import { whoEndsFirst } from "./support/event-loop.ts";
import { writeEnv } from "./write_helpers.ts";

const URL_ = "http://localhost/functions/v1/memory-compact";

/** An .ini file written by a tool call, as JSON: its password is one line of an escaped string. */
const INI = JSON.stringify({
  path: "db.ini",
  content: `[db]\nhost=db\npassword=hunter2xyz\n${"; note\n".repeat(200_000)}`,
});

/** About `bytes` of turns whose assistant answers are small JSON objects, then a turn writing INI. */
function bigConversation(bytes: number): ChatMessage[] {
  const messages: ChatMessage[] = [{ role: "system", content: "You are DevAI." }];
  for (let i = 0, size = 0; size < bytes; i++) {
    const rows = Array.from({ length: 40 }, (_, j) => ({ id: i * 40 + j, name: `item ${j}: ok`, note: `k=v ${j}` }));
    const content = JSON.stringify(rows);
    messages.push({ role: "user", content: `step ${i}` }, { role: "assistant", content });
    size += content.length;
  }
  messages.push(
    {
      role: "assistant",
      content: null,
      tool_calls: [{ id: "w1", type: "function", function: { name: "write_file", arguments: INI } }],
    },
    { role: "tool", tool_call_id: "w1", content: INI },
    { role: "user", content: "What next?" },
  );
  return messages;
}

async function compact(env: Awaited<ReturnType<typeof writeEnv>>, tenant: string, body: unknown) {
  const handler = createHandler({ ...env.deps, kickWorker: () => Promise.resolve() });
  const res = await handler(
    new Request(URL_, { method: "POST", headers: await userHeaders(tenant), body: JSON.stringify(body) }),
  );
  assert.equal(res.status, 200);
  const out = await res.json();
  const [event] = await env.sql<{ meta: { redacted_chars?: number } }[]>`
    select meta from public.memory_events where owner_id = ${tenant} and op = 'compact'`;
  return { out, redacted: event!.meta.redacted_chars };
}

Deno.test("compact: each message is redacted once, only as far as the prompt and the summary read it", async () => {
  const env = await writeEnv();
  try {
    const messages = bigConversation(3_000_000);
    const sent = JSON.stringify(messages).length;
    const body = { session_id: "big", messages, trigger_tokens: 50_000, target_chunk_tokens: 8_000 };

    // The model fails: the fallback summary reads what the prompt read, and redacts no more.
    env.fake.onChat(COMPACTION_MARK, reply.error(400));
    const failed = await compact(env, newTenant(), body);
    assert.equal(failed.out.summary_mode, "extractive", JSON.stringify(failed.out).slice(0, 300));
    assert.ok(failed.redacted !== undefined && failed.redacted < sent / 10, `redacted ${failed.redacted} of ${sent}`);
    assert.ok(!failed.out.summary.includes("hunter2xyz"), failed.out.summary);
    assert.match(failed.out.summary, /write_file\(.*password=\[REDACTED:password\]/);

    env.fake.reset();
    env.fake.onChat(COMPACTION_MARK, reply.json({ summary: "The steps ran; db.ini was written.", candidates: [] }));
    const answered = await compact(env, newTenant(), body);
    assert.equal(answered.out.summary_mode, "llm", answered.out.llm_error);
    assert.ok(answered.redacted! <= failed.redacted!, `${answered.redacted} > ${failed.redacted}`);
    const prompt = JSON.stringify(env.fake.chatRequests()[0]!.body.messages);
    assert.ok(!prompt.includes("hunter2xyz"));
    assert.ok(prompt.includes("password=[REDACTED:password]"), "the .ini's start is shown, redacted");
  } finally {
    await env.close();
  }
});

Deno.test("compaction's redactor: a text read once, as far as READ_CHARS, no secret the cut splits", async () => {
  const redactor = new MessageRedactor();
  const message: ChatMessage = { role: "tool", tool_call_id: "w1", content: INI };
  const first = await redactor.message(message);
  // The password is inside a JSON string the cut leaves open: read as what it says all the same.
  assert.ok(!first.content.includes("hunter2xyz"));
  assert.deepEqual(first.counts.content, { password: 1 });
  assert.equal((await redactor.message(message)).content, first.content);
  assert.equal(redactor.work.texts, 2, "the content and the tool_call_id, once");
  assert.equal(redactor.work.chars, READ_CHARS + TAIL_CHARS + 1 + 2, "the part read, its open string closed");
  // READ_CHARS of the text as sent (a marker may be longer than what it replaced).
  assert.ok(first.content.length < READ_CHARS + 100, `${first.content.length}`);

  // A token the cut splits is no longer one the redactor knows: the tail it would be in is dropped.
  const jwt = `eyJ${"a".repeat(40)}.eyJ${"b".repeat(400)}.${"c".repeat(40)}`;
  const split = `${"word ".repeat((READ_CHARS + TAIL_CHARS - 200) / 5)}${jwt} after`;
  const { text } = await redactor.text(split);
  assert.ok(!text.includes("eyJ"), "no part of the token");
  assert.ok(text.startsWith("word word"));
});

/** 1,000 assistant messages of small JSON objects: about 1.7 MB, none long. */
const smallJsonMessages = (): ChatMessage[] =>
  Array.from({ length: 1_000 }, (_, i) => ({
    role: "assistant",
    content: JSON.stringify(Array.from({ length: 60 }, (_, j) => ({ id: i * 60 + j, note: `k=v ${j}` }))),
  }));

Deno.test("compaction's redactor: other requests are answered between its slices of work", async () => {
  const redactor = new MessageRedactor();
  assert.deepEqual(await whoEndsFirst(() => redactor.messages(smallJsonMessages()), "compaction's work"), [
    "other request",
    "compaction's work",
  ]);
  assert.ok(redactor.work.chars > 1_000_000, `${redactor.work.chars}`);
});

Deno.test("compaction's count: thousands of small messages give the event loop back (one slice a request)", async () => {
  // Each message is counted in well under a slice: a slice a text never ended.
  const messages = smallJsonMessages();
  assert.deepEqual(await whoEndsFirst(() => messageTokenCounter().prefill(messages), "compaction's work"), [
    "other request",
    "compaction's work",
  ]);
});

Deno.test("compaction's redactor: a long text whose secrets shrink it keeps its start, and no token the cut splits", async () => {
  // A request log with a bearer token a line: its redaction is a tenth of its length, so dropping
  // the redaction's last TAIL_CHARS left nothing of it for the prompt or the summary.
  const jwt = (i: number) => `eyJhbGciOiJIUzI1NiJ9.eyJ${String(i).padStart(6, "0").repeat(100)}.${"s".repeat(43)}`;
  const lines: string[] = [];
  for (let i = 0, size = 0; size < READ_CHARS + TAIL_CHARS + 30_000; i++) {
    lines.push(`${i} GET /v1/items/${i} 200 Authorization: Bearer ${jwt(i)}`);
    size += lines.at(-1)!.length + 1;
  }
  const { text, counts } = await new MessageRedactor().text(lines.join("\n"));
  assert.ok(text.startsWith("0 GET /v1/items/0 200 Authorization: Bearer [REDACTED:jwt]\n1 GET"), text.slice(0, 200));
  assert.ok(text.length <= READ_CHARS, `${text.length}`);
  assert.ok(!text.replaceAll(/\[REDACTED:[a-z_]+\]/g, "").includes("eyJ"), "no part of a token");
  assert.ok(counts.jwt! > 50, JSON.stringify(counts));
});
