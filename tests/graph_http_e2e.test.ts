// The graph routes over HTTP through the SDK, as an agent uses them: episodes as the session goes,
// entities found in them, the session ended and consolidated by the server's own worker (local
// embedder, no LLM: the rules), the fact explained back to its episode, and read as of an instant.
import assert from "node:assert/strict";
import { createMemoryClient, MemoryApiError } from "../sdk/mod.ts";
import { drainQueue } from "../supabase/functions/_shared/drain-queue.ts";
import { localEmbedder } from "../supabase/functions/_shared/embeddings.ts";
import { userToken } from "./support/auth.ts";
import { startTestServer } from "./support/http_server.ts";
import { newTenant, testSql } from "./support/seed.ts";

Deno.test("http e2e: episodes → entities → end session → consolidated fact explained → as_of", async () => {
  const server = await startTestServer({ worker: false });
  const sql = testSql(2);
  try {
    const t = newTenant();
    const memory = createMemoryClient({ supabaseUrl: server.url, accessToken: await userToken(t) });
    const stored = await memory.episodes({
      session_id: "e2e-1",
      project: "shop",
      messages: [
        { role: "user", content: "remember that the shop deploys with `pnpm run release`" },
        { role: "assistant", content: "Noted: releases go through pnpm run release." },
      ],
    });
    assert.deepEqual([stored.stored, stored.embedding], [2, "inline"]);
    const again = await memory.episodes({
      session_id: "e2e-1",
      project: "shop",
      messages: [{ role: "user", content: "remember that the shop deploys with `pnpm run release`" }],
    });
    assert.deepEqual([again.stored, again.duplicates], [0, 1]);

    const { entities } = await memory.entities({ q: "pnpm run release" });
    assert.deepEqual(entities.map((e) => [e.canonical_name, e.entity_type, e.mention_count]), [[
      "pnpm run release",
      "command",
      2,
    ]]);
    const profile = await memory.entity(entities[0]!.id);
    assert.equal(profile.timeline.length, 2);

    const ended = await memory.endSession("e2e-1");
    assert.equal(ended.ended_now, true);
    // The worker's drain, here rather than on the server's timer: the consolidation job runs (rules only).
    const report = await drainQueue({ sql: server.sql, config: server.config, embedder: localEmbedder() }, {
      ownerId: t,
      backoffBaseMs: 0,
    });
    assert.deepEqual([report.done, report.dead], [1, 0], JSON.stringify(report.jobs));

    const [fact] = await sql<
      { id: string }[]
    >`select id from public.devai_memories where owner_id = ${t} and source = 'user_stated'`;
    const explained = await memory.explain(fact!.id);
    assert.deepEqual(explained.source.episodes.map((e) => e.id), [stored.episodes[0]!.id]);

    const yesterday = new Date(Date.now() - 86_400_000).toISOString();
    try {
      await memory.get(fact!.id, { as_of: yesterday });
      assert.fail("a fact not recorded yet at as_of is a 404");
    } catch (err) {
      assert.ok(err instanceof MemoryApiError && err.status === 404, String(err));
    }
    assert.equal((await memory.get(fact!.id)).memory.valid_until, null);
  } finally {
    await sql.end();
    await server.close();
  }
});
