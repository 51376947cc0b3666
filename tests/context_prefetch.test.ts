// context/predict and the per-session prefetch cache (docs/context.md#prefetch): a prediction for
// a session serves its next assemble while fresh (30 s) without looking the signal up again;
// stale, it is served once more and refreshed after the answer; too old, it is ignored. The
// clock is the handler's, moved by hand; the refresh is awaited as the work the handler deferred.
import assert from "node:assert/strict";
import { contextApi, manualClock, ns, seedLinked } from "./support/context.ts";
import { dbTest } from "./support/http.ts";
import { newTenant, tenantWrites, testSql } from "./support/seed.ts";

const sql = testSql();
const FILE = "src/cart/totals.ts";

async function seedCart(tenant: string) {
  return await seedLinked(sql, tenant, [
    {
      content: `${FILE} rounds every line total to cents before summing, never the sum.`,
      namespace: ns("cart"),
      metadata: { category: "decisions" },
    },
    {
      content: `Tax in ${FILE} is computed per line with the region's rate table.`,
      namespace: ns("cart"),
      metadata: { category: "architecture" },
    },
    {
      content: "Prices are stored as integer cents everywhere.",
      namespace: ns("cart"),
      metadata: { category: "conventions" },
    },
    {
      content: "ERR_TOTAL_MISMATCH means the client and server disagree on rounding: re-fetch the cart.",
      namespace: ns("cart"),
      metadata: { category: "errors_and_fixes" },
    },
  ]);
}

const placedIds = (body: { memories: { id: string; tier: string }[] }) =>
  body.memories.filter((m) => m.tier !== "index").map((m) => m.id);

dbTest("predict: what a file opened, a branch or an error will need, with a confidence", async () => {
  const t = newTenant();
  const [decision, tax, , mismatch] = await seedCart(t);
  const api = contextApi(sql);
  try {
    const file = await api.predict(t, { project: "cart", file_opened: FILE });
    assert.equal(file.status, 200, JSON.stringify(file.body));
    assert.deepEqual(
      file.body.predicted_memories.slice(0, 2).map((m: { id: string }) => m.id).sort(),
      [decision!.id, tax!.id].sort(),
    );
    assert.equal(file.body.predicted_memories[0].tier, "critical");
    assert.ok(file.body.confidence > 0.5, String(file.body.confidence)); // two exact citations of the file among the five best
    assert.equal(file.body.cached, false);
    assert.deepEqual(file.body.signals, [`file:${FILE}`]);
    const error = await api.predict(t, {
      project: "cart",
      error: "Error: ERR_TOTAL_MISMATCH (server 1043, client 1042)",
    });
    assert.equal(error.body.predicted_memories[0].id, mismatch!.id);
    assert.equal(error.body.predicted_memories[0].tag, "fix");
    assert.ok(error.body.confidence > 0 && error.body.confidence <= 1);
    const nothing = await api.predict(t, { project: "cart", branch: "feat/unrelated-words" });
    assert.deepEqual(nothing.body.predicted_memories, []);
    assert.equal(nothing.body.confidence, 0);

    const before = await tenantWrites(sql, t);
    for (
      const [body, field] of [[{ project: "cart" }, "file_opened"], [{ file_opened: FILE, limit: 0 }, "limit"], [{
        error: "",
      }, "error"]] as const
    ) {
      const bad = await api.predict(t, body);
      assert.equal(bad.status, 400);
      assert.deepEqual(bad.body.error.issues[0].path, [field]);
    }
    assert.deepEqual(await tenantWrites(sql, t), before);
  } finally {
    await api.settle(); // deferred work left by a failure would otherwise hang sql.end() below
  }
});

dbTest(
  "prefetch: fresh serves the next assemble without a lookup, stale is served once and refreshed, old is ignored",
  async () => {
    const t = newTenant();
    const [decision] = await seedCart(t);
    const clock = manualClock();
    const api = contextApi(sql, clock.now);
    try {
      const session = "s-prefetch";
      const predicted = await api.predict(t, { project: "cart", file_opened: FILE, session_id: session });
      assert.equal(predicted.body.cached, true);
      // What prediction accuracy counts: the memories the answer predicted (docs/context.md#usage-feedback).
      const [made] =
        await sql`select predicted_ids from public.context_prefetch where owner_id = ${t} and session_id = ${session}`;
      assert.deepEqual(made!.predicted_ids, predicted.body.predicted_memories.map((m: { id: string }) => m.id));

      // A memory citing the file written after the prediction: a lookup would find it, the cache does not know it.
      const [later] = await seedLinked(sql, t, [{
        content: `${FILE} is covered by property tests of rounding.`,
        namespace: ns("cart"),
        metadata: { category: "testing" },
      }]);
      const body = { project: "cart", session_id: session, signals: { current_file: FILE } };

      clock.advance(10);
      const fresh = await api.assemble(t, body);
      assert.equal(fresh.status, 200, JSON.stringify(fresh.body));
      assert.equal(fresh.body.prefetch.status, "fresh");
      assert.ok(placedIds(fresh.body).includes(decision!.id));
      assert.ok(!placedIds(fresh.body).includes(later!.id), "served from the cache, not looked up");
      assert.equal(await api.settle(), 1, "after the answer: the assembly's record, nothing to refresh while fresh");
      const [ev] =
        await sql`select meta from public.memory_events where owner_id = ${t} and meta ->> 'mode' = 'assemble' order by ts desc limit 1`;
      assert.equal(ev!.meta.searches, 0);

      clock.advance(30); // 40 s: stale
      const stale = await api.assemble(t, body);
      assert.equal(stale.body.prefetch.status, "stale");
      assert.ok(!placedIds(stale.body).includes(later!.id), "the stale prediction is served once more");
      assert.equal(await api.settle(), 2, "and refreshed after the answer (with the assembly's record)");
      const [row] =
        await sql`select computed_at, memory_ids, predicted_ids from public.context_prefetch where owner_id = ${t} and session_id = ${session}`;
      assert.equal(row!.computed_at.getTime(), clock.now().getTime());
      assert.ok(row!.memory_ids.includes(later!.id));
      assert.ok(row!.predicted_ids.includes(later!.id), "the refresh predicts as a predict of the file would");

      clock.advance(5);
      const refreshed = await api.assemble(t, body);
      await api.settle();
      assert.equal(refreshed.body.prefetch.status, "fresh");
      assert.ok(placedIds(refreshed.body).includes(later!.id));

      clock.advance(3600); // past context_prefetch_max_age_seconds: ignored
      const old = await api.assemble(t, body);
      assert.equal(old.body.prefetch.status, "expired");
      assert.ok(placedIds(old.body).includes(later!.id));
      assert.equal(await api.settle(), 1, "the record only: nothing served, nothing to refresh");

      // Another session has no prediction: a miss, looked up.
      const other = await api.assemble(t, { ...body, session_id: "s-other" });
      assert.equal(other.body.prefetch.status, "miss");
    } finally {
      await api.settle(); // deferred work left by a failure would otherwise hang sql.end() below
    }
  },
);

dbTest("prefetch: a file or branch naming a secret is keyed by a digest, so no secret is stored", async () => {
  const t = newTenant();
  await seedCart(t);
  const api = contextApi(sql);
  try {
    const pat = "ghp_Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8L9";
    const [file, branch] = [`src/cart/${pat}/totals.ts`, `fix/${pat}`];
    const session = "s-secret-names";
    for (const signal of [{ file_opened: file, branch }, { file_opened: FILE }]) {
      const predicted = await api.predict(t, { project: "cart", ...signal, session_id: session });
      assert.equal(predicted.status, 200, JSON.stringify(predicted.body));
    }
    const assembled = await api.assemble(t, {
      project: "cart",
      session_id: session,
      signals: { current_file: file, branch },
    });
    assert.equal(assembled.status, 200, JSON.stringify(assembled.body));
    assert.equal(assembled.body.prefetch.status, "fresh", "the digest keys find the predictions");
    await api.settle();
    const stored = await sql`
    select signal_key as s from public.context_prefetch where owner_id = ${t}
    union all select meta::text from public.memory_events where owner_id = ${t}`;
    assert.ok(stored.length >= 4, String(stored.length));
    assert.deepEqual(stored.filter((r) => r.s.includes(pat)).map((r) => r.s), [], "no row holds the token");
    assert.ok(stored.some((r) => r.s === `file:${FILE}`), "a name without a secret is its own key");
  } finally {
    await api.settle(); // deferred work left by a failure would otherwise hang sql.end() below
  }
});

dbTest("close the pool", async () => {
  await sql.end();
});
