// memory-compact keeps one running summary a session, and a session stays on the thread its first
// compaction named (as its episodes do, README "POST memory/episodes"): a second thread reusing the
// session id had its conversation compacted with the first thread's summary as its prior, and the
// merged summary returned to it and stored over the first's.
import assert from "node:assert/strict";
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
      const again = await compact(thread);
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
    const key = (threadId?: string) => ({ ownerId: tenant, sessionId: "race", threadId });
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
