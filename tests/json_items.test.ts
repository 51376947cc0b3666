// A body's JSON items (values and keys) are counted before it is parsed (json-text.ts,
// docs/operations.md#json-items): JSON.parse never gives the event loop back, and what it and every
// later walk cost is per item, so an 8 MiB body of `{}` (2.9 million items) held every other
// tenant's requests for seconds. Past MAX_JSON_ITEMS a body is a 413 before it is parsed, nothing
// written; a transcript of 20,000 plain messages stays well inside.
import assert from "node:assert/strict";
import { MAX_JSON_ITEMS, parseJsonBody } from "../supabase/functions/_shared/http.ts";
import { ExtractRequestSchema } from "../supabase/functions/memory-extract/handler.ts";
import { CountingSlice, whoEndsFirst } from "./support/event-loop.ts";
import { checkJsonText } from "../supabase/functions/_shared/json-text.ts";
import { userHeaders } from "./support/auth.ts";
import { startTestServer } from "./support/http_server.ts";
import { newTenant, testSql } from "./support/seed.ts";

Deno.test("json items: commas, colons and opening brackets outside strings are counted, up to the bound", () => {
  const cases: [string, number, boolean][] = [
    ['{"a":1}', 2, false],
    ['{"a":1}', 1, true],
    ['["a,b:c{[", "d"]', 2, false], // inside strings they are text
    ['["a,b:c{[", "d"]', 1, true],
    ["[{},{},{}]", 6, false],
    ["[{},{},{}]", 5, true],
  ];
  for (const [text, max, tooMany] of cases) {
    assert.equal(checkJsonText(text, 64, false, max).tooMany ?? false, tooMany, `${text} at ${max}`);
  }
  // A transcript at memory-extract's 20,000 messages, each with a tool call, fits.
  const message = {
    role: "assistant",
    content: "ok",
    tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: "{}" } }],
  };
  const transcript = JSON.stringify({ session_id: "s", messages: Array.from({ length: 10_000 }, () => message) });
  assert.equal(checkJsonText(transcript, 64, false, MAX_JSON_ITEMS).tooMany, undefined);
});

Deno.test("json items: a body of more than MAX_JSON_ITEMS items is a 413 before it is parsed, nothing written", async () => {
  const server = await startTestServer({ worker: false });
  const sql = testSql(1);
  const tenant = newTenant();
  const headers = { ...await userHeaders(tenant), "content-type": "application/json" };
  // 300 KB: far inside the heavy routes' 8 MiB (a 256 KiB route cannot hold MAX_JSON_ITEMS: at most
  // two items in three bytes).
  const many = `[${Array.from({ length: MAX_JSON_ITEMS / 2 + 1 }, () => "{}").join(",")}]`;
  const bodies: [string, string, string][] = [
    ["POST", "memory-extract", `{"session_id":"s-items","messages":[{"role":"user","content":"hi","x":${many}}]}`],
    ["POST", "memory-compact", `{"messages":[{"role":"user","content":"hi","x":${many}}]}`],
    ["PUT", "memory/checkpoints/items", `{"state":{"x":${many}}}`],
  ];
  try {
    for (const [method, path, body] of bodies) {
      const res = await fetch(`${server.functionsUrl}/${path}`, { method, headers, body });
      const answer = await res.json();
      assert.equal(res.status, 413, `${path}: ${JSON.stringify(answer)}`);
      assert.equal(answer.error.code, "payload_too_large");
      assert.match(answer.error.message, new RegExp(`more than ${MAX_JSON_ITEMS} JSON items`));
    }
    const [written] = await sql<{ jobs: number; checkpoints: number }[]>`
      select (select count(*)::int from public.memory_jobs where owner_id = ${tenant}) as jobs,
             (select count(*)::int from public.supervisor_checkpoints where owner_id = ${tenant}) as checkpoints`;
    assert.deepEqual(written, { jobs: 0, checkpoints: 0 });
  } finally {
    await sql.end();
    await server.close();
  }
});

Deno.test("json items: a body's scan, parse and validation are three stretches, another request answered between them", async () => {
  // Each takes tens of ms at the bound (bench/event-loop-stretches.ts): held for their sum, another
  // tenant's request waited behind all three.
  const body = JSON.stringify({ session_id: "s", messages: [{ role: "user", content: "hi" }] });
  const slice = new CountingSlice();
  const request = () =>
    new Request("http://local/memory-extract", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
  const order = await whoEndsFirst(() => parseJsonBody(request(), ExtractRequestSchema, 1 << 20, { slice }), "parse");
  assert.deepEqual(order, ["other request", "parse"]);
  assert.equal(slice.yields, 2, "after the scan and after the parse");
});
