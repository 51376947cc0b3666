// A consolidation merge or supersede files the memory that replaces another under the replaced
// memory's category when it has none of its own, as dedup, correct, restore, accept and a merged
// contradiction do (takeCategory): memory.query serves only memories with a category, so merging a
// categorised fact into an uncategorised restatement made the fact vanish from it. A replacement
// with a category of its own keeps it.
import assert from "node:assert/strict";
import { LOCAL_EMBEDDING, memoryWithLlm, NS, scriptJudge } from "./support/consolidation.ts";
import { newTenant, seedMemories } from "./support/seed.ts";
import { writeEnv } from "./write_helpers.ts";

const DAY = 86_400_000;

/** [content, days ago, category]: each pair's survivor is the older one, except for the version bump. */
const TENANT: [string, number, string | undefined][] = [
  // near-verbatim, merged without a model: the newer (filed) merges into the older (unfiled)
  ["Tests run with vitest in watch mode.", 6, undefined],
  ["Tests are run with vitest in watch mode.", 5, "commands"],
  // the judge says "same": the newer (filed) merges into the older (unfiled)
  ["Deploys go out on Fridays with blue-green releases.", 4, undefined],
  ["Deploys go out every Friday as blue-green releases.", 3, "workflow"],
  // the judge says "refines": the older (filed) is superseded by the newer (unfiled)
  ["CI runs on Node 18.", 20, "environment"],
  ["CI runs on Node 20.", 1, undefined],
  // the survivor has a category of its own: it keeps it
  ["The API server listens on port 3000.", 12, "architecture"],
  ["The API server listens on port 3000 in development.", 11, "commands"],
];

Deno.test({
  name: "consolidate: the memory that replaces a categorised one is filed under its category when it has none",
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const env = await writeEnv({ config: { embedding: LOCAL_EMBEDDING } as never });
  try {
    const t = newTenant();
    const seeded = await seedMemories(
      env.sql,
      t,
      TENANT.map(([content, , category]) => ({
        content,
        namespace: NS,
        source: "discovery",
        metadata: category ? { category } : {},
      })),
    );
    const ids = seeded.map((m) => m.id);
    for (const [i, id] of ids.entries()) {
      await env.sql`update public.devai_memories set created_at = ${new Date(
        Date.now() - TENANT[i]![1] * DAY,
      )} where id = ${id}`;
    }
    scriptJudge(env.fake);
    const api = memoryWithLlm(env.sql, env.config, env.llm, env.embedder);

    const res = await api("POST", "/memory/consolidate", t, {});
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual([res.body.deduped, res.body.merged], [1, 3], JSON.stringify(res.body));

    const rows = await env.sql<{ id: string; superseded_by: string | null; category: string | null }[]>`
      select id, superseded_by, metadata ->> 'category' as category from public.devai_memories
       where owner_id = ${t}`;
    const byId = new Map(rows.map((r) => [r.id, r]));
    const at = (i: number) => byId.get(ids[i]!)!;
    assert.deepEqual(
      [[1, 0], [3, 2], [4, 5], [7, 6]].map(([drop, keep]) => at(drop!).superseded_by === ids[keep!]),
      [true, true, true, true],
      "each pair merged or superseded as scripted",
    );
    assert.deepEqual(
      [0, 2, 5, 6].map((keep) => at(keep).category),
      ["commands", "workflow", "environment", "architecture"],
      "the replacement is filed where the replaced memory was; one with its own category keeps it",
    );
  } finally {
    await env.close();
  }
});
