// as_of through the API: GET /memory, GET /memory/{id}, memory-retrieve and memory.query answer
// what the tenant's memory held at an instant (a corrected fact before and after its correction),
// and a historical answer reinforces nothing; the list filters and shows a memory's fields as they
// were then (pinned); a purged memory is in no as_of answer (its history stays). Instants are read
// from the database's clock between the writes, so nothing waits on wall-clock time.
import assert from "node:assert/strict";
import { dbNow as dbNowOf, retrieveApi } from "./support/as-of.ts";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, testSql } from "./support/seed.ts";
import { flushSearchWrites } from "../supabase/functions/_shared/retrieval/write-behind.ts";
import { withTenant } from "../supabase/functions/_shared/db.ts";
import { recordedBy } from "../supabase/functions/_shared/memories/as-of.ts";

const sql = testSql();
const api = memoryApi(sql);
const post = retrieveApi(sql);
const dbNow = () => dbNowOf(sql);
const opts = { sanitizeOps: false, sanitizeResources: false };

/** A fact of project api in category projects (memory.query's planner reads it), remembered now: its id. */
async function projectFact(t: string, content: string): Promise<string> {
  const r = await api("POST", "/memory/remember", {
    as: t,
    body: { content, project: "api", metadata: { category: "projects" } },
  });
  return r.body.memory.id as string;
}

/** A fact remembered, then corrected: the instants before, between and after. */
async function correctedFact(t: string) {
  const before = await dbNow();
  const oldId = await projectFact(t, "The API service runs on Node 18 in production.");
  const between = await dbNow();
  const fixed = await api("POST", `/memory/${oldId}/correct`, {
    as: t,
    body: { content: "The API service runs on Node 20 in production." },
  });
  assert.equal(fixed.status, 201);
  const after = await dbNow();
  return { before, between, after, oldId, newId: fixed.body.memory.id as string };
}

Deno.test({
  name: "as_of: GET /memory/{id} shows the memory as it was then; GET /memory lists what was held then",
  ...opts,
}, async () => {
  const t = newTenant();
  const f = await correctedFact(t);

  const then = await api("GET", `/memory/${f.oldId}?as_of=${f.between}`, { as: t });
  assert.equal(then.status, 200);
  assert.deepEqual([then.body.held, then.body.memory.is_valid, then.body.memory.superseded_by], [true, true, null]);
  const later = await api("GET", `/memory/${f.oldId}?as_of=${f.after}`, { as: t });
  assert.deepEqual([later.body.held, later.body.memory.is_valid, later.body.memory.superseded_by], [
    false,
    false,
    f.newId,
  ]);
  assert.equal(
    (await api("GET", `/memory/${f.newId}?as_of=${f.between}`, { as: t })).status,
    404,
    "not recorded yet then",
  );
  const now = await api("GET", `/memory/${f.oldId}`, { as: t });
  assert.ok(now.body.memory.valid_until, "the corrected fact's validity is closed");
  assert.equal(now.body.held, undefined);

  const listed = async (at: string) =>
    ((await api("GET", `/memory?namespace_prefix=devai/project/api&as_of=${at}`, { as: t })).body.memories as {
      id: string;
    }[]).map((m) => m.id);
  assert.deepEqual(await listed(f.before), []);
  assert.deepEqual(await listed(f.between), [f.oldId]);
  assert.deepEqual(await listed(f.after), [f.newId]);
  assert.equal((await api("GET", `/memory?as_of=${f.after}&state=all`, { as: t })).status, 400);
  assert.equal((await api("GET", `/memory?as_of=yesterday`, { as: t })).status, 400);
});

Deno.test({
  name: "as_of: a purged memory is gone from as_of answers, even as of when it was held; its history stays",
  ...opts,
}, async () => {
  const t = newTenant();
  const m = await api("POST", "/memory/remember", {
    as: t,
    body: { content: "The API service caches sessions in Redis.", project: "api" },
  });
  const id = m.body.memory.id as string;
  const held = await dbNow();
  assert.equal((await api("GET", `/memory/${id}?as_of=${held}`, { as: t })).body.held, true);
  assert.equal((await api("POST", `/memory/${id}/forget`, { as: t, body: {} })).status, 200);
  await dbNow(); // the PURGE is stamped after the DELETE, even on PGlite's millisecond clock
  await sql`update public.devai_memories set purge_at = now() - interval '1 second' where id = ${id}`;
  await sql`select memory_private.run_purge_step()`;

  // as_of reads the memories that exist now, as they were then (docs/graph.md#as-of): the purged
  // one is not among them, whatever the instant.
  assert.equal((await api("GET", `/memory/${id}?as_of=${held}`, { as: t })).status, 404);
  const listed = await api("GET", `/memory?namespace_prefix=devai/project/api&as_of=${held}`, { as: t });
  assert.deepEqual(listed.body.memories, []);
  const history = await api("GET", `/memory/${id}/history`, { as: t });
  assert.deepEqual([history.body.purged, history.body.history.map((h: { event: string }) => h.event)], [
    true,
    ["PURGE", "DELETE", "ADD"],
  ]);
});

Deno.test(
  { name: "as_of: retrieve and memory.query answer from what was held then, and reinforce nothing", ...opts },
  async () => {
    const t = newTenant();
    const f = await correctedFact(t);
    const ask = { message: "Which Node version does the API service run in production?", project: "api" };

    const then = await post("/memory-retrieve", t, { ...ask, as_of: f.between });
    assert.equal(then.status, 200, JSON.stringify(then.body));
    assert.deepEqual(then.body.memories.map((m: { id: string }) => m.id), [f.oldId]);
    assert.match(then.body.block, /Node 18/);
    await flushSearchWrites(sql);
    const [untouched] = await sql`select access_count from public.devai_memories where id = ${f.oldId}`;
    assert.equal(untouched!.access_count, 0, "a historical answer is not a use of the memory");

    const now = await post("/memory-retrieve", t, ask);
    assert.deepEqual(now.body.memories.map((m: { id: string }) => m.id), [f.newId]);
    await flushSearchWrites(sql);
    const [used] = await sql`select access_count from public.devai_memories where id = ${f.newId}`;
    assert.equal(used!.access_count, 1);

    const query = { agent: "planner", query: ask.message, project: "api", categories: ["projects"], return: "full" };
    const q1 = await post("/memory-retrieve/query", t, { ...query, as_of: f.between });
    assert.equal(q1.status, 200, JSON.stringify(q1.body));
    assert.deepEqual(q1.body.results.map((r: { id: string; content: string }) => [r.id, r.content]), [[
      f.oldId,
      "The API service runs on Node 18 in production.",
    ]]);
    const q2 = await post("/memory-retrieve/query", t, { ...query, as_of: f.after });
    assert.deepEqual(q2.body.results.map((r: { id: string }) => r.id), [f.newId]);
    assert.equal((await post("/memory-retrieve", t, { ...ask, as_of: "last tuesday" })).status, 400);
  },
);

Deno.test(
  { name: "as_of: the list's as-of join bounds created_at by an index condition, not row by row", ...opts },
  async () => {
    const t = newTenant();
    const f = await correctedFact(t);
    const plan = await withTenant(sql, { tenantId: t, actor: "test" }, async (tx) => {
      // The table is small here: seq scans off, so the plan shows what the index can be given.
      await tx`set local enable_seqscan = off`;
      const rows = await tx<{ "QUERY PLAN": string }[]>`
      explain select m.id from public.devai_memories m ${recordedBy(tx, f.between)}
       order by m.created_at desc, m.id desc limit 2`;
      return rows.map((r) => r["QUERY PLAN"]).join("\n");
    });
    assert.match(plan, /Index Cond: .*created_at <= /, plan);
  },
);

Deno.test(
  { name: "as_of: the list filters and shows pinned as it was then, not as it is now", ...opts },
  async () => {
    // Filtered on today's values, as_of=<then>&pinned=true answered the memory pinned since and
    // missed the one unpinned since: an answer about the past that moved with later writes.
    const t = newTenant();
    const remember = async (content: string) =>
      (await api("POST", "/memory/remember", { as: t, body: { content, project: "pins" } })).body.memory.id as string;
    const wasPinned = await remember("The release branch is cut on Mondays");
    const pinnedSince = await remember("Hotfixes go straight to the release branch");
    // The pin is stamped after the memory's ADD: on PGlite's millisecond clock the two history rows
    // could share an instant, and as of then the ADD (not pinned) could be read as the last change.
    await dbNow();
    assert.equal((await api("POST", `/memory/${wasPinned}/pin`, { as: t })).status, 200);
    const then = await dbNow();
    assert.equal((await api("POST", `/memory/${wasPinned}/unpin`, { as: t })).status, 200);
    assert.equal((await api("POST", `/memory/${pinnedSince}/pin`, { as: t })).status, 200);

    const listed = (query: string) => api("GET", `/memory?project=pins&as_of=${then}${query}`, { as: t });
    const pinnedThen = (await listed("&pinned=true")).body.memories;
    assert.deepEqual(pinnedThen.map((m: { id: string; pinned: boolean }) => [m.id, m.pinned]), [[wasPinned, true]]);
    const unpinnedThen = (await listed("&pinned=false")).body.memories;
    assert.deepEqual(unpinnedThen.map((m: { id: string; pinned: boolean }) => [m.id, m.pinned]), [[
      pinnedSince,
      false,
    ]]);
    const one = await api("GET", `/memory/${wasPinned}?as_of=${then}`, { as: t });
    assert.equal(one.body.memory.pinned, true, "one memory as of then is shown pinned, as it was");
    // Now, as they are.
    const now = (await api("GET", "/memory?project=pins&pinned=true", { as: t })).body.memories;
    assert.deepEqual(now.map((m: { id: string }) => m.id), [pinnedSince]);
  },
);

Deno.test(
  {
    name: "as_of: a plain date is its midnight UTC, on GET /memory, GET /memory/{id}, retrieve and memory.query",
    ...opts,
  },
  async () => {
    // A date alone was 400 "Invalid ISO datetime" on every as_of while retrieval's after/before took
    // it: one parser (isoInstant) now reads it everywhere, as after/before do, at its midnight UTC.
    const t = newTenant();
    const id = await projectFact(t, "The billing service retries webhooks three times.");
    // Recorded at noon UTC on 2025-06-15: as of that day (its midnight) it was not recorded yet,
    // as of the next day it was.
    await sql`update public.devai_memories set created_at = '2025-06-15T12:00:00Z' where id = ${id}`;
    await sql`update public.memory_history set ts = '2025-06-15T12:00:00Z' where memory_id = ${id}`;

    assert.equal((await api("GET", `/memory/${id}?as_of=2025-06-15`, { as: t })).status, 404);
    const next = await api("GET", `/memory/${id}?as_of=2025-06-16`, { as: t });
    assert.deepEqual([next.status, next.body.held, next.body.as_of], [200, true, "2025-06-16"]);
    const listed = async (at: string) =>
      ((await api("GET", `/memory?project=api&as_of=${at}`, { as: t })).body.memories as { id: string }[])
        .map((r) => r.id);
    assert.deepEqual(await listed("2025-06-15"), []);
    assert.deepEqual(await listed("2025-06-16"), [id]);

    const ask = { message: "How many times does the billing service retry webhooks?", project: "api" };
    const found = async (path: string, body: Record<string, unknown>) => {
      const r = await post(path, t, body);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return ((r.body.memories ?? r.body.results) as { id: string }[]).map((x) => x.id);
    };
    assert.deepEqual(await found("/memory-retrieve", { ...ask, as_of: "2025-06-15" }), []);
    assert.deepEqual(await found("/memory-retrieve", { ...ask, as_of: "2025-06-16" }), [id]);
    const query = { agent: "planner", query: ask.message, project: "api", categories: ["projects"], return: "full" };
    assert.deepEqual(await found("/memory-retrieve/query", { ...query, as_of: "2025-06-15" }), []);
    assert.deepEqual(await found("/memory-retrieve/query", { ...query, as_of: "2025-06-16" }), [id]);

    // Not a calendar day, or not a date: 400 naming as_of, as before.
    for (const bad of ["2025-02-30", "2025-6-16", "yesterday"]) {
      const r = await api("GET", `/memory?as_of=${bad}`, { as: t });
      assert.equal(r.status, 400, bad);
      assert.deepEqual(r.body.error.issues.map((i: { path: string[] }) => i.path.join(".")), ["as_of"], bad);
    }
  },
);

Deno.test({ name: "close the pool", ...opts }, async () => {
  await sql.end();
});
