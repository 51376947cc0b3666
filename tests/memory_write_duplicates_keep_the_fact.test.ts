// A correction or a restore that finds its text held by another live memory (One live memory per
// text, README) must not lose what the user said with it: the letter case a correction changed,
// the category memory.query serves the fact under, the pin and user-stated source of a restored
// memory. Review findings on 3f33060/36e4db5 (each test fails on main at 7ec9d6e).
import assert from "node:assert/strict";
import { createHandler as retrieveHandler } from "../supabase/functions/memory-retrieve/handler.ts";
import { localEmbedder } from "../supabase/functions/_shared/embeddings.ts";
import { userHeaders } from "./support/auth.ts";
import { testConfig } from "./support/config.ts";
import { callJson } from "./support/http.ts";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, testSql } from "./support/seed.ts";

const sql = testSql();
const api = memoryApi(sql);
const opts = { sanitizeOps: false, sanitizeResources: false };
const retrieve = retrieveHandler({ sql, config: testConfig(), embedder: localEmbedder() });
async function query(t: string, text: string) {
  const r = await callJson(retrieve, "http://localhost/functions/v1/memory-retrieve/query", {
    headers: await userHeaders(t),
    body: { agent: "coder", query: text, project: "acme/shop", threshold: 0 },
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.results.map((m: { id: string }) => m.id);
}

async function remember(t: string, content: string, extra: Record<string, unknown> = {}) {
  const r = await api("POST", "/memory/remember", { as: t, body: { content, project: "acme/shop", ...extra } });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body.memory;
}

async function liveTexts(t: string): Promise<string[]> {
  const rows = await sql<{ content: string }[]>`
    select content from public.devai_memories where owner_id = ${t} and is_valid and state = 'active' order by content`;
  return rows.map((r) => r.content);
}

Deno.test(
  { name: "a correction of letter case only is not swallowed by a copy that still says the old case", ...opts },
  async () => {
    const t = newTenant();
    // The project's memory first; the same text in the user scope later (it cannot see the project's).
    const old = await remember(t, "Fixtures live in /srv/Data");
    const copy = await remember(t, "Fixtures live in /srv/Data", { project: undefined });
    assert.notEqual(copy.id, old.id);
    const r = await api("POST", `/memory/${old.id}/correct`, {
      as: t,
      body: { content: "Fixtures live in /srv/data" },
    });
    assert.ok(r.status < 300, JSON.stringify(r.body));
    // The user said '/srv/data' ("a change of letter case is a correction", README): some live
    // memory visible from the project must say it.
    assert.ok(
      (await liveTexts(t)).includes("Fixtures live in /srv/data"),
      `answered ${r.status} ${JSON.stringify(r.body.memory?.content)}; live: ${JSON.stringify(await liveTexts(t))}`,
    );
  },
);

Deno.test(
  { name: "a correction held by an uncategorised memory is still served by memory.query under its category", ...opts },
  async () => {
    const t = newTenant();
    await remember(t, "Use bun to install packages"); // no category: memory.query never serves it
    const old = await remember(t, "Use pnpm to install packages", { metadata: { category: "commands" } });
    assert.deepEqual(await query(t, "Use pnpm to install packages"), [old.id]);
    const r = await api("POST", `/memory/${old.id}/correct`, {
      as: t,
      body: { content: "Use bun to install packages" },
    });
    assert.ok(r.status < 300, JSON.stringify(r.body));
    const after = await query(t, "Use bun to install packages");
    // Before 3f33060 the correction (category carried on) answered this query.
    assert.equal(after.length, 1, "the corrected fact vanished from memory.query");
  },
);

Deno.test(
  {
    name: "a restored pinned statement replaced by an agent-learned copy keeps the pin and category on the fact",
    ...opts,
  },
  async () => {
    const t = newTenant();
    const mine = await remember(t, "Deploy on Mondays", { metadata: { category: "deployment" } });
    assert.equal((await api("POST", `/memory/${mine.id}/pin`, { as: t, body: {} })).status, 200);
    assert.equal((await api("POST", `/memory/${mine.id}/forget`, { as: t, body: {} })).status, 200);
    // Meanwhile an extraction learned the same fact (nothing live said it, so dedup added it).
    const [learned] = await sql<{ id: string }[]>`
      insert into public.devai_memories (owner_id, content, memory_type, namespace, priority, source, importance)
      values (${t}, 'Deploy on Mondays', 'semantic', 'devai/project/acme~shop/notes', 'medium', 'discovery', 3)
      returning id`;
    const r = await api("POST", `/memory/${mine.id}/restore`, { as: t, body: {} });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.memory.superseded_by, learned!.id);
    const [held] = await sql<{ pinned: boolean; source: string; priority: string; category: string }[]>`
      select pinned, source, priority, metadata ->> 'category' as category from public.devai_memories where id = ${
      learned!.id
    }`;
    // The user's pinned statement now lives only as the agent's unpinned, decaying copy.
    assert.deepEqual(held, { pinned: true, source: "user_stated", priority: "highest", category: "deployment" });
  },
);

Deno.test(
  {
    name: "an accepted proposal held by an uncategorised memory is still served by memory.query under its category",
    ...opts,
  },
  async () => {
    const t = newTenant();
    const held = await remember(t, "Ana prefers the name Ana in commit messages"); // no category
    const [p] = await sql<{ id: string }[]>`
      insert into public.memory_proposals (owner_id, field, content, namespace, category, expires_at)
      values (${t}, 'preferred_name', 'Ana prefers the name Ana in commit messages', ${held.namespace}, 'commands',
              now() + interval '7 days')
      returning id`;
    const r = await api("POST", `/memory/proposals/${p!.id}/accept`, { as: t, body: {} });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.memory_id, held.id);
    // Before: the fact accepted under 'commands' was the uncategorised memory, on no allowlist.
    assert.deepEqual(await query(t, "Ana prefers the name Ana in commit messages"), [held.id]);
  },
);

for (const into of ["a new memory", "a live memory without a category"] as const) {
  Deno.test(
    {
      name: `a contradiction merged into ${into} is still served by memory.query under the category of the two`,
      ...opts,
    },
    async () => {
      const t = newTenant();
      const held = into === "a new memory" ? undefined : await remember(t, "Deploy with make ship on Fridays");
      const a = await remember(t, "Deploy with make ship on Mondays", { metadata: { category: "commands" } });
      const b = await remember(t, "Deploy with make ship on Tuesdays", { metadata: { category: "commands" } });
      const [c] = await sql<{ id: string }[]>`
        insert into public.memory_contradictions (owner_id, memory_a, memory_b, detected_by, reason)
        values (${t}, ${a.id}, ${b.id}, 'write', 'two days') returning id`;
      const r = await api("POST", `/memory/contradictions/${c!.id}/resolve`, {
        as: t,
        body: { resolution: "merged", content: "Deploy with make ship on Fridays" },
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const mergedId = r.body.contradiction.merged_id;
      if (held) assert.equal(mergedId, held.id);
      // Before: the merged statement had no category, and memory.query answered nothing.
      assert.deepEqual(await query(t, "Deploy with make ship on Fridays"), [mergedId]);
    },
  );
}

Deno.test({ name: "close pool", ...opts }, async () => {
  await sql.end();
});
