// A NUL (U+0000), which Postgres's text and jsonb cannot hold, is a 400 naming the field on every
// route that takes the caller's text, and writes nothing. Before, a checkpoint's state, a
// transcript message's fields other than its text content (name, tool_calls, tool_call_id, a text
// part of a content array, a field of its own) and memory-dedup's summary reached the database
// and came back as its 400 naming nothing ("the request contains characters that cannot be
// stored"), as did `GET memory/entities?q=`; memory-dedup now removes the character from a
// summary or compressed form as it does from the content (unsafe-characters.ts). A NUL in a
// memory-dedup candidate's `files` or `index_key` dropped the whole list or the key without a word
// (the request answered 202): these are names, so they are refused as sent, as remember's files are.
import assert from "node:assert/strict";
import { userToken } from "./support/auth.ts";
import { startTestServer } from "./support/http_server.ts";
import { newTenant, tenantWrites, testSql } from "./support/seed.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const NUL = "\u0000";

Deno.test({ name: "a NUL is a 400 naming where it is, on every route, and writes nothing", ...opts }, async () => {
  const server = await startTestServer({ worker: false });
  const sql = testSql();
  try {
    const tenant = newTenant();
    const headers = { authorization: `Bearer ${await userToken(tenant)}`, "content-type": "application/json" };
    const send = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${server.functionsUrl}/${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      // deno-lint-ignore no-explicit-any -- the error shape is asserted below
      return { status: res.status, body: await res.json() as any };
    };
    const writes = async () => {
      const [jobs] = await sql`select count(*)::int as n from public.memory_jobs where owner_id = ${tenant}`;
      const [checkpoints] =
        await sql`select count(*)::int as n from public.supervisor_checkpoints where owner_id = ${tenant}`;
      return { ...(await tenantWrites(sql, tenant)), jobs: jobs!.n, checkpoints: checkpoints!.n };
    };
    const before = await writes();
    const message = (m: Record<string, unknown>) => ({ session_id: "s1", messages: [{ role: "user", ...m }] });
    const candidate = {
      content: "The deploy script runs from the repository root",
      type: "procedural",
      source: "discovery",
      priority: "medium",
      importance: 3,
    };
    const dedup = (c: Record<string, unknown>) => ({ candidates: [{ ...candidate, ...c }] });
    const cases: [string, string, unknown, string][] = [
      ["PUT", "memory/checkpoints/t1", { state: { plan: `step${NUL}1` } }, "state.plan"],
      ["PUT", "memory/checkpoints/t1", { state: { steps: [{ [`k${NUL}`]: 1 }] } }, `state.steps.0.k${NUL}`],
      ["POST", "memory-extract", message({ content: "hi", name: `me${NUL}` }), "messages.0.name"],
      [
        "POST",
        "memory-extract",
        message({ content: [{ type: "text", text: `a${NUL}b` }] }),
        "messages.0.content.0.text",
      ],
      ["POST", "memory-extract", message({ content: "hi", client: { tag: `x${NUL}` } }), "messages.0.client.tag"],
      ["POST", "memory-extract", {
        session_id: "s2",
        messages: [
          { role: "user", content: "run it" },
          {
            role: "assistant",
            content: null,
            tool_calls: [{ id: `c${NUL}`, type: "function", function: { name: "sh", arguments: "{}" } }],
          },
        ],
      }, "messages.1.tool_calls.0.id"],
      ["POST", "memory-extract", message({ content: `hi${NUL}there` }), "messages.0.content"],
      ["POST", "memory-compact", message({ content: "hi", name: `me${NUL}` }), "messages.0.name"],
      ["GET", `memory/entities?q=a${encodeURIComponent(NUL)}b`, undefined, "q"],
      ["POST", "memory-dedup", dedup({ files: ["README.md", `scripts/deploy${NUL}.sh`] }), "candidates.0.files.1"],
      ["POST", "memory-dedup", dedup({ index_key: `deploy${NUL}root` }), "candidates.0.index_key"],
      // Not a NUL, dropped as silently before: a key of two words is no key.
      ["POST", "memory-dedup", dedup({ index_key: "deploy root" }), "candidates.0.index_key"],
      // Nor a NUL: a summary or compressed form over its level's length was dropped without a word.
      ["POST", "memory-dedup", dedup({ summary: "s".repeat(281) }), "candidates.0.summary"],
      ["POST", "memory-dedup", dedup({ compressed: "c".repeat(121) }), "candidates.0.compressed"],
    ];
    for (const [method, path, body, field] of cases) {
      const r = await send(method, path, body);
      const what = `${method} ${path} ${JSON.stringify(body)}`;
      assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error.code, "invalid_request", what);
      assert.deepEqual((r.body.error.issues ?? []).map((i: { path: unknown[] }) => i.path.join(".")), [field], what);
    }
    assert.deepEqual(await writes(), before, "nothing written");

    // memory-dedup: an agent's candidate keeps its memory, the character removed, as from its content.
    const queued = await send(
      "POST",
      "memory-dedup",
      dedup({ summary: `Deploy from the ${NUL}root`, compressed: `deploy:${NUL}root` }),
    );
    assert.equal(queued.status, 202, JSON.stringify(queued.body));
    const [job] = await sql<{ payload: { candidates: { summary?: string; compressed?: string }[] } }[]>`
      select payload from public.memory_jobs where id = ${queued.body.job_id}`;
    const stored = job!.payload.candidates[0]!;
    assert.deepEqual([stored.summary, stored.compressed], ["Deploy from the root", "deploy:root"]);
  } finally {
    await sql.end();
    await server.close();
  }
});
