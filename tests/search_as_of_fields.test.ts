// as_of in memory-retrieve and memory.query: the search filters, ranks and shows a memory's fields
// as they were then (public.memory_at, as GET /memory?as_of does), not as they are now. Before,
// only the content was of then: memory.query as of an instant served a memory filed under a
// category only since, and filters.pinned matched today's pin. Instants are read from the
// database's clock between the writes, so nothing waits on wall-clock time.
import assert from "node:assert/strict";
import { PINNED_BOOST } from "../supabase/functions/_shared/retrieval/rank.ts";
import { dbNow as dbNowOf, retrieveApi } from "./support/as-of.ts";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, testSql } from "./support/seed.ts";

const sql = testSql();
const api = memoryApi(sql);
const retrieve = retrieveApi(sql);
const dbNow = () => dbNowOf(sql);
const opts = { sanitizeOps: false, sanitizeResources: false };

async function post(path: string, t: string, body: unknown) {
  const out = await retrieve(path, t, body);
  assert.equal(out.status, 200, JSON.stringify(out.body));
  return out;
}

async function remember(t: string, content: string, project: string, metadata?: Record<string, unknown>) {
  const res = await api("POST", "/memory/remember", {
    as: t,
    body: { content, project, ...(metadata ? { metadata } : {}) },
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.memory.id as string;
}

type Result = { id: string; category: string; pinned: boolean; content: string };

/**
 * Two memories of a project, one filed under `category` and one without; then (the instant
 * returned) a correction of the filed one to the other's text, which keeps the other and files it
 * under `category` (takeCategory, as correct, restore and dedup do).
 */
async function filedSince(t: string, project: string, category: string, texts: { unfiled: string; filed: string }) {
  const unfiled = await remember(t, texts.unfiled, project);
  const filed = await remember(t, texts.filed, project, { category });
  const then = await dbNow();
  const fixed = await api("POST", `/memory/${filed}/correct`, { as: t, body: { content: texts.unfiled } });
  assert.deepEqual([fixed.status, fixed.body.memory.id, fixed.body.memory.metadata.category], [200, unfiled, category]);
  return { unfiled, filed, then };
}

/** memory.query's full rows, as of `asOf` or now. */
async function queried(t: string, query: Record<string, unknown>, asOf?: string): Promise<Result[]> {
  return (await post("/memory-retrieve/query", t, { ...query, return: "full", ...(asOf ? { as_of: asOf } : {}) }))
    .body.results;
}

Deno.test(
  { name: "as_of: memory.query serves a memory under the category it had then, not one it took since", ...opts },
  async () => {
    // Filed under 'projects' only since, the kept memory was in no agent's answer then.
    const t = newTenant();
    const m = await filedSince(t, "billing", "projects", {
      unfiled: "The billing service stores invoices in Postgres 16.",
      filed: "The billing service stores invoices in Postgres 15.",
    });
    const query = {
      agent: "planner",
      query: "Which Postgres version stores the billing service invoices?",
      project: "billing",
      categories: ["projects"],
    };
    assert.deepEqual((await queried(t, query, m.then)).map((r) => [r.id, r.category, r.content]), [
      [m.filed, "projects", "The billing service stores invoices in Postgres 15."],
    ]);
    // Now, as it is.
    assert.deepEqual((await queried(t, query)).map((r) => [r.id, r.category]), [[m.unfiled, "projects"]]);
  },
);

Deno.test(
  { name: "as_of: a context-all category serves the memories it held then, whatever the query", ...opts },
  async () => {
    // 'conventions' is served whole (context 'all'), not only what the query finds: as of before
    // a memory took that category, it is not among them.
    const t = newTenant();
    const m = await filedSince(t, "repo", "conventions", {
      unfiled: "Commit messages start with the ticket number.",
      filed: "Commit messages start with the ticket id.",
    });
    const query = {
      agent: "coder",
      query: "How is the staging database seeded?",
      project: "repo",
      categories: ["conventions"],
    };
    assert.deepEqual((await queried(t, query, m.then)).map((r) => [r.id, r.category]), [[m.filed, "conventions"]]);
    assert.deepEqual((await queried(t, query)).map((r) => [r.id, r.category]), [[m.unfiled, "conventions"]]);
  },
);

Deno.test(
  { name: "as_of: memory.query filters and shows pinned as it was then", ...opts },
  async () => {
    const t = newTenant();
    const wasPinned = await remember(t, "The deploy pipeline cuts the release branch on Mondays.", "deploys", {
      category: "projects",
    });
    const pinnedSince = await remember(t, "The deploy pipeline sends hotfixes to the release branch.", "deploys", {
      category: "projects",
    });
    assert.equal((await api("POST", `/memory/${wasPinned}/pin`, { as: t })).status, 200);
    const then = await dbNow();
    assert.equal((await api("POST", `/memory/${wasPinned}/unpin`, { as: t })).status, 200);
    assert.equal((await api("POST", `/memory/${pinnedSince}/pin`, { as: t })).status, 200);

    const pinned = async (filter: boolean, asOf?: string) =>
      (await queried(t, {
        agent: "planner",
        query: "What does the deploy pipeline do with the release branch?",
        project: "deploys",
        filters: { pinned: filter },
      }, asOf)).map((r) => [r.id, r.pinned]);
    assert.deepEqual(await pinned(true, then), [[wasPinned, true]]);
    assert.deepEqual(await pinned(false, then), [[pinnedSince, false]]);
    assert.deepEqual(await pinned(true), [[pinnedSince, true]]);
  },
);

Deno.test(
  { name: "as_of: memory-retrieve ranks a memory by the pin it had then", ...opts },
  async () => {
    const t = newTenant();
    const id = await remember(t, "The search service rebuilds its index every night.", "search");
    assert.equal((await api("POST", `/memory/${id}/pin`, { as: t })).status, 200);
    const pinned = await dbNow();
    assert.equal((await api("POST", `/memory/${id}/unpin`, { as: t })).status, 200);
    const unpinned = await dbNow();

    const scoreAt = async (asOf: string) => {
      const res = await post("/memory-retrieve", t, {
        message: "When does the search service rebuild its index?",
        project: "search",
        as_of: asOf,
      });
      const [m] = res.body.memories as { id: string; score: number }[];
      assert.equal(m?.id, id);
      return m!.score;
    };
    // The same search, the same strength (today's): the pin of then is the difference.
    const delta = (await scoreAt(pinned)) - (await scoreAt(unpinned));
    assert.ok(Math.abs(delta - PINNED_BOOST) < 1e-9, `score as of the pin minus after it: ${delta}`);
  },
);

Deno.test(
  { name: "as_of: updated_after/updated_before match when the memory had last changed then, in every list", ...opts },
  async () => {
    // Pinned before the instant, unpinned after it: its updated_at then was the pin's, today's is
    // the unpin's. Before, every list read today's, so as of the instant it was updated after it.
    const t = newTenant();
    const id = await remember(t, "The nightly export job writes CSV files to the reports bucket.", "exports", {
      category: "projects",
    });
    const filed = await remember(t, "Release notes are written in the changelog before tagging.", "exports", {
      category: "conventions",
    });
    for (const m of [id, filed]) assert.equal((await api("POST", `/memory/${m}/pin`, { as: t })).status, 200);
    const then = await dbNow();
    for (const m of [id, filed]) assert.equal((await api("POST", `/memory/${m}/unpin`, { as: t })).status, 200);

    const found = async (agent: string, mode: string, filters: Record<string, string>, asOf?: string) =>
      (await queried(t, {
        agent,
        query: "Where does the nightly export job write its CSV files?",
        project: "exports",
        mode,
        filters,
      }, asOf)).map((r) => r.id);
    // The keyword list, the vector list, and a context-all category's memories.
    const lists: [string, string, string][] = [["planner", "keyword", id], ["planner", "vector", id], [
      "coder",
      "keyword",
      filed,
    ]];
    for (const [agent, mode, want] of lists) {
      const at = `${agent} ${mode}`;
      assert.deepEqual(await found(agent, mode, { updated_before: then }, then), [want], `${at}: changed before then`);
      assert.deepEqual(await found(agent, mode, { updated_after: then }, then), [], `${at}: not changed since, then`);
      assert.deepEqual(await found(agent, mode, { updated_after: then }), [want], `${at}: changed since, now`);
    }
  },
);

Deno.test(
  { name: "as_of: a context-all category's memories come in the order of their last change then", ...opts },
  async () => {
    // Served whatever the query, most important first, then the most recently changed: with room
    // for one, as of the instant that is the later of two alike, not the earlier one pinned since.
    const t = newTenant();
    const earlier = await remember(t, "Branch names start with the ticket number.", "repo", {
      category: "conventions",
    });
    const later = await remember(t, "Pull requests need two approvals before merging.", "repo", {
      category: "conventions",
    });
    const then = await dbNow();
    assert.equal((await api("POST", `/memory/${earlier}/pin`, { as: t })).status, 200);

    const served = async (asOf?: string) =>
      (await queried(t, {
        agent: "coder",
        query: "How is the staging database seeded?",
        project: "repo",
        categories: ["conventions"],
        top_k: 1,
      }, asOf)).map((r) => r.id);
    assert.deepEqual(await served(then), [later]);
    assert.deepEqual(await served(), [earlier]);
  },
);

Deno.test(
  { name: "as_of: a memory edited in place since (SQL, Studio) is matched on its words of then", ...opts },
  async () => {
    // The service never rewrites a memory's text, but an operator can (in Studio, as the database
    // owner). As of before that edit, the memory is answered with its words of then (memory_at):
    // it is matched on them too, by the keyword signal and by -exclusions, not on today's.
    const t = newTenant();
    const id = await remember(t, "The nightly backup runs on the replica at two in the morning.", "ops", {
      category: "conventions",
    });
    const then = await dbNow();
    await sql`update public.devai_memories set content = 'Invoices are archived to cold storage every month.'
               where id = ${id}`;

    const retrieved = async (message: string, mode: string, asOf?: string) =>
      ((await post("/memory-retrieve", t, { message, project: "ops", mode, ...(asOf ? { as_of: asOf } : {}) }))
        .body.memories as { id: string; content: string }[]).map((m) => [m.id, m.content]);
    const old = [[id, "The nightly backup runs on the replica at two in the morning."]];
    assert.deepEqual(await retrieved("Where does the nightly backup run, the replica?", "keyword", then), old);
    assert.deepEqual(await retrieved("Where are invoices archived, cold storage?", "keyword", then), []);
    assert.deepEqual(await retrieved("Where are invoices archived, cold storage?", "keyword"), [
      [id, "Invoices are archived to cold storage every month."],
    ]);
    // Its embedding is still the old text's (the edit did not re-embed it): the vector list finds
    // it, and an exclusion of today's words does not leave it out.
    assert.deepEqual(await retrieved("Where does the nightly backup run? -invoices", "vector", then), old);
    // A context-all category serves it whatever the query, unless an exclusion matches its words then.
    const served = async (query: string) =>
      (await queried(t, { agent: "coder", query, project: "ops", categories: ["conventions"] }, then)).map((r) => r.id);
    assert.deepEqual(await served("How is staging seeded? -invoices"), [id]);
    assert.deepEqual(await served("How is staging seeded? -replica"), []);
  },
);

Deno.test({ name: "close the pool", ...opts }, async () => {
  await sql.end();
});
