// memory-compact keeps one running summary a session, and a session stays on the thread its first
// compaction named (as its episodes do, README "POST memory/episodes"): a second thread reusing the
// session id had its conversation compacted with the first thread's summary as its prior, and the
// merged summary returned to it and stored over the first's. A compaction sent again starts from
// the summary before it: it was merged into its own result, the part summarised twice.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createHandler } from "../supabase/functions/memory-compact/handler.ts";
import { COMPACTION_MARK } from "../supabase/functions/memory-compact/prompt.ts";
import { reply } from "./fake_openai.ts";
import { userHeaders } from "./support/auth.ts";
import { withTenant } from "../supabase/functions/_shared/db.ts";
import type { HttpError } from "../supabase/functions/_shared/http.ts";
import { writeSessionSummary } from "../supabase/functions/memory-compact/session-summary.ts";
import { newTenant, testSql } from "./support/seed.ts";
import { writeEnv } from "./write_helpers.ts";

const URL_ = "http://localhost/functions/v1/memory-compact";
const hashOf = (n: number) => createHash("sha256").update(String(n)).digest("hex");

function conversation(topic: string) {
  return [
    { role: "system", content: "You are DevAI." },
    { role: "user", content: `Task: ${topic} ${"please look at the file ".repeat(300)}` },
    { role: "assistant", content: `Done: ${"it was fixed ".repeat(300)}` },
    { role: "user", content: "next" },
  ];
}

Deno.test("compact: a session stays on the thread its first compaction named; another thread's is a 409", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    const handler = createHandler({ ...env.deps, kickWorker: () => Promise.resolve() });
    /** A compaction of `topic`'s conversation in session s1, on `thread_id`. */
    const compact = async (thread_id: string | undefined, topic = thread_id ?? "billing") => {
      const body = { session_id: "s1", thread_id, messages: conversation(topic), trigger_tokens: 1_000 };
      const res = await handler(
        new Request(URL_, { method: "POST", headers: await userHeaders(tenant), body: JSON.stringify(body) }),
      );
      return { status: res.status, body: await res.json() };
    };
    const summaries = () =>
      env.sql<{ summary: string; thread_id: string | null; compactions: number }[]>`
        select summary, thread_id, compactions from public.memory_session_summaries where owner_id = ${tenant}`;
    env.fake.onChat(COMPACTION_MARK, reply.json({ summary: "Billing: the refund flow was fixed.", candidates: [] }));
    const a = await compact("billing");
    assert.equal(a.status, 200, JSON.stringify(a.body));

    const other = await compact("search");
    assert.equal(other.status, 409, JSON.stringify(other.body));
    assert.equal(other.body.error.code, "session_thread_mismatch");
    assert.match(other.body.error.message, /thread billing/);
    assert.equal(env.fake.chatRequests().length, 1, "the other thread's conversation went to no model");
    assert.deepEqual([...await summaries()], [{
      summary: "Billing: the refund flow was fixed.",
      thread_id: "billing",
      compactions: 1,
    }]);

    // The session's own thread, or a request naming none, goes on with its summary.
    for (const thread of ["billing", undefined]) {
      const again = await compact(thread, `billing, then ${thread ?? "no thread"}`); // a new part
      assert.equal(again.status, 200, JSON.stringify(again.body));
      const prompt = String(env.fake.chatRequests().at(-1)!.body.messages.at(-1).content);
      assert.match(prompt, /^PRIOR SUMMARY:\nBilling: the refund flow was fixed\./);
    }
    assert.deepEqual((await summaries()).map((s) => [s.thread_id, s.compactions]), [["billing", 3]]);
  } finally {
    await env.close();
  }
});

Deno.test("compact: the summary is checked again as it is written (another thread's first compaction won)", async () => {
  const sql = testSql(2);
  try {
    const tenant = newTenant();
    const who = { role: "authenticated" as const, tenantId: tenant, actor: `user:${tenant}` };
    let part = 0;
    const key = (threadId?: string) => ({ ownerId: tenant, sessionId: "race", threadId, chunkHash: hashOf(part++) });
    await withTenant(sql, who, (tx) => writeSessionSummary(tx, key("billing"), "Billing summary.", 3));
    await assert.rejects(
      withTenant(sql, who, (tx) => writeSessionSummary(tx, key("search"), "Search summary.", 3)),
      (e: HttpError) => e.status === 409 && e.code === "session_thread_mismatch",
    );
    await withTenant(sql, who, (tx) => writeSessionSummary(tx, key(), "Billing, later.", 3));
    const rows = await sql`
      select summary, thread_id, compactions from public.memory_session_summaries where owner_id = ${tenant}`;
    assert.deepEqual([...rows], [{ summary: "Billing, later.", thread_id: "billing", compactions: 2 }]);
  } finally {
    await sql.end();
  }
});

Deno.test("compact: a compaction sent again starts from the summary before it, and counts once", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const tenant = newTenant();
    const handler = createHandler({ ...env.deps, kickWorker: () => Promise.resolve() });
    const compact = async (messages: unknown[]) => {
      const body = { session_id: "retry", thread_id: "chat-1", messages, trigger_tokens: 1_000 };
      const res = await handler(
        new Request(URL_, { method: "POST", headers: await userHeaders(tenant), body: JSON.stringify(body) }),
      );
      assert.equal(res.status, 200);
      return await res.json();
    };
    const first = await compact(conversation("billing"));
    // Its answer lost, the agent sends the same list again, twice.
    const again = await compact(conversation("billing"));
    const third = await compact(conversation("billing"));
    for (const out of [again, third]) {
      assert.equal(out.summary, first.summary);
      assert.deepEqual(out.messages, first.messages);
    }
    assert.equal(first.summary.match(/User: Task: billing/g)?.length, 1, first.summary);
    const [row] = await env.sql<{ compactions: number; prior_summary: string | null }[]>`
      select compactions, prior_summary from public.memory_session_summaries where owner_id = ${tenant}`;
    assert.deepEqual({ ...row }, { compactions: 1, prior_summary: null });

    // The next compaction (the compacted list and a new turn) merges into the first's summary.
    const next = await compact([...first.messages, ...conversation("search").slice(1)]);
    assert.match(next.summary, /^Earlier: [^]*User: Task: billing/m);
    assert.match(next.summary, /User: Task: search/);
    const [after] = await env.sql<{ compactions: number; prior_summary: string | null }[]>`
      select compactions, prior_summary from public.memory_session_summaries where owner_id = ${tenant}`;
    assert.deepEqual({ ...after }, { compactions: 2, prior_summary: first.summary });
  } finally {
    await env.close();
  }
});
