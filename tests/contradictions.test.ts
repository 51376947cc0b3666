// Contradictions: found on write (a queued check against the new memory's nearest ones, the fake
// LLM as judge, cached per pair) and listed and resolved through the API: a_wins, b_wins,
// both_valid, merged, each applied and audited; bad input and other tenants' ids write nothing.
// The open ones are what the living context reads (public.context_open_contradictions).
import assert from "node:assert/strict";
import { withTenant } from "../supabase/functions/_shared/db.ts";
import { enqueueJob } from "../supabase/functions/_shared/jobs.ts";
import { MEMORIES_PER_CHECK, queueContradictionCheck } from "../supabase/functions/_shared/contradiction-check.ts";
import { judgedPairs, LOCAL_EMBEDDING, memoryWithLlm, scriptJudge } from "./support/consolidation.ts";
import { newTenant, seedMemories, tenantWrites } from "./support/seed.ts";
import { dbNow } from "./support/as-of.ts";
import { drainAll, writeEnv } from "./write_helpers.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const NS = "devai/project/shop/notes";

Deno.test({
  name: "on write: a new memory is checked against its nearest ones off the request's path; a pair is judged once",
  ...opts,
}, async () => {
  const env = await writeEnv({ config: { embedding: LOCAL_EMBEDDING } as never });
  try {
    const t = newTenant();
    const api = memoryWithLlm(env.sql, env.config, env.llm, env.embedder);
    scriptJudge(
      env.fake,
      (older, newer) => (/Fridays/.test(older) && /never/.test(newer) ? "contradiction" : "different"),
    );
    const first = await api("POST", "/memory/remember", t, {
      content: "The shop project deploys on Fridays.",
      project: "shop",
    });
    // The judge reads the pair as (older, newer) by created_at: the second is stamped later even on
    // PGlite's millisecond clock (two written in one millisecond tie, and the pair may be read the other way round).
    await dbNow(env.sql);
    const second = await api("POST", "/memory/remember", t, {
      content: "The shop project never deploys on Fridays.",
      project: "shop",
    });
    assert.equal(second.status, 201);
    assert.equal(env.fake.chatRequests().length, 0, "the request did not wait for a model");
    const queued = await env.sql<
      { kind: string }[]
    >`select kind from public.memory_jobs where owner_id = ${t} and status = 'queued'`;
    assert.deepEqual(queued.map((j) => j.kind), ["contradiction_check", "contradiction_check"]);

    const report = await drainAll(env.deps, t, "test-worker", 10, ["contradiction_check"]);
    assert.deepEqual([report.done, report.dead], [2, 0], JSON.stringify(report.jobs));
    assert.equal(judgedPairs(env.fake).flat().length, 1, "the pair is judged once, from whichever side comes first");
    const open = await api("GET", "/memory/contradictions", t);
    assert.deepEqual(
      open.body.contradictions.map((
        c: { memory_a: { id: string }; memory_b: { id: string }; detected_by: string; status: string },
      ) => [c.memory_a.id, c.memory_b.id, c.detected_by, c.status]),
      [[first.body.memory.id, second.body.memory.id, "write", "open"]],
    );

    // Asked again about the same memory: the cached verdict answers, no model call.
    await withTenant(
      env.sql,
      { tenantId: t, actor: "test" },
      (tx) =>
        enqueueJob(tx, {
          ownerId: t,
          kind: "contradiction_check",
          idempotencyKey: "again",
          payload: { memory_ids: [second.body.memory.id] },
        }),
    );
    const calls = env.fake.chatRequests().length;
    await drainAll(env.deps, t, "test-worker", 10, ["contradiction_check"]);
    assert.equal(env.fake.chatRequests().length, calls);
  } finally {
    await env.close();
  }
});

Deno.test({
  name: "on write: a batch of more memories than one job checks is queued as several jobs, every memory in one",
  ...opts,
}, async () => {
  const env = await writeEnv({ config: { embedding: LOCAL_EMBEDDING } as never, withLlm: false });
  try {
    const t = newTenant();
    const ids = Array.from({ length: 2 * MEMORIES_PER_CHECK + 5 }, () => crypto.randomUUID());
    await withTenant(env.sql, { tenantId: t, actor: "test" }, (tx) => queueContradictionCheck(tx, t, ids));
    const jobs = await env.sql<{ payload: { memory_ids: string[] } }[]>`
      select payload from public.memory_jobs where owner_id = ${t} and kind = 'contradiction_check'`;
    assert.equal(jobs.length, 3);
    assert.ok(jobs.every((j) => j.payload.memory_ids.length <= MEMORIES_PER_CHECK));
    assert.deepEqual(jobs.flatMap((j) => j.payload.memory_ids).sort(), [...ids].sort());
  } finally {
    await env.close();
  }
});

Deno.test({ name: "on write without an LLM: nothing is queued, the memory is stored as always", ...opts }, async () => {
  const env = await writeEnv({ config: { embedding: LOCAL_EMBEDDING } as never, withLlm: false });
  try {
    const t = newTenant();
    const api = memoryWithLlm(env.sql, env.config, undefined, env.embedder);
    assert.equal(
      (await api("POST", "/memory/remember", t, { content: "The shop project deploys on Fridays.", project: "shop" }))
        .status,
      201,
    );
    assert.equal((await env.sql`select 1 from public.memory_jobs where owner_id = ${t}`).length, 0);
  } finally {
    await env.close();
  }
});

/** Four contradicting pairs, recorded as the consolidation would. */
async function fourPairs(env: Awaited<ReturnType<typeof writeEnv>>, t: string) {
  const m = await seedMemories(env.sql, t, [
    { content: "Node 18 in CI.", namespace: NS },
    { content: "Node 20 in CI.", namespace: NS },
    { content: "Port 3000 in dev.", namespace: NS },
    { content: "Port 8080 in dev.", namespace: NS },
    { content: "Tabs for indentation.", namespace: "devai/user/preferences" },
    { content: "Spaces for indentation.", namespace: "devai/user/preferences" },
    { content: "Deploys on Fridays.", namespace: NS },
    { content: "No deploys on Fridays.", namespace: NS },
  ]);
  const ids = await env.sql<{ id: string }[]>`
    insert into public.memory_contradictions (owner_id, memory_a, memory_b, detected_by, reason)
    select ${t}, a, b, 'consolidation', 'test'
      from unnest(${[m[0]!.id, m[2]!.id, m[4]!.id, m[6]!.id]}::uuid[], ${[
    m[1]!.id,
    m[3]!.id,
    m[5]!.id,
    m[7]!.id,
  ]}::uuid[]) with ordinality as x(a, b, n)
     order by n
    returning id`;
  return { m: m.map((x) => x.id), c: ids.map((x) => x.id) };
}

Deno.test({
  name: "resolve: a_wins, b_wins, both_valid and merged each apply their outcome, audited as the user's",
  ...opts,
}, async () => {
  const env = await writeEnv({ config: { embedding: LOCAL_EMBEDDING } as never, withLlm: false });
  try {
    const t = newTenant();
    const { m, c } = await fourPairs(env, t);
    const api = memoryWithLlm(env.sql, env.config, undefined, env.embedder);
    const state = async (id: string) =>
      (await env.sql<
        { is_valid: boolean; superseded_by: string | null }[]
      >`select is_valid, superseded_by from public.devai_memories where id = ${id}`)[0]!;

    const aWins = await api("POST", `/memory/contradictions/${c[0]}/resolve`, t, {
      resolution: "a_wins",
      note: "CI stays on 18 until the upgrade",
    });
    assert.equal(aWins.status, 200, JSON.stringify(aWins.body));
    assert.deepEqual([
      aWins.body.contradiction.resolution,
      aWins.body.contradiction.status,
      aWins.body.contradiction.note,
    ], ["a_wins", "resolved", "CI stays on 18 until the upgrade"]);
    assert.deepEqual(await state(m[1]!), { is_valid: false, superseded_by: m[0] });
    assert.deepEqual(await state(m[0]!), { is_valid: true, superseded_by: null });

    assert.equal(
      (await api("POST", `/memory/contradictions/${c[1]}/resolve`, t, { resolution: "b_wins" })).status,
      200,
    );
    assert.deepEqual(await state(m[2]!), { is_valid: false, superseded_by: m[3] });

    assert.equal(
      (await api("POST", `/memory/contradictions/${c[2]}/resolve`, t, {
        resolution: "both_valid",
        note: "tabs in Go, spaces elsewhere",
      })).status,
      200,
    );
    assert.deepEqual([await state(m[4]!), await state(m[5]!)], [{ is_valid: true, superseded_by: null }, {
      is_valid: true,
      superseded_by: null,
    }]);

    const merged = await api("POST", `/memory/contradictions/${c[3]}/resolve`, t, {
      resolution: "merged",
      content: "Deploys happen on Fridays only before noon.",
    });
    assert.equal(merged.status, 200, JSON.stringify(merged.body));
    const newId = merged.body.contradiction.merged_id;
    const [fresh] = await env.sql`select content, source, priority from public.devai_memories where id = ${newId}`;
    assert.deepEqual({ ...fresh }, {
      content: "Deploys happen on Fridays only before noon.",
      source: "correction",
      priority: "highest",
    });
    assert.deepEqual([await state(m[6]!), await state(m[7]!)], [{ is_valid: false, superseded_by: newId }, {
      is_valid: false,
      superseded_by: newId,
    }]);

    const history = await env.sql<{ memory_id: string; event: string; actor: string }[]>`
      select memory_id, event, actor from public.memory_history where owner_id = ${t} and event = 'MERGE' order by memory_id`;
    assert.deepEqual(
      history.map((h) => [h.memory_id, h.actor]).sort(),
      [m[1], m[2], m[6], m[7]].map((id) => [id, `user:${t}`]).sort(),
    );

    const resolved = await api("GET", "/memory/contradictions?status=resolved", t);
    assert.deepEqual(resolved.body.contradictions.map((x: { resolution: string }) => x.resolution).sort(), [
      "a_wins",
      "b_wins",
      "both_valid",
      "merged",
    ]);
    assert.deepEqual((await api("GET", "/memory/contradictions", t)).body.contradictions, []);
  } finally {
    await env.close();
  }
});

Deno.test({
  name:
    "resolve: a loser forgotten or faded since is superseded all the same; restoring it brings back a replaced memory, not a second valid one",
  ...opts,
}, async () => {
  const env = await writeEnv({ config: { embedding: LOCAL_EMBEDDING } as never, withLlm: false });
  try {
    const t = newTenant();
    const { m, c } = await fourPairs(env, t);
    const api = memoryWithLlm(env.sql, env.config, undefined, env.embedder);
    const state = async (id: string) =>
      (await env.sql<{ is_valid: boolean; superseded_by: string | null; state: string }[]>`
        select is_valid, superseded_by, state from public.devai_memories where id = ${id}`)[0]!;
    // The loser of a_wins forgotten, the loser of b_wins faded away (decay's invalidation), one of
    // the merged pair forgotten: each moot in the list, and each resolvable.
    assert.equal((await api("POST", `/memory/${m[1]}/forget`, t, {})).status, 200);
    await env.sql.begin(async (tx) => {
      await tx`select set_config('memory.event', 'DECAY', true)`;
      await tx`update public.devai_memories set is_valid = false, strength = 0.01 where id = ${m[2]!}`;
    });
    assert.equal((await api("POST", `/memory/${m[7]}/forget`, t, {})).status, 200);

    const aWins = await api("POST", `/memory/contradictions/${c[0]}/resolve`, t, { resolution: "a_wins" });
    assert.equal(aWins.status, 200, JSON.stringify(aWins.body));
    assert.deepEqual(await state(m[1]!), { is_valid: false, superseded_by: m[0], state: "soft_deleted" });
    assert.equal(
      (await api("POST", `/memory/contradictions/${c[1]}/resolve`, t, { resolution: "b_wins" })).status,
      200,
    );
    assert.deepEqual(await state(m[2]!), { is_valid: false, superseded_by: m[3], state: "active" });
    const merged = await api("POST", `/memory/contradictions/${c[3]}/resolve`, t, {
      resolution: "merged",
      content: "Deploys happen on Fridays only before noon.",
    });
    assert.equal(merged.status, 200, JSON.stringify(merged.body));
    const newId = merged.body.contradiction.merged_id;
    assert.deepEqual([(await state(m[6]!)).superseded_by, (await state(m[7]!)).superseded_by], [newId, newId]);

    // Restored, the forgotten losers are back as what the resolution made them: replaced, out of
    // the valid ones listed; the faded one cannot be restored (it was replaced).
    for (const [id, keep] of [[m[1]!, m[0]!], [m[7]!, newId]]) {
      const restored = await api("POST", `/memory/${id}/restore`, t, {});
      assert.equal(restored.status, 200, JSON.stringify(restored.body));
      assert.deepEqual(await state(id), { is_valid: false, superseded_by: keep, state: "active" });
    }
    const faded = await api("POST", `/memory/${m[2]}/restore`, t, {});
    assert.deepEqual([faded.status, faded.body.error?.code], [409, "already_superseded"]);
    const listed = await api("GET", "/memory?limit=100&is_valid=true", t);
    const ids = new Set(listed.body.memories.map((x: { id: string }) => x.id));
    assert.deepEqual([m[0], m[1], m[2], m[3], m[7], newId].map((id) => ids.has(id)), [
      true,
      false,
      false,
      true,
      false,
      true,
    ]);
    // The supersede is the user's, audited like any other (a MERGE naming the winner).
    const merges = await env.sql<{ memory_id: string; new_ref: string; actor: string }[]>`
      select memory_id, new_ref, actor from public.memory_history
       where owner_id = ${t} and event = 'MERGE' and memory_id = any (${[m[1]!, m[2]!, m[7]!]}::uuid[])`;
    assert.deepEqual(
      merges.map((h) => [h.memory_id, h.new_ref, h.actor]).sort(),
      [[m[1], m[0], `user:${t}`], [m[2], m[3], `user:${t}`], [m[7], newId, `user:${t}`]].sort(),
    );
  } finally {
    await env.close();
  }
});

Deno.test({
  name: "resolve: a bad resolution is a 400, a resolved one a 409, another tenant's id a 404; none writes anything",
  ...opts,
}, async () => {
  const env = await writeEnv({ config: { embedding: LOCAL_EMBEDDING } as never, withLlm: false });
  try {
    const [t, other] = [newTenant(), newTenant()];
    const { c } = await fourPairs(env, t);
    const api = memoryWithLlm(env.sql, env.config, undefined, env.embedder);
    const before = await tenantWrites(env.sql, t);
    const cases: [string, string, unknown, number, string][] = [
      [t, c[0]!, { resolution: "c_wins" }, 400, "invalid_request"],
      [t, c[0]!, { resolution: "merged" }, 400, "invalid_request"],
      [t, c[0]!, { resolution: "a_wins", content: "x" }, 400, "invalid_request"],
      [t, "not-a-uuid", { resolution: "a_wins" }, 400, "invalid_id"],
      [other, c[0]!, { resolution: "a_wins" }, 404, "not_found"],
      [t, crypto.randomUUID(), { resolution: "a_wins" }, 404, "not_found"],
    ];
    for (const [as, id, body, status, code] of cases) {
      const res = await api("POST", `/memory/contradictions/${id}/resolve`, as, body);
      assert.deepEqual([res.status, res.body.error.code], [status, code], JSON.stringify([body, res.body]));
    }
    // The note is stored text (README "Characters stored text may not hold"): a lone surrogate
    // (Postgres would store U+FFFD), a bidirectional control or NUL is a 400 naming the note.
    for (const note of ["cut \ud800 mid-emoji", "a\u202eb", "a\u0000b"]) {
      const res = await api("POST", `/memory/contradictions/${c[0]}/resolve`, t, { resolution: "both_valid", note });
      assert.deepEqual(
        [res.status, res.body.error.code, res.body.error.issues?.[0]?.path],
        [400, "invalid_request", ["note"]],
        JSON.stringify([note, res.body]),
      );
    }
    assert.deepEqual(await tenantWrites(env.sql, t), before);
    assert.deepEqual(
      (await api("GET", "/memory/contradictions", other)).body.contradictions,
      [],
      "another tenant lists none",
    );
    assert.equal((await api("GET", "/memory/contradictions?status=closed", t)).status, 400);

    assert.equal(
      (await api("POST", `/memory/contradictions/${c[0]}/resolve`, t, { resolution: "both_valid" })).status,
      200,
    );
    const twice = await api("POST", `/memory/contradictions/${c[0]}/resolve`, t, { resolution: "a_wins" });
    assert.deepEqual([twice.status, twice.body.error.code], [409, "already_resolved"]);
  } finally {
    await env.close();
  }
});

Deno.test({
  name:
    "open contradictions for the living context: both memories valid and in the scopes asked; resolved and moot ones left out",
  ...opts,
}, async () => {
  const env = await writeEnv({ config: { embedding: LOCAL_EMBEDDING } as never, withLlm: false });
  try {
    const t = newTenant();
    const { m, c } = await fourPairs(env, t);
    await env
      .sql`update public.devai_memories set state = 'soft_deleted', purge_at = now() + interval '30 days' where id = ${m[
        7
      ]!}`;
    const api = memoryWithLlm(env.sql, env.config, undefined, env.embedder);
    assert.equal(
      (await api("POST", `/memory/contradictions/${c[1]}/resolve`, t, { resolution: "both_valid" })).status,
      200,
    );
    // What context/assemble's critical tier reads (public.context_open_contradictions).
    const open = (scopes: string[]) =>
      withTenant(
        env.sql,
        { tenantId: t, actor: "test" },
        (tx) =>
          tx<
            { memory_a: string; memory_b: string }[]
          >`select memory_a, memory_b from public.context_open_contradictions(${scopes}::text[])`,
      );
    assert.deepEqual(
      (await open(["devai/project/shop"])).map((x) => [x.memory_a, x.memory_b]),
      [[m[0], m[1]]],
      "project scope only; the resolved pair and the forgotten one's (moot) are not open",
    );
    assert.equal((await open(["devai/project/shop", "devai/user"])).length, 2);
    const theirs = await withTenant(
      env.sql,
      { tenantId: newTenant(), actor: "test" },
      (tx) => tx`select * from public.context_open_contradictions(array['devai/project/shop'])`,
    );
    assert.equal(theirs.length, 0, "another tenant sees none");
    const listed = await api("GET", "/memory/contradictions?status=all", t);
    assert.equal(listed.body.contradictions.find((x: { id: string }) => x.id === c[3])!.status, "moot");
  } finally {
    await env.close();
  }
});

Deno.test({
  name: "resolve: a note whose redaction markers outgrow its 1000 characters is shortened, not a 422",
  ...opts,
}, async () => {
  const env = await writeEnv({ config: { embedding: LOCAL_EMBEDDING } as never, withLlm: false });
  try {
    const t = newTenant();
    const { c } = await fourPairs(env, t);
    const api = memoryWithLlm(env.sql, env.config, undefined, env.embedder);
    const note = `ci ${"y".repeat(975)} DB_PASSWORD=hunter2 ok`.slice(0, 1000);
    const res = await api("POST", `/memory/contradictions/${c[0]}/resolve`, t, { resolution: "a_wins", note });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const stored = res.body.contradiction.note as string;
    assert.ok([...stored].length <= 1000 && stored.endsWith("…"), stored);
    assert.equal(stored.includes("hunter2"), false);
  } finally {
    await env.close();
  }
});

Deno.test({
  name: "on write: two memories created in one instant are read OLDER / NEWER by id, whichever side is checked",
  ...opts,
}, async () => {
  const env = await writeEnv({ config: { embedding: LOCAL_EMBEDDING } as never });
  try {
    scriptJudge(env.fake, () => "different");
    const api = memoryWithLlm(env.sql, env.config, env.llm, env.embedder);
    // Per tenant: the pair stored with one created_at, then checked from the memory with the
    // smaller id in the first tenant and from the larger in the second. Before, the memory the
    // check started from was always NEWER on a tie: the two tenants' pairs read opposite ways.
    for (const side of ["smaller", "larger"] as const) {
      const t = newTenant();
      const ids: Record<string, string> = {};
      for (const content of ["The shop project deploys on Fridays.", "The shop project never deploys on Fridays."]) {
        const res = await api("POST", "/memory/remember", t, { content, project: "shop" });
        assert.equal(res.status, 201);
        ids[content] = res.body.memory.id;
      }
      await env.sql`update public.devai_memories set created_at = '2026-11-01T00:00:00Z' where owner_id = ${t}`;
      await env.sql`delete from public.memory_jobs where owner_id = ${t}`;
      const sorted = Object.values(ids).sort();
      const from = side === "smaller" ? sorted[0]! : sorted[1]!;
      await withTenant(env.sql, { tenantId: t, actor: "test" }, (tx) => queueContradictionCheck(tx, t, [from]));
      const before = judgedPairs(env.fake).flat().length;
      const report = await drainAll(env.deps, t, "test-worker", 10, ["contradiction_check"]);
      assert.deepEqual([report.done, report.dead], [1, 0], JSON.stringify(report.jobs));
      const pairs = judgedPairs(env.fake).flat().slice(before);
      const byContent = Object.fromEntries(Object.entries(ids).map(([c, id]) => [id, c]));
      assert.deepEqual(pairs, [[byContent[sorted[0]!], byContent[sorted[1]!]]], `checked from the ${side} id`);
    }
  } finally {
    await env.close();
  }
});
