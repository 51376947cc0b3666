// Change bullets say what changed: a correction is one bullet with the NEW text ("replaces …"),
// pin / unpin / confirm say so, and the history records PIN, UNPIN and CONFIRM events.
import assert from "node:assert/strict";
import { createHandler } from "../supabase/functions/memory-retrieve/handler.ts";
import { formatDeltaBullets } from "../supabase/functions/_shared/retrieval/delta.ts";
import { localEmbedder } from "../supabase/functions/_shared/embeddings.ts";
import { userHeaders } from "./support/auth.ts";
import { testConfig } from "./support/config.ts";
import { callJson, dbTest } from "./support/http.ts";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, testSql } from "./support/seed.ts";

const sql = testSql();
const api = memoryApi(sql);
const retrieve = createHandler({ sql, config: testConfig(), embedder: localEmbedder() });

async function block(tenant: string, body: Record<string, unknown>) {
  const res = await callJson(retrieve, "http://localhost/functions/v1/memory-retrieve", {
    headers: await userHeaders(tenant),
    body,
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body as { block: string; revision: number };
}

Deno.test("delta: a replacement is one bullet with the new text; pin, unpin and confirm are named", () => {
  const bullets = formatDeltaBullets([
    {
      revision: 6,
      event: "updated",
      summary: "Commits follow conventional commits",
      meta: { category: "conventions", history_event: "CONFIRM" },
    },
    {
      revision: 5,
      event: "merged",
      summary: "Use pnpm for installs in this repository",
      meta: { memory_type: "semantic" },
      memory_id: "old",
      replacement: { id: "new", content: "Use bun for installs in this repository", source: "correction" },
    },
    {
      revision: 4,
      event: "created",
      summary: "Use bun for installs in this repository",
      meta: { memory_type: "semantic", importance: 3 },
      memory_id: "new",
    },
    {
      revision: 3,
      event: "updated",
      summary: "Tabs over spaces",
      meta: { memory_type: "semantic", history_event: "UNPIN" },
    },
  ]);
  assert.deepEqual(bullets, [
    "- ✓confirmed: [Conventions] Commits follow conventional commits",
    '- ↻corrected: [Semantic] Use bun for installs in this repository (replaces "Use pnpm for installs in this repository")',
    "- ↓unpinned: [Semantic] Tabs over spaces",
  ]);
});

dbTest(
  "delta: after a correction and a pin the block shows the corrected text, and the history has PIN / UNPIN / CONFIRM",
  async () => {
    const t = newTenant();
    const thread = "t-delta";
    const { body: saved } = await api("POST", "/memory/remember", {
      as: t,
      body: { content: "Use pnpm for installs in this repository", project: "shop", thread_id: thread },
    });
    const start = await block(t, { message: "how do I install?", project: "shop", thread_id: thread });

    const corrected = await api("POST", `/memory/${saved.memory.id}/correct`, {
      as: t,
      body: { content: "Use bun for installs in this repository", thread_id: thread },
    });
    assert.equal(corrected.status, 201);
    const after = await block(t, {
      message: "how do I install?",
      project: "shop",
      thread_id: thread,
      since_revision: start.revision,
    });
    assert.equal(after.revision, start.revision + 2, "created + merged");
    const header = after.block.split("\n\n")[1]!;
    assert.equal(
      header,
      [
        `Memory updates since rev ${start.revision}:`,
        '- ↻corrected: [Semantic] Use bun for installs in this repository (replaces "Use pnpm for installs in this repository")',
      ].join("\n"),
    );

    const id = corrected.body.memory.id;
    await api("POST", `/memory/${id}/pin`, { as: t, body: { thread_id: thread } });
    await api("POST", `/memory/${id}/unpin`, { as: t, body: { thread_id: thread } });
    await api("POST", `/memory/${id}/confirm`, { as: t, body: { thread_id: thread } });
    const later = await block(t, {
      message: "how do I install?",
      project: "shop",
      thread_id: thread,
      since_revision: after.revision,
    });
    assert.equal(
      later.block.split("\n\n")[1],
      [
        `Memory updates since rev ${after.revision}:`,
        "- ✓confirmed: [Semantic] Use bun for installs in this repository",
        "- ↓unpinned: [Semantic] Use bun for installs in this repository",
        "- ↑pinned: [Semantic] Use bun for installs in this repository",
      ].join("\n"),
    );

    const history = await api("GET", `/memory/${id}/history`, { as: t });
    // (the correction's ADD and its 'supersedes' LINK share one transaction's timestamp: order between them is not defined)
    const events = history.body.history.map((h: { event: string }) => h.event).filter((e: string) => e !== "LINK");
    assert.deepEqual(events, ["CONFIRM", "UNPIN", "PIN", "ADD"]);
    // Without since_revision there is no delta header at all: the caller opts in per thread.
    assert.ok(
      !(await block(t, { message: "how do I install?", project: "shop", thread_id: thread })).block.includes(
        "Memory updates",
      ),
    );
  },
);

dbTest("delta: close the pool", async () => {
  await sql.end();
});
