// A dedup decision that replaces a memory (the model's UPDATE, merged into a new memory or into the
// live memory that says the merged text already; its DELETE) files the replacement under the
// replaced memory's category when it has none of its own, as correct, restore, accept and a merged
// contradiction do (takeCategory): memory.query serves only memories with a category, so an
// agent-learned candidate without one made the fact vanish from it.
import assert from "node:assert/strict";
import { hashVector, reply, vectorWithSimilarity } from "./fake_openai.ts";
import { realServerOnly } from "./support/backend.ts";
import { newTenant, seedMemory } from "./support/seed.ts";
import { drainAll, EMBEDDING_MODEL, queueDedupCandidate, writeEnv } from "./write_helpers.ts";

const NS = "devai/project/taskforge";
const base = hashVector("dedup category base");
const CANDIDATE = "The task-api deploys with pnpm run deploy.";
const MERGED = "Releases of the service go out through the pnpm release script.";

for (
  const [what, decision, heldAlready] of [
    ["merged into a new memory", { action: "UPDATE", target: 0, content: MERGED }, false],
    ["merged into the memory that says the text", { action: "UPDATE", target: 0, content: MERGED }, true],
    ["replaced by the candidate", { action: "DELETE", target: 0, reason: "contradicts" }, false],
  ] as const
) {
  Deno.test({
    ...realServerOnly(
      `dedup: a 'commands' memory ${what} leaves the fact filed under 'commands'`,
      "the worker's passes use the pool's connections",
    ),
    sanitizeOps: false,
    sanitizeResources: false,
  }, async () => {
    const env = await writeEnv();
    try {
      const tenant = newTenant();
      const seed = (content: string, embedding: number[], metadata: Record<string, unknown>) =>
        seedMemory(env.sql, tenant, { content, namespace: NS, embedding, embedding_model: EMBEDDING_MODEL, metadata });
      const target = await seed("The task-api deploys with npm run deploy.", vectorWithSimilarity(base, 0.93, "t"), {
        category: "commands",
      });
      const says = heldAlready ? await seed(MERGED, hashVector("far"), {}) : undefined;
      env.fake.setEmbedding(CANDIDATE, base);
      env.fake.onChat("NEW candidate", [reply.json(decision)]);
      await queueDedupCandidate(env, tenant, crypto.randomUUID(), CANDIDATE, NS);
      assert.equal((await drainAll(env.deps, tenant)).done, 1);

      const [job] = await env.sql`select result from public.memory_jobs where owner_id = ${tenant} and kind = 'dedup'`;
      const outcome = job!.result.outcomes[0];
      assert.equal(outcome.target_id, target.id, JSON.stringify(outcome));
      if (says) assert.equal(outcome.memory_id, says.id, "the memory that says the text replaced the target");
      const [replacement] = await env.sql<{ category: string | null; is_valid: boolean }[]>`
        select metadata ->> 'category' as category, is_valid from public.devai_memories where id = ${outcome.memory_id}`;
      assert.deepEqual({ ...replacement }, { category: "commands", is_valid: true });
    } finally {
      await env.close();
    }
  });
}
