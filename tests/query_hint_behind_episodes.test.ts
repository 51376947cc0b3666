// Review of 468689f: the empty-answer hint reads the first 1,000 uncategorised live memories in the
// index's order (importance, newest first) before it drops episodes: a fact remembered before a
// thousand conversation episodes is never seen, and the hint is gone for the usual tenant.
import assert from "node:assert/strict";
import { createHandler } from "../supabase/functions/memory-retrieve/handler.ts";
import { userHeaders } from "./support/auth.ts";
import { testConfig } from "./support/config.ts";
import { callJson } from "./support/http.ts";
import { newTenant, testSql } from "./support/seed.ts";
import { fixedEmbedder } from "./support/vectors.ts";

const sql = testSql();
const opts = { sanitizeOps: false, sanitizeResources: false };

Deno.test({ name: "the hint sees an uncategorised fact older than 1,000 episodes", ...opts }, async () => {
  const t = newTenant();
  await sql`
    insert into public.devai_memories (owner_id, content, memory_type, namespace, priority, source, importance, created_at)
    values (${t}, 'Use pnpm to install packages', 'semantic', 'devai/global/notes', 'medium', 'user_stated', 3,
            now() - interval '1 day')`;
  await sql`
    insert into public.devai_memories (owner_id, content, memory_type, namespace, priority, source, importance)
    select ${t}, 'message ' || i, 'episodic', 'devai/global/notes', 'medium', 'conversation', 3
      from generate_series(1, 1000) i`;
  const r = await callJson(
    createHandler({ sql, config: testConfig(), embedder: fixedEmbedder() }),
    "http://localhost/functions/v1/memory-retrieve/query",
    { headers: await userHeaders(t), body: { agent: "coder", query: "how do we install packages" } },
  );
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.deepEqual(r.body.results, []);
  assert.match(r.body.hint ?? "(no hint)", /without a category/);
});

Deno.test({ name: "close pool", ...opts }, async () => {
  await sql.end();
});
