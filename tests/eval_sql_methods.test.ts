// The eval's SQL methods (fts_sql, and Supabase's hybrid_search recipe installed into schema
// `eval`) search exactly what the service's retrieval may return: the question's tenant (they run
// as the tenant, and filter on it), its three scopes matched by path segment, valid and active
// memories with strength > 0.05. Otherwise the comparison in `npm run eval` would not be fair.
import assert from "node:assert/strict";
import { localEmbedder } from "../supabase/functions/_shared/embeddings.ts";
import type { EvalQuestion } from "../eval/dataset.ts";
import { ftsSql } from "../eval/methods/fts-sql.ts";
import type { EvalContext } from "../eval/methods/method.ts";
import { installSupabaseHybrid, supabaseHybrid } from "../eval/methods/supabase-hybrid.ts";
import { dbTest } from "./support/http.ts";
import { newTenant, seedMemories, testSql } from "./support/seed.ts";

const sql = testSql();

function context(tenants: Record<string, string>): EvalContext {
  return {
    functionsUrl: "http://127.0.0.1:9/unused",
    sql,
    embedder: localEmbedder(),
    root: "devai",
    now: new Date("2026-11-20T12:00:00Z"),
    tokenOf: () => "unused",
    tenantIdOf: (t) => tenants[t]!,
  };
}

const question = (text: string): EvalQuestion => ({
  id: "q",
  tenant: "a",
  project: "task_forge",
  category: "single_hop",
  text,
  answer_ids: [],
});

dbTest(
  "eval SQL methods: only the tenant's valid, active memories in global, the project and user scopes",
  async () => {
    await installSupabaseHybrid(sql);
    const [a, b] = [newTenant(), newTenant()];
    const text = "The webhook listener port is 8787 for the relay";
    const seeded = await seedMemories(sql, a, [
      { content: `${text} in task_forge`, namespace: "devai/project/task_forge/notes" },
      { content: `${text}, org-wide`, namespace: "devai/global/facts" },
      { content: `${text}, as the user likes it`, namespace: "devai/user/preferences" },
      { content: `${text} in taskxforge`, namespace: "devai/project/taskxforge/notes" },
      { content: `${text} in task_forge2`, namespace: "devai/project/task_forge2/notes" },
      { content: `${text}, superseded`, namespace: "devai/project/task_forge/notes", is_valid: false },
      { content: `${text}, forgotten`, namespace: "devai/project/task_forge/notes", state: "soft_deleted" },
      { content: `${text}, decayed`, namespace: "devai/project/task_forge/notes", strength: 0.01 },
    ]);
    await seedMemories(sql, b, [{
      content: `${text} in task_forge of another tenant`,
      namespace: "devai/project/task_forge/notes",
    }]);
    const ctx = context({ a });
    const expected = seeded.slice(0, 3).map((m) => m.id).sort();
    for (const method of [ftsSql, supabaseHybrid]) {
      const ids = await method.rank(question("Which port does the webhook listener use?"), ctx);
      assert.deepEqual([...ids].sort(), expected, method.name);
    }
  },
);

dbTest("eval SQL methods: fts_sql matches any informative word, Supabase's recipe needs every word", async () => {
  await installSupabaseHybrid(sql);
  const a = newTenant();
  const [port] = await seedMemories(sql, a, [
    { content: "The relay listens on port 8787", namespace: "devai/project/task_forge/notes" },
  ]);
  const ctx = context({ a });
  const q = question("Which port does the webhook listener use?");
  assert.deepEqual(await ftsSql.rank(q, ctx), [port!.id]);
  // websearch_to_tsquery ANDs the words: the full-text side finds nothing, the semantic side still ranks it.
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from public.devai_memories
     where owner_id = ${a}::uuid and fts @@ websearch_to_tsquery('english', ${q.text})`;
  assert.equal(row!.n, 0);
  assert.deepEqual(await supabaseHybrid.rank(q, ctx), [port!.id]);
});

dbTest("eval SQL methods: a question of only stop words finds nothing by keyword and does not fail", async () => {
  const a = newTenant();
  await seedMemories(sql, a, [{
    content: "The relay listens on port 8787",
    namespace: "devai/project/task_forge/notes",
  }]);
  assert.deepEqual(await ftsSql.rank(question("what is it?"), context({ a })), []);
});
