// POST memory/usage (docs/context.md#usage-feedback): per-memory counters, a cited memory reinforced
// more than a merely retrieved one, memories injected often and never cited demoted in retrieval
// and assembly, the tenant's prediction accuracy and cited token share in memory/stats, bad input,
// and another tenant's ids.
import assert from "node:assert/strict";
import { createHandler as createRetrieveHandler } from "../supabase/functions/memory-retrieve/handler.ts";
import { countTokens } from "../supabase/functions/_shared/tokens.ts";
import { withTenant } from "../supabase/functions/_shared/db.ts";
import { bulletText } from "../supabase/functions/_shared/fit-text.ts";
import { injectedTokens, USAGE_TOKENIZED_BYTES } from "../supabase/functions/_shared/context/usage.ts";
import { userHeaders } from "./support/auth.ts";
import { testConfig } from "./support/config.ts";
import { contextApi, ns, seedLinked } from "./support/context.ts";
import { memoryApi } from "./support/memory-api.ts";
import { callJson, dbTest } from "./support/http.ts";
import { newTenant, seedMemories, seedRelation, tenantWrites, testSql } from "./support/seed.ts";
import { fixedEmbedder, vectorWithSimilarity } from "./support/vectors.ts";

const sql = testSql();
const api = contextApi(sql);

const usageOf = async (id: string) =>
  (await sql`select retrieval_count, citation_count, ignore_count from public.memory_usage where memory_id = ${id}`)[
    0
  ] ?? null;
const strengthOf = async (id: string) =>
  (await sql`select strength from public.devai_memories where id = ${id}`)[0]!.strength as number;

dbTest("usage: counters per memory; a cited memory is reinforced more than one merely retrieved", async () => {
  const t = newTenant();
  const [a, b] = await seedMemories(sql, t, [
    { content: "Cited memory.", namespace: ns("u"), strength: 0.5 },
    { content: "Ignored memory.", namespace: ns("u"), strength: 0.5 },
  ]);
  const res = await api.usage(t, { session_id: "s-1", retrieved: [a!.id, b!.id], cited: [a!.id] });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual(res.body, {
    session_id: "s-1",
    recorded: 2,
    cited: 1,
    unknown: [],
    inactive: [],
    cited_prefetched: 0,
    predicted_session: false,
    already_recorded: [],
  });
  assert.deepEqual(await usageOf(a!.id), { retrieval_count: 1, citation_count: 1, ignore_count: 0 });
  assert.deepEqual(await usageOf(b!.id), { retrieval_count: 1, citation_count: 0, ignore_count: 1 });
  assert.ok(Math.abs(await strengthOf(a!.id) - 0.7) < 1e-9, "cited: + citation_reinforce_step");
  assert.equal(await strengthOf(b!.id), 0.5, "retrieved only: nothing beyond the retrieval's own reinforcement");
  // A cited id missing from `retrieved` counts as retrieved too; a second report adds up.
  await api.usage(t, { session_id: "s-2", cited: [b!.id] });
  assert.deepEqual(await usageOf(b!.id), { retrieval_count: 2, citation_count: 1, ignore_count: 1 });
});

dbTest(
  "usage: a memory counts once per session; a resent report changes nothing and says what was recorded",
  async () => {
    const t = newTenant();
    const [a, b] = await seedMemories(sql, t, [
      { content: "Resent and cited.", namespace: ns("once"), strength: 0.5 },
      { content: "Resent, cited only later.", namespace: ns("once"), strength: 0.5 },
    ]);
    const report = { session_id: "hook", retrieved: [a!.id, b!.id], cited: [a!.id] };
    const first = await api.usage(t, report);
    assert.deepEqual([first.body.recorded, first.body.cited, first.body.already_recorded], [2, 1, []]);
    const totals = (await api.stats(t)).body.usage;
    // A hook resending its cumulative list each turn: ten more times, nothing moves.
    for (let i = 0; i < 10; i++) {
      const again = await api.usage(t, report);
      assert.equal(again.status, 200);
      assert.deepEqual(
        [again.body.recorded, again.body.cited, again.body.already_recorded],
        [0, 0, [a!.id, b!.id].sort()],
      );
    }
    assert.deepEqual(await usageOf(a!.id), { retrieval_count: 1, citation_count: 1, ignore_count: 0 });
    assert.deepEqual(await usageOf(b!.id), { retrieval_count: 1, citation_count: 0, ignore_count: 1 });
    assert.ok(Math.abs(await strengthOf(a!.id) - 0.7) < 1e-9, "reinforced once");
    assert.deepEqual((await api.stats(t)).body.usage, totals);
    // The session later cites b: its ignore becomes a citation, once; resending that changes nothing.
    const upgrade = { session_id: "hook", retrieved: [a!.id, b!.id], cited: [a!.id, b!.id] };
    for (const expected of [1, 0]) {
      const res = await api.usage(t, upgrade);
      assert.deepEqual([res.body.recorded, res.body.cited, res.body.already_recorded], [
        0,
        expected,
        [a!.id, b!.id].sort(),
      ]);
    }
    assert.deepEqual(await usageOf(b!.id), { retrieval_count: 1, citation_count: 1, ignore_count: 0 });
    assert.ok(Math.abs(await strengthOf(b!.id) - 0.7) < 1e-9, "the later citation reinforced once");
    const after = (await api.stats(t)).body.usage;
    assert.deepEqual([after.reports, after.retrieved, after.cited], [2, 2, 2]);
    // Another session counts anew.
    await api.usage(t, { session_id: "next", cited: [a!.id] });
    assert.deepEqual(await usageOf(a!.id), { retrieval_count: 2, citation_count: 2, ignore_count: 0 });
  },
);

dbTest("usage: a corrected or forgotten memory is answered inactive and nothing is written for it", async () => {
  const t = newTenant();
  const memory = memoryApi(sql);
  const [old, gone, live] = await seedMemories(sql, t, [
    { content: "The staging deploy runs on Fridays at noon.", namespace: ns("gone"), strength: 0.5 },
    { content: "The staging DB is at 10.0.0.5.", namespace: ns("gone"), strength: 0.5 },
    { content: "Deploys need a green build.", namespace: ns("gone"), strength: 0.5 },
  ]);
  const fixed = await memory("POST", `/memory/${old!.id}/correct`, {
    as: t,
    body: { content: "The staging deploy runs on Thursdays at noon." },
  });
  assert.equal(fixed.status, 201, JSON.stringify(fixed.body));
  assert.equal((await memory("POST", `/memory/${gone!.id}/forget`, { as: t, body: {} })).status, 200);
  const strengths = [await strengthOf(old!.id), await strengthOf(gone!.id)];

  const res = await api.usage(t, { session_id: "late", retrieved: [live!.id], cited: [old!.id, gone!.id] });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual(
    [res.body.recorded, res.body.cited, res.body.unknown, res.body.inactive],
    [1, 0, [], [old!.id, gone!.id].sort()],
  );
  assert.equal(await usageOf(old!.id), null);
  assert.equal(await usageOf(gone!.id), null);
  assert.deepEqual([await strengthOf(old!.id), await strengthOf(gone!.id)], strengths);
  // The control: the live memory beside them was counted, where usageOf reads.
  assert.deepEqual(await usageOf(live!.id), { retrieval_count: 1, citation_count: 0, ignore_count: 1 });
  const usage = (await api.stats(t)).body.usage;
  assert.deepEqual([usage.retrieved, usage.cited], [1, 0]);
});

dbTest(
  "usage: a memory injected often and never cited ranks below its equal twin, in retrieval and in assembly",
  async () => {
    const t = newTenant();
    // Retrieval, vector mode: two memories exactly as similar to the query.
    const [x, y] = await seedMemories(sql, t, [
      { content: "Twin x: the build uses turbo.", namespace: ns("r"), embedding: vectorWithSimilarity(0.9, 1) },
      { content: "Twin y: the build uses turbo too.", namespace: ns("r"), embedding: vectorWithSimilarity(0.9, 2) },
    ]);
    const retrieve = createRetrieveHandler({ sql, config: testConfig(), embedder: fixedEmbedder() });
    const order = async () =>
      (await callJson(retrieve, "http://localhost/functions/v1/memory-retrieve", {
        headers: await userHeaders(t),
        body: { message: "build?", project: "r", mode: "vector" },
      }))
        .body.memories.map((m: { id: string }) => m.id);
    const [first, second] = await order();
    for (let i = 0; i < 5; i++) await api.usage(t, { session_id: `s-${i}`, retrieved: [first], cited: [] });
    assert.deepEqual(await order(), [second, first]);
    assert.ok([x!.id, y!.id].includes(first));

    // Assembly: two conventions of equal weight in the background tier.
    const u = newTenant();
    const [c1, c2] = await seedLinked(sql, u, [
      {
        content: "Branch names start with the ticket number.",
        namespace: ns("a"),
        metadata: { category: "conventions" },
      },
      {
        content: "Commit messages use the imperative mood.",
        namespace: ns("a"),
        metadata: { category: "conventions" },
      },
    ]);
    const bgOrder = async () =>
      (await api.assemble(u, { project: "a" })).body.memories.filter((m: { tier: string }) => m.tier === "background")
        .map((m: { id: string }) => m.id);
    const [top] = await bgOrder();
    for (let i = 0; i < 5; i++) await api.usage(u, { session_id: `a-${i}`, retrieved: [top], cited: [] });
    const after = await bgOrder();
    assert.equal(after[1], top, `demoted: ${JSON.stringify(after)}`);
    assert.ok([c1!.id, c2!.id].includes(top));
  },
);

dbTest("stats: prediction accuracy and the share of injected tokens that were cited, per tenant", async () => {
  const t = newTenant();
  const [decision, , convention] = await seedLinked(sql, t, [
    {
      content: "src/pay/charge.ts charges the card only after the order is saved.",
      namespace: ns("pay"),
      metadata: { category: "decisions" },
    },
    {
      content: "src/pay/charge.ts retries a declined card once.",
      namespace: ns("pay"),
      metadata: { category: "architecture" },
    },
    {
      content: "Money is integer cents in every service.",
      namespace: ns("pay"),
      metadata: { category: "conventions" },
    },
  ]);
  const session = "s-stats";
  await api.predict(t, { project: "pay", file_opened: "src/pay/charge.ts", session_id: session });
  const assembled = await api.assemble(t, {
    project: "pay",
    session_id: session,
    signals: { current_file: "src/pay/charge.ts" },
  });
  await api.settle(); // the session's injection record, written after the answer
  const injected = assembled.body.memories.filter((m: { tier: string }) => m.tier !== "index");
  assert.ok(injected.some((m: { id: string }) => m.id === convention!.id));
  const tokens = new Map(injected.map((m: { id: string; tokens: number }) => [m.id, m.tokens]));
  // Cited: the predicted decision and the convention no prediction named.
  const res = await api.usage(t, {
    session_id: session,
    retrieved: injected.map((m: { id: string }) => m.id),
    cited: [decision!.id, convention!.id],
  });
  assert.equal(res.body.cited_prefetched, 1);
  assert.equal(res.body.predicted_session, true);
  // A report from a session without predictions does not count toward prediction accuracy.
  await api.usage(t, { session_id: "no-predictions", retrieved: [decision!.id], cited: [decision!.id] });

  const stats = await api.stats(t);
  assert.equal(stats.status, 200);
  const usage = stats.body.usage;
  assert.equal(usage.reports, 2);
  assert.equal(usage.cited, 3);
  assert.equal(usage.prediction_accuracy, 0.5);
  const injectedTokens = [...tokens.values()].reduce((s, n) => (s as number) + (n as number), 0) as number +
    countTokens("src/pay/charge.ts charges the card only after the order is saved.");
  const citedTokens = (tokens.get(decision!.id) as number) + (tokens.get(convention!.id) as number) +
    countTokens("src/pay/charge.ts charges the card only after the order is saved.");
  assert.equal(usage.injected_tokens, injectedTokens);
  assert.equal(usage.cited_tokens, citedTokens);
  assert.equal(usage.cited_token_share, Math.round((citedTokens / injectedTokens) * 10_000) / 10_000);
  assert.equal(usage.memories_reported, injected.length);
  // A fresh tenant: nothing to divide by.
  const empty = await api.stats(newTenant());
  assert.deepEqual(
    [empty.body.usage.reports, empty.body.usage.prediction_accuracy, empty.body.usage.cited_token_share],
    [0, null, null],
  );
});

dbTest(
  "stats: prediction accuracy counts the memories predict answered, not every memory its signal cached",
  async () => {
    const t = newTenant();
    const file = "src/ship/label.ts";
    // Three decisions on the file (predict's limit 2 answers the two strongest) and another
    // branch's unmerged note on it, which no prediction on main names.
    const [strong, second, third, unmerged] = await seedLinked(
      sql,
      t,
      [
        { content: `${file} prints labels through the carrier API.`, strength: 1, namespace: ns("ship") },
        { content: `${file} caches carrier rates for an hour.`, strength: 0.9, namespace: ns("ship") },
        { content: `${file} retries the carrier twice.`, strength: 0.5, namespace: ns("ship") },
        { content: `${file} will print labels as PDF.`, namespace: ns("ship"), metadata: { branch: "feat/pdf" } },
      ].map((m) => ({ ...m, metadata: { category: "decisions", files: [file], ...m.metadata } })),
    );
    const session = "s-accuracy";
    const predicted = await api.predict(t, { project: "ship", file_opened: file, session_id: session, limit: 2 });
    assert.deepEqual(predicted.body.predicted_memories.map((m: { id: string }) => m.id), [strong!.id, second!.id]);
    // The cache holds all four (an assemble judges their lineage with its own signals).
    const [row] =
      await sql`select memory_ids from public.context_prefetch where owner_id = ${t} and session_id = ${session}`;
    assert.equal(row!.memory_ids.length, 4);

    const cited = [strong!.id, third!.id, unmerged!.id];
    const res = await api.usage(t, { session_id: session, cited });
    assert.deepEqual([res.body.cited, res.body.cited_prefetched, res.body.predicted_session], [3, 1, true]);
    const usage = (await api.stats(t)).body.usage;
    assert.equal(usage.prediction_accuracy, Math.round((1 / 3) * 10_000) / 10_000);
  },
);

dbTest("stats: the two sides of a contradiction's bullet count its tokens once, each its own share", async () => {
  const t = newTenant();
  const [a, b] = [crypto.randomUUID(), crypto.randomUUID()].sort();
  const [first, second] = ["Deploys go out on Fridays after the freeze review.", "Deploys are frozen on Fridays."];
  await seedLinked(sql, t, [
    { id: a, content: first, namespace: ns("sides"), metadata: { category: "decisions" } },
    { id: b, content: second, namespace: ns("sides"), metadata: { category: "decisions" } },
  ]);
  await seedRelation(sql, t, b!, a!, 0.9, "contradicts");
  const assembled = await api.assemble(t, { project: "sides", session_id: "s-sides" });
  await api.settle(); // the session's injection record, written after the answer
  const bullet = `- [unresolved] ${first} ⟷ ${second}`;
  assert.ok(assembled.body.context.split("\n").includes(bullet), assembled.body.context);
  // The other side is its own text; the first side the rest (the tag and the separator).
  const tokens = Object.fromEntries(
    assembled.body.memories.map((m: { id: string; tokens: number }) => [m.id, m.tokens]),
  );
  assert.deepEqual(tokens, { [a!]: countTokens(bullet) - countTokens(second), [b!]: countTokens(second) });

  await api.usage(t, { session_id: "s-sides", retrieved: [a!, b!], cited: [b!] });
  const usage = (await api.stats(t)).body.usage;
  // Before: each side recorded with the whole bullet's tokens, so the bullet counted twice.
  assert.deepEqual([usage.injected_tokens, usage.cited_tokens], [countTokens(bullet), countTokens(second)]);
});

dbTest(
  "usage: the work of a report is bounded by the request, not by the stored text (long memories' tokens are estimated)",
  async () => {
    const t = newTenant();
    // 60 memories of 8,000 characters: 480 KB of stored text behind a 3 KB request.
    const long = await seedMemories(
      sql,
      t,
      Array.from({ length: 60 }, (_, i) => ({
        content: `Note ${i}: ${"the deploy pipeline retries flaky integration suites ".repeat(160)}`.slice(0, 8_000),
        namespace: ns("big"),
        embedding: null,
      })),
    );
    const ids = long.map((m) => m.id);
    const { tokens, tokenized } = await withTenant(
      sql,
      { tenantId: t, actor: "test" },
      (tx) => injectedTokens(tx, "s-big", ids),
    );
    assert.ok(tokenized > 0 && tokenized <= USAGE_TOKENIZED_BYTES, `${tokenized} bytes tokenized`);
    const sorted = [...ids].sort();
    // Counted exactly in id order while the budget lasts, then a quarter of the bytes.
    assert.equal(
      tokens[ids.indexOf(sorted[0]!)],
      countTokens(bulletText(long.find((m) => m.id === sorted[0])!.content)),
    );
    assert.equal(tokens[ids.indexOf(sorted.at(-1)!)], 2_000);
    const res = await api.usage(t, { session_id: "s-big", retrieved: ids, cited: [] });
    assert.equal(res.status, 200);
    assert.equal((await api.stats(t)).body.usage.injected_tokens, tokens.reduce((a, b) => a + b, 0));
  },
);

dbTest(
  "usage: bad input is a 400 naming the field and writes nothing; another tenant's ids are unknown and untouched",
  async () => {
    const t = newTenant(), other = newTenant();
    const [mine] = await seedMemories(sql, t, [{ content: "Mine.", namespace: ns("x") }]);
    const [theirs] = await seedMemories(sql, other, [{ content: "Theirs.", namespace: ns("x") }]);
    const before = await tenantWrites(sql, t);
    for (
      const [body, field] of [
        [{ retrieved: [mine!.id] }, "session_id"],
        [{ session_id: "s", retrieved: ["not-a-uuid"] }, "retrieved.0"],
        [{ session_id: "s" }, "retrieved"],
        [{ session_id: "s", retrieved: [mine!.id], extra: 1 }, "extra"],
      ] as const
    ) {
      const res = await api.usage(t, body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error.issues[0].path.join("."), field);
    }
    assert.deepEqual(await tenantWrites(sql, t), before);
    assert.equal(await usageOf(mine!.id), null);

    const res = await api.usage(t, { session_id: "s", retrieved: [mine!.id, theirs!.id], cited: [theirs!.id] });
    assert.equal(res.status, 200);
    assert.deepEqual([res.body.recorded, res.body.cited, res.body.unknown], [1, 0, [theirs!.id]]);
    // The control: a valid report is recorded where usageOf reads, so the nulls above and below mean nothing written.
    assert.notEqual(await usageOf(mine!.id), null);
    assert.equal(await usageOf(theirs!.id), null);
    assert.equal(await strengthOf(theirs!.id), 1);
    assert.equal((await api.stats(other)).body.usage.reports, 0);
  },
);

dbTest("close the pool", async () => {
  await api.settle();
  await sql.end();
});
