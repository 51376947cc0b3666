// The checkpointer: PUT/GET memory/checkpoints/{thread_id} with optimistic concurrency (a stale
// version is a 409 and writes nothing; of two writers racing on one version exactly one wins), the
// state returned as saved, a body over MAX_CHECKPOINT_BYTES a 413, a bad thread id a 400, another
// tenant's thread a 404.
import assert from "node:assert/strict";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, testSql } from "./support/seed.ts";

const sql = testSql();
const api = memoryApi(sql);
const opts = { sanitizeOps: false, sanitizeResources: false };

Deno.test(
  { name: "checkpoints: create at version 1, save on the version read, load what was saved", ...opts },
  async () => {
    const t = newTenant();
    const state = {
      graph: { node: "planner", step: 3 },
      messages: [{ role: "user", content: "héllo ✓" }],
      agents: { coder: { todo: [1, 2] } },
    };
    const created = await api("PUT", "/memory/checkpoints/thread-1", { as: t, body: { state } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.body.version, 1);
    assert.equal(created.headers.get("etag"), '"1"');
    assert.equal(created.body.size_bytes, new TextEncoder().encode(JSON.stringify(state)).byteLength);

    const loaded = await api("GET", "/memory/checkpoints/thread-1", { as: t });
    assert.equal(loaded.status, 200);
    assert.deepEqual(loaded.body.state, state);
    assert.deepEqual([loaded.body.thread_id, loaded.body.version], ["thread-1", 1]);

    const next = { ...state, graph: { node: "coder", step: 4 } };
    const saved = await api("PUT", "/memory/checkpoints/thread-1", { as: t, body: { state: next, version: 1 } });
    assert.deepEqual([saved.status, saved.body.version], [200, 2]);
    const reloaded = await api("GET", "/memory/checkpoints/thread-1", { as: t });
    assert.deepEqual(reloaded.body.state, next);
    // A load's times are the save's, written the same way (ISO 8601, UTC, milliseconds), so a
    // client can compare the strings.
    assert.deepEqual(
      [reloaded.body.created_at, reloaded.body.updated_at],
      [created.body.created_at, saved.body.updated_at],
    );
  },
);

Deno.test({
  name: "checkpoints: a lone surrogate in the state (a tool output cut mid-emoji) is saved as U+FFFD",
  ...opts,
}, async () => {
  const t = newTenant();
  const state = { messages: [{ role: "tool", content: "build ok \ud83d" }], ["k\udc00"]: "\ud800x", emoji: "ok 😀" };
  const saved = await api("PUT", "/memory/checkpoints/t-surrogate", { as: t, body: { state } });
  assert.equal(saved.status, 201, JSON.stringify(saved.body));
  const loaded = await api("GET", "/memory/checkpoints/t-surrogate", { as: t });
  assert.deepEqual(loaded.body.state, {
    messages: [{ role: "tool", content: "build ok \uFFFD" }],
    ["k\uFFFD"]: "\uFFFDx",
    emoji: "ok 😀",
  });
});

Deno.test({
  name: "checkpoints: a stale version is a 409 that writes nothing; two writers on one version, exactly one wins",
  ...opts,
}, async () => {
  const t = newTenant();
  await api("PUT", "/memory/checkpoints/t2", { as: t, body: { state: { v: "first" } } });
  const again = await api("PUT", "/memory/checkpoints/t2", { as: t, body: { state: { v: "blind create" } } });
  assert.deepEqual([again.status, again.body.error.code], [409, "version_conflict"]);
  const stale = await api("PUT", "/memory/checkpoints/t2", { as: t, body: { state: { v: "stale" }, version: 7 } });
  assert.equal(stale.status, 409);
  assert.match(stale.body.error.message, /at version 1/);
  assert.deepEqual((await api("GET", "/memory/checkpoints/t2", { as: t })).body.state, { v: "first" });

  const race = await Promise.all(
    ["a", "b", "c"].map((w) => api("PUT", "/memory/checkpoints/t2", { as: t, body: { state: { v: w }, version: 1 } })),
  );
  assert.deepEqual(race.map((r) => r.status).sort(), [200, 409, 409]);
  const winner = race.find((r) => r.status === 200)!;
  const now = await api("GET", "/memory/checkpoints/t2", { as: t });
  assert.equal(now.body.version, 2);
  assert.equal(winner.body.version, 2);
});

Deno.test({
  name: "checkpoints: over the size limit 413, bad thread id or state 400, another tenant's thread 404",
  ...opts,
}, async () => {
  const [t, other] = [newTenant(), newTenant()];
  const small = memoryApi(sql, { config: { maxCheckpointBytes: 1024 } });
  const big = await small("PUT", "/memory/checkpoints/t3", { as: t, body: { state: { blob: "x".repeat(2000) } } });
  assert.deepEqual([big.status, big.body.error.code], [413, "payload_too_large"]);
  assert.match(big.body.error.message, /MAX_CHECKPOINT_BYTES/);
  for (const body of [{ state: [1, 2] }, { state: "s" }, { state: {}, version: -1 }, { state: {}, extra: 1 }, {}]) {
    assert.equal((await api("PUT", "/memory/checkpoints/t3", { as: t, body })).status, 400, JSON.stringify(body));
  }
  assert.equal((await api("PUT", "/memory/checkpoints/bad%20thread", { as: t, body: { state: {} } })).status, 400);
  assert.equal((await api("GET", "/memory/checkpoints/t3", { as: t })).status, 404, "nothing was written");

  await api("PUT", "/memory/checkpoints/shared-name", { as: t, body: { state: { mine: true } } });
  const theirs = await api("GET", "/memory/checkpoints/shared-name", { as: other });
  assert.deepEqual([theirs.status, theirs.body.error.code], [404, "not_found"]);
  const update = await api("PUT", "/memory/checkpoints/shared-name", {
    as: other,
    body: { state: { x: 1 }, version: 1 },
  });
  assert.deepEqual(
    [update.status, update.body.error.code],
    [409, "version_conflict"],
    "another tenant's save finds no checkpoint of its own",
  );
  assert.deepEqual((await api("GET", "/memory/checkpoints/shared-name", { as: t })).body.state, { mine: true });
  assert.equal((await api("DELETE", "/memory/checkpoints/shared-name", { as: t })).status, 405);
});

Deno.test({ name: "checkpoints: a 1 MB state saves and loads intact", ...opts }, async () => {
  const t = newTenant();
  const state = {
    messages: Array.from(
      { length: 2000 },
      (_, i) => ({ role: i % 2 ? "assistant" : "user", content: `${i} ${"lorem ipsum dolor ".repeat(27)}` }),
    ),
  };
  const size = new TextEncoder().encode(JSON.stringify(state)).byteLength;
  assert.ok(size > 1_000_000, `${size} bytes`);
  assert.equal((await api("PUT", "/memory/checkpoints/big", { as: t, body: { state } })).status, 201);
  const loaded = await api("GET", "/memory/checkpoints/big", { as: t });
  assert.equal(loaded.body.size_bytes, size);
  assert.deepEqual(loaded.body.state, state);
  await sql.end();
});
