// When a session's cached prediction (docs/context.md#prefetch) may stand in for a signal's
// lookups: only where it was made for the same request context, and only while what it predicted
// still holds. Each case was an empty context served from a fresh prediction while a lookup finds
// the memory.
import assert from "node:assert/strict";
import { type ContextApi, contextApi, manualClock, ns, seedLinked } from "./support/context.ts";
import { memoryApi } from "./support/memory-api.ts";
import { dbTest } from "./support/http.ts";
import { newTenant, testSql } from "./support/seed.ts";

const sql = testSql();
const FILE = "src/index.ts";

const placedIds = (body: { memories: { id: string; tier: string }[] }) =>
  body.memories.filter((m) => m.tier !== "index").map((m) => m.id);

dbTest("prefetch: a prediction made in one project is not served to the session's assemble in another", async () => {
  const t = newTenant();
  const [alpha, beta] = await seedLinked(sql, t, [
    { content: `${FILE} of project alpha boots the API server on port 4000.`, namespace: ns("alpha") },
    { content: `${FILE} of project beta renders the CLI help.`, namespace: ns("beta") },
  ]);
  const api = contextApi(sql);
  try {
    await twoProjects(t, api, alpha!.id, beta!.id);
  } finally {
    await api.settle();
  }
});

async function twoProjects(t: string, api: ContextApi, alpha: string, beta: string) {
  const session = "s-two-projects";
  const predicted = await api.predict(t, { project: "alpha", file_opened: FILE, session_id: session });
  assert.equal(predicted.status, 200, JSON.stringify(predicted.body));
  assert.deepEqual(predicted.body.predicted_memories.map((m: { id: string }) => m.id), [alpha]);

  const body = { project: "beta", session_id: session, signals: { current_file: FILE } };
  const inBeta = await api.assemble(t, body);
  assert.equal(inBeta.status, 200, JSON.stringify(inBeta.body));
  assert.equal(inBeta.body.prefetch.status, "miss", "alpha's prediction is not beta's");
  assert.deepEqual(placedIds(inBeta.body), [beta]);

  // Each project keeps its own prediction for the same session and file.
  await api.predict(t, { project: "beta", file_opened: FILE, session_id: session });
  const inAlpha = await api.assemble(t, { ...body, project: "alpha" });
  assert.equal(inAlpha.body.prefetch.status, "fresh");
  assert.deepEqual(placedIds(inAlpha.body), [alpha]);
  const again = await api.assemble(t, body);
  assert.equal(again.body.prefetch.status, "fresh");
  assert.deepEqual(placedIds(again.body), [beta]);
}

dbTest(
  "prefetch: a prediction made before a merge serves the merged branch's notes once the assemble says it is merged",
  async () => {
    const t = newTenant();
    const gift = "src/gift/card.ts";
    const [note] = await seedLinked(sql, t, [{
      content: `${gift} stores gift cards as a separate tender type.`,
      namespace: ns("shop"),
      metadata: { branch: "feat/gift", files: [gift] },
    }]);
    const api = contextApi(sql);
    try {
      const session = "s-merge";
      // On main with feat/gift not merged yet: its note is not predicted.
      const predicted = await api.predict(t, { project: "shop", file_opened: gift, session_id: session });
      assert.equal(predicted.status, 200, JSON.stringify(predicted.body));
      assert.deepEqual(predicted.body.predicted_memories, []);

      // `git merge feat/gift`: the next assemble, served from that prediction, says so.
      const body = {
        project: "shop",
        session_id: session,
        signals: { current_file: gift, merged_branches: ["feat/gift"] },
      };
      const merged = await api.assemble(t, body);
      assert.equal(merged.status, 200, JSON.stringify(merged.body));
      assert.equal(merged.body.prefetch.status, "fresh");
      assert.deepEqual(placedIds(merged.body), [note!.id], "the merged branch's note is project knowledge now");

      // Not merged: served from the same prediction, left out and listed as such.
      const unmerged = await api.assemble(t, { ...body, signals: { current_file: gift } });
      assert.equal(unmerged.body.prefetch.status, "fresh");
      assert.deepEqual(placedIds(unmerged.body), []);
      assert.deepEqual(unmerged.body.excluded, [{ id: note!.id, reason: "unmerged_branch", branch: "feat/gift" }]);
    } finally {
      await api.settle();
    }
  },
);

dbTest(
  "prefetch: a stale prediction refreshed after an assemble on an unmerged branch keeps that branch's notes for the merge",
  async () => {
    const t = newTenant();
    const gift = "src/gift/balance.ts";
    const [note] = await seedLinked(sql, t, [{
      content: `${gift} rounds gift card balances down to the cent.`,
      namespace: ns("shop"),
      metadata: { branch: "feat/balance", files: [gift] },
    }]);
    // The database's clock: the seeded memory is not newer than the predictions.
    const clock = manualClock(new Date());
    const api = contextApi(sql, clock.now);
    try {
      const session = "s-refresh-merge";
      assert.equal((await api.predict(t, { project: "shop", file_opened: gift, session_id: session })).status, 200);
      await api.settle();

      // 40 s later (stale), still unmerged: served once more, then refreshed with that assemble's lineage.
      clock.advance(40);
      const body = { project: "shop", session_id: session, signals: { current_file: gift } };
      const unmerged = await api.assemble(t, body);
      assert.equal(unmerged.body.prefetch.status, "stale");
      assert.deepEqual(placedIds(unmerged.body), []);
      await api.settle();

      // `git merge feat/balance`: the refreshed prediction (fresh) holds the note all the same.
      clock.advance(5);
      const merged = await api.assemble(t, {
        ...body,
        signals: { current_file: gift, merged_branches: ["feat/balance"] },
      });
      assert.equal(merged.body.prefetch.status, "fresh");
      assert.deepEqual(placedIds(merged.body), [note!.id], "the merged branch's note is project knowledge now");
    } finally {
      await api.settle();
    }
  },
);

dbTest(
  "prefetch: a prediction whose memory was corrected or forgotten since is looked up again, so the correction is served",
  async () => {
    const t = newTenant();
    const charge = "src/billing/charge.ts";
    const [retries, declines] = await seedLinked(sql, t, [
      {
        content: `${charge} retries the card charge three times.`,
        namespace: ns("shop"),
        metadata: { files: [charge] },
      },
      {
        content: `${charge} logs every declined card with its number.`,
        namespace: ns("shop"),
        metadata: { files: [charge] },
      },
    ]);
    const clock = manualClock(new Date());
    const api = contextApi(sql, clock.now);
    const memory = memoryApi(sql);
    try {
      const session = "s-corrected";
      const predicted = await api.predict(t, { project: "shop", file_opened: charge, session_id: session });
      assert.equal(predicted.status, 200, JSON.stringify(predicted.body));
      assert.equal(predicted.body.predicted_memories.length, 2);
      const body = { project: "shop", session_id: session, signals: { current_file: charge } };

      // Within the prediction's 30 s, the user corrects one memory and forgets the other.
      const fixed = await memory("POST", `/memory/${declines!.id}/correct`, {
        as: t,
        body: { content: `${charge} logs declined cards without the card number.` },
      });
      assert.equal(fixed.status, 201, JSON.stringify(fixed.body));
      assert.equal((await memory("POST", `/memory/${retries!.id}/forget`, { as: t, body: {} })).status, 200);
      clock.advance(5);
      const after = await api.assemble(t, body);
      assert.equal(after.status, 200, JSON.stringify(after.body));
      assert.equal(after.body.prefetch.status, "expired", "the prediction no longer holds");
      assert.deepEqual(placedIds(after.body), [fixed.body.memory.id], "the correction, looked up");

      // A new prediction holds again.
      await api.predict(t, { project: "shop", file_opened: charge, session_id: session });
      const again = await api.assemble(t, body);
      assert.equal(again.body.prefetch.status, "fresh");
      assert.deepEqual(placedIds(again.body), [fixed.body.memory.id]);
    } finally {
      await api.settle();
    }
  },
);

dbTest("close the pool", async () => {
  await sql.end();
});
