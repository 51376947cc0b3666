// Re-embedding when the embedding model changes: memories stored with the offline embedder are
// still found by their words after a switch to an OpenAI-compatible embedder (the fake one here);
// memory/stats says how many wait; POST memory/reindex (dry run: nothing queued) starts one job a
// day that re-embeds them in batches, capped per night, keeping its progress through a provider
// failure (the queue retries it with backoff), and leaves the rest for the next night.
import assert from "node:assert/strict";
import { createHandler as createRetrieve } from "../supabase/functions/memory-retrieve/handler.ts";
import { LOCAL_EMBEDDING_MODEL } from "../supabase/functions/_shared/env.ts";
import { reply } from "./fake_openai.ts";
import { userHeaders } from "./support/auth.ts";
import { memoryWithLlm, withSettings } from "./support/consolidation.ts";
import { newTenant, seedMemories } from "./support/seed.ts";
import { drainAll, EMBEDDING_MODEL, writeEnv } from "./write_helpers.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

const FACTS = [
  "The checkout service retries failed payments three times.",
  "The staging cluster runs in eu-west-1.",
  "Release notes are generated from conventional commits.",
  "The search index is rebuilt every night at 02:00.",
  "Feature flags live in LaunchDarkly.",
];

Deno.test(
  { name: "reindex: found by words before, counted in stats, re-embedded by a capped, resumable job", ...opts },
  async () => {
    const env = await writeEnv(); // the configured embedder is the fake OpenAI one now
    const restore = await withSettings(env.sql, { reindex_per_night: 3, reindex_batch_size: 2 });
    try {
      const t = newTenant();
      // Stored while the offline embedder was configured.
      await seedMemories(env.sql, t, FACTS.map((content) => ({ content, namespace: "devai/project/shop/notes" })));
      const api = memoryWithLlm(env.sql, env.config, undefined, env.embedder);

      // Retrieval still finds them through the keyword signal (no vector of this model yet).
      const retrieve = createRetrieve({ sql: env.sql, config: env.config, embedder: env.embedder });
      const found = await (await retrieve(
        new Request("http://local/functions/v1/memory-retrieve", {
          method: "POST",
          headers: await userHeaders(t),
          body: JSON.stringify({ message: "how many times are failed payments retried?", project: "shop" }),
        }),
      )).json();
      assert.equal(found.memories[0].content, FACTS[0]);
      assert.ok(found.memories[0].signals.keyword && !found.memories[0].signals.vector);

      const stats = await api("GET", "/memory/stats", t);
      assert.deepEqual(stats.body.embeddings, { configured_model: EMBEDDING_MODEL, to_reindex: 5 });
      assert.equal(stats.body.by_embedding_model[LOCAL_EMBEDDING_MODEL], 5);

      const dry = await api("POST", "/memory/reindex", t, { dry_run: true });
      assert.deepEqual([dry.status, dry.body.started, dry.body.to_reindex, dry.body.job], [200, false, 5, null]);
      assert.deepEqual(dry.body.by_model, { [LOCAL_EMBEDDING_MODEL]: 5 });

      const started = await api("POST", "/memory/reindex", t, {});
      assert.deepEqual([started.status, started.body.started, started.body.job.status], [202, true, "queued"]);
      assert.equal((await api("POST", "/memory/reindex", t, {})).body.started, false, "one job at a time");

      // The provider fails once after the first batch: the job is retried, the first batch stays done.
      env.fake.failEmbeddings(reply.pass(), reply.error(400, { message: "the provider refused the batch" }));
      const first = await drainAll(env.deps, t, "test-worker", 1, ["reindex"]);
      assert.equal(first.retried, 1, JSON.stringify(first.jobs));
      const afterFailure = await env.sql<{ n: number }[]>`
      select count(*)::int as n from public.devai_memories where owner_id = ${t} and embedding_model = ${EMBEDDING_MODEL}`;
      assert.equal(afterFailure[0]!.n, 2, "the first batch was committed");

      const second = await drainAll(env.deps, t, "test-worker", 5, ["reindex"]);
      assert.equal(second.done, 1, JSON.stringify(second.jobs));
      const [job] = await env.sql`select result from public.memory_jobs where owner_id = ${t} and kind = 'reindex'`;
      assert.deepEqual([job!.result.model, job!.result.remaining, job!.result.capped], [EMBEDDING_MODEL, 2, true]);
      assert.equal((await api("GET", "/memory/stats", t)).body.embeddings.to_reindex, 2, "3 a night: 2 left");

      // The next night's schedule queues the rest.
      await env.sql`update public.memory_events set ts = ts - interval '1 day' where owner_id = ${t} and op = 'update'`;
      await env.sql`select memory_private.enqueue_nightly_consolidation(now() + interval '1 day')`;
      // Other tests' tenants are not this test's.
      await env
        .sql`delete from public.memory_jobs where status = 'queued' and owner_id <> ${t} and kind in ('nightly_consolidation', 'reindex')`;
      const next = await drainAll(env.deps, t, "test-worker", 5, ["reindex"]);
      assert.equal(next.done, 1, JSON.stringify(next.jobs));
      assert.equal((await api("GET", "/memory/stats", t)).body.embeddings.to_reindex, 0);

      // Now the vector finds them too.
      const after = await (await retrieve(
        new Request("http://local/functions/v1/memory-retrieve", {
          method: "POST",
          headers: await userHeaders(t),
          body: JSON.stringify({ message: FACTS[1], project: "shop", mode: "vector" }),
        }),
      )).json();
      assert.equal(after.memories[0].content, FACTS[1]);
    } finally {
      await restore();
      await env.close();
    }
  },
);
