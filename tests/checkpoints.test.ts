// The checkpointer: PUT/GET memory/checkpoints/{thread_id} with optimistic concurrency (a stale
// version is a 409 and writes nothing; of two writers racing on one version exactly one wins), the
// state returned as saved, a body over MAX_CHECKPOINT_BYTES a 413, a bad thread id a 400, another
// tenant's thread a 404.
import assert from "node:assert/strict";
import { memoryApi, userHeaders } from "./support/memory-api.ts";
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

Deno.test({ name: "checkpoints: a key named __proto__ is saved and loaded like any other", ...opts }, async () => {
  const t = newTenant();
  // As a client's JSON parser gives it: __proto__ an own key, at the top and deeper.
  const text = '{"__proto__":{"seen":1},"words":{"__proto__":2,"constructor":3},"b":[{"__proto__":null}]}';
  const saved = await api("PUT", "/memory/checkpoints/t-proto", { as: t, body: { state: JSON.parse(text) } });
  assert.equal(saved.status, 201, JSON.stringify(saved.body));
  assert.equal(saved.body.size_bytes, new TextEncoder().encode(text).byteLength);
  const loaded = await api("GET", "/memory/checkpoints/t-proto", { as: t });
  // jsonb orders keys its own way: the same keys and values, __proto__ among them.
  assert.deepEqual(loaded.body.state, JSON.parse(text));
  assert.deepEqual(Object.keys(loaded.body.state).sort(), ["__proto__", "b", "words"]);
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
  name: "checkpoints: a state under the limit as stored saves again from the text a load returns, spaces and all",
  ...opts,
}, async () => {
  const t = newTenant();
  const small = memoryApi(sql, { config: { maxCheckpointBytes: 1024 } });
  const state = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, i]));
  assert.ok(JSON.stringify({ state }).length < 1024);
  assert.equal((await small("PUT", "/memory/checkpoints/spaced", { as: t, body: { state } })).status, 201);
  // A load returns the state as jsonb prints it, `": "` and `", "`: over the limit as text.
  const [row] = await sql<{ state: string }[]>`
    select state::text as state from public.supervisor_checkpoints where owner_id = ${t} and thread_id = 'spaced'`;
  const loaded = (await small("GET", "/memory/checkpoints/spaced", { as: t })).body;
  assert.deepEqual(loaded.state, state);
  const back = `{"state": ${row!.state}, "version": ${loaded.version}}`;
  assert.ok(back.length > 1024, `${back.length} bytes`);
  const saved = await small("PUT", "/memory/checkpoints/spaced", {
    as: t,
    headers: { ...(await userHeaders(t)) },
    rawBody: back,
  });
  assert.deepEqual([saved.status, saved.body.version, saved.body.size_bytes], [200, 2, JSON.stringify(state).length]);
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
  // Under the limit as sent, over it as stored: each short password's marker is longer than it.
  const grown = { state: { urls: Array.from({ length: 60 }, () => "https://a:b@h") } };
  assert.ok(JSON.stringify(grown).length < 1024);
  const stored = await small("PUT", "/memory/checkpoints/t3", { as: t, body: grown });
  assert.deepEqual([stored.status, stored.body.error?.code], [413, "payload_too_large"], JSON.stringify(stored.body));
  assert.match(stored.body.error.message, /as stored/);
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

Deno.test({
  name: "checkpoints: every string of the state is redacted at any depth, keys included, counted as writer checkpoint",
  ...opts,
}, async () => {
  const t = newTenant();
  const pat = "ghp_Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8L9";
  const key = "sk-proj-Zx8Kq2Lm5Np7Rt1Vw4Yb6Cd9Fg3Hj0Mn2Pq5St8Uv1Wx4Yz7Ab0Cd3Ef6Gh9Ij2Kl5";
  const state = {
    graph: { node: "coder", step: 2 },
    messages: [
      { role: "user", content: `push with ${pat}` },
      { role: "tool", content: [{ type: "text", text: `OPENAI_API_KEY=${key}` }] },
    ],
    agents: {
      coder: { tokens: { [pat]: "the key was a map key" }, deep: [[[`db postgres://app:Sup3r-S3cret-Pw@db:5432/x`]]] },
    },
  };
  const saved = await api("PUT", "/memory/checkpoints/t-secrets", { as: t, body: { state } });
  assert.equal(saved.status, 201, JSON.stringify(saved.body));
  const loaded = await api("GET", "/memory/checkpoints/t-secrets", { as: t });
  const [stored] = await sql`select state::text as s from public.supervisor_checkpoints where owner_id = ${t}`;
  for (const text of [JSON.stringify(loaded.body), stored!.s as string]) {
    assert.deepEqual([pat, key, "Sup3r-S3cret-Pw"].filter((s) => text.includes(s)), [], "no secret stored or loaded");
  }
  assert.deepEqual(loaded.body.state.graph, state.graph, "what holds no secret is as saved");
  assert.equal(loaded.body.state.messages[0].content, "push with [REDACTED:github_token]");
  assert.equal(loaded.body.state.messages[1].content[0].text, "OPENAI_API_KEY=[REDACTED:openai_key]");
  assert.deepEqual(Object.keys(loaded.body.state.agents.coder.tokens), ["[REDACTED:github_token]"]);
  assert.equal(saved.body.size_bytes, new TextEncoder().encode(JSON.stringify(loaded.body.state)).byteLength);

  // Versioning is unchanged: the next save names version 1; a stale one is a 409 that counts nothing.
  const next = await api("PUT", "/memory/checkpoints/t-secrets", {
    as: t,
    body: { state: { ...loaded.body.state, note: `again ${pat}` }, version: 1 },
  });
  assert.deepEqual([next.status, next.body.version], [200, 2]);
  const stale = await api("PUT", "/memory/checkpoints/t-secrets", { as: t, body: { state: { k: key }, version: 1 } });
  assert.equal(stale.status, 409);
  const stats = await api("GET", "/memory/stats", { as: t });
  assert.deepEqual(stats.body.redactions, {
    total: 5,
    dropped: 0,
    by_kind: { github_token: 3, openai_key: 1, password: 1 },
    by_writer: { checkpoint: 5 },
  });
});

Deno.test({
  name: "checkpoints: keys that become one key once stored are a 400 naming the object, nothing written",
  ...opts,
}, async () => {
  const t = newTenant();
  const a = "ghp_Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8L9";
  const b = "ghp_Z9x8C7v6B5n4M3l2K1j0H9g8F7d6S5a4P3o2I1";
  const cases: [string, Record<string, unknown>, (string | number)[]][] = [
    // Two tokens of one kind keying a map: both become [REDACTED:github_token].
    ["two-tokens", { agents: [{ quota: { [a]: { used: 10 }, [b]: { used: 99 } } }] }, ["state", "agents", 0, "quota"]],
    // A state loaded back (its marker key) with a new token added.
    ["marker-and-token", { m: { "[REDACTED:github_token]": "loaded", [a]: "new" } }, ["state", "m"]],
    // Two keys cut mid-emoji: both become k + U+FFFD.
    ["surrogates", Object.fromEntries([["k\udc00", 1], ["k\udc01", 2]]), ["state"]],
  ];
  for (const [thread, state, path] of cases) {
    const saved = await api("PUT", `/memory/checkpoints/${thread}`, { as: t, body: { state } });
    assert.deepEqual([saved.status, saved.body.error?.code], [400, "invalid_request"], JSON.stringify(saved.body));
    assert.deepEqual(saved.body.error.issues.map((i: { path: unknown }) => i.path), [path], thread);
    assert.equal((await api("GET", `/memory/checkpoints/${thread}`, { as: t })).status, 404, thread);
  }
  const [n] = await sql`select count(*)::int as n from public.memory_events where owner_id = ${t} and op = 'redact'`;
  assert.equal(n!.n, 0, "a refused save counts no redaction");
});

Deno.test({
  name: "checkpoints: a number a double cannot hold as sent is a 400, not saved as null or with other digits",
  ...opts,
}, async () => {
  const t = newTenant();
  // JSON.parse read 1e400 as Infinity (saved as null), 1e-400 as 0, a 19-digit id with its last digits changed.
  for (const n of ["1e400", "-1e400", "1e-400", "1234567890123456789", "9007199254740993"]) {
    const rawBody = `{"state": {"ok": "1e400 in a string is text", "ids": [1, ${n}]}}`;
    const saved = await api("PUT", "/memory/checkpoints/t-numbers", { as: t, rawBody });
    assert.deepEqual([saved.status, saved.body.error?.code], [400, "invalid_request"], n);
    assert.match(saved.body.error.message, new RegExp(`number ${n}\\b.*send it as a string`), n);
  }
  assert.equal((await api("GET", "/memory/checkpoints/t-numbers", { as: t })).status, 404, "nothing written");
  // What a double holds as sent is saved as sent.
  const rawBody = '{"state": {"n": [9007199254740992, 0.1, 1.5e3, -2, 1E308, 0e-400, 10000000000000000000]}}';
  assert.equal((await api("PUT", "/memory/checkpoints/t-numbers", { as: t, rawBody })).status, 201);
  const loaded = await api("GET", "/memory/checkpoints/t-numbers", { as: t });
  assert.deepEqual(loaded.body.state.n, [9007199254740992, 0.1, 1500, -2, 1e308, 0, 1e19]);
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
