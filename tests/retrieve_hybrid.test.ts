// Hybrid, intent-aware retrieval: intent and complexity classification, time windows, the
// exemplar classifier for neural embedders, and the handler end to end on real Postgres (signals
// per memory, pinned modes, time filters, bad input, the dedup neighbour lookup by keyword).
import assert from "node:assert/strict";
import {
  classifyComplexity,
  classifyIntentByKeywords,
  planSearch,
} from "../supabase/functions/_shared/search/intent.ts";
import { classifyByExemplars, INTENT_EXEMPLARS } from "../supabase/functions/_shared/search/intent-exemplars.ts";
import { resolveTime, windowFromText } from "../supabase/functions/_shared/search/time-window.ts";
import { keywordText, requestWindow, resolvePlan } from "../supabase/functions/_shared/search/plan.ts";
import { embeddingText, withoutExclusions } from "../supabase/functions/_shared/search/exclusions.ts";
import { asOfInstant } from "../supabase/functions/_shared/memories/as-of.ts";
import { type Embedder, EMBEDDING_DIMENSIONS, localEmbedder } from "../supabase/functions/_shared/embeddings.ts";
import { createHandler } from "../supabase/functions/memory-retrieve/handler.ts";
import { HttpError } from "../supabase/functions/_shared/http.ts";
import { withTenant } from "../supabase/functions/_shared/db.ts";
import { enqueueJob } from "../supabase/functions/_shared/jobs.ts";
import { userHeaders } from "./support/auth.ts";
import { realServerOnly } from "./support/backend.ts";
import { testConfig } from "./support/config.ts";
import { callJson, dbTest } from "./support/http.ts";
import { newTenant, seedMemories, seedMemory, seedRelation, tenantWrites, testSql } from "./support/seed.ts";
import { hashVector, reply, vectorWithSimilarity } from "./fake_openai.ts";
import { drainAll, EMBEDDING_MODEL, memoriesOf, writeEnv } from "./write_helpers.ts";

// ---------------------------------------------------------------------------------------------
// Pure parts

Deno.test("intent: keyword cues, with explicit times before question words", () => {
  const cases: [string, string][] = [
    ["Why did we drop the ORM?", "why"],
    ["what was the rationale for pinning Node 20", "why"],
    ["When did we upgrade Postgres?", "when"],
    ["what did we decide last week about caching", "when"],
    ["which flags changed 3 days ago", "when"],
    ["what happens when the build fails", "what"],
    ["Who owns the billing service?", "who"],
    ["How do I run the integration tests?", "how"],
    ["steps to rotate the API keys", "how"],
    ["What database does the project use?", "what"],
    ["tabs or spaces", "general"],
  ];
  for (const [text, intent] of cases) assert.equal(classifyIntentByKeywords(text).intent, intent, text);
  assert.equal(classifyIntentByKeywords("tabs or spaces").by, "default");
  assert.equal(classifyIntentByKeywords("Why?").by, "keyword");
});

Deno.test("complexity: short single questions are simple; long or multi-part ones complex", () => {
  assert.equal(classifyComplexity("which test runner do we use?"), "simple");
  assert.equal(
    classifyComplexity("what is the difference between the staging and production deploy pipelines"),
    "complex",
  );
  assert.equal(classifyComplexity("why did the build break? and who fixed it?"), "complex");
  // Parts joined by "and" or a comma, without a second question word: each part has its own answer.
  assert.equal(classifyComplexity("Which errors did the login form and the signup form show?"), "complex");
  assert.equal(classifyComplexity("What does a deploy touch, from the merge to the smoke test?"), "complex");
  // Short ones stay simple: "build and test" is one command.
  assert.equal(classifyComplexity("how do I build and test it?"), "simple");
  assert.equal(classifyComplexity("why did the import of 1,000 rows fail on staging?"), "simple");
  assert.equal(classifyComplexity(Array.from({ length: 30 }, (_, i) => `word${i}`).join(" ")), "complex");
  const simple = planSearch("general", "simple");
  const complex = planSearch("general", "complex");
  assert.ok(
    simple.topK < complex.topK && simple.budgetTokens < complex.budgetTokens && simple.graphDepth < complex.graphDepth,
  );
  assert.deepEqual(planSearch("how", "simple").preferMemoryTypes, ["procedural"]);
  assert.ok(planSearch("when", "simple").recencyWeight > 0);
  assert.ok(planSearch("why", "simple").graphDepth > simple.graphDepth);
  assert.ok(planSearch("why", "simple").graphEdgeTypes!.includes("supersedes"));
});

Deno.test("time windows: every accepted form, and what is refused", () => {
  const now = new Date("2026-11-23T15:30:00Z");
  assert.equal(resolveTime("today", now)!.toISOString(), "2026-11-23T00:00:00.000Z");
  assert.equal(resolveTime("yesterday", now)!.toISOString(), "2026-11-22T00:00:00.000Z");
  assert.equal(resolveTime("last_week", now)!.toISOString(), "2026-11-16T15:30:00.000Z");
  assert.equal(resolveTime("last_month", now)!.toISOString(), "2026-10-24T15:30:00.000Z");
  assert.equal(resolveTime("last_3_days", now)!.toISOString(), "2026-11-20T15:30:00.000Z");
  assert.equal(resolveTime("2026-11-01", now)!.toISOString(), "2026-11-01T00:00:00.000Z");
  assert.equal(resolveTime("2026-11-01T09:30:00+02:00", now)!.toISOString(), "2026-11-01T07:30:00.000Z");
  for (
    const bad of [
      "last_0_days",
      "last_9999_days",
      "2026-02-31",
      "0000-01-01",
      "tomorrowish",
      "10000-01-01",
      "2026-11-01T25:00:00Z",
      "",
    ]
  ) {
    assert.equal(resolveTime(bad, now), undefined, bad);
  }
  assert.throws(
    () => requestWindow({ after: "soon" }, now),
    (e: unknown) => e instanceof HttpError && e.status === 400 && e.issues![0]!.path[0] === "after",
  );
  assert.throws(
    () => requestWindow({ after: "2026-11-20", before: "2026-11-10" }, now),
    (e: unknown) => e instanceof HttpError && e.status === 400,
  );
  assert.equal(requestWindow({ before: "yesterday" }, now)!.before!.toISOString(), "2026-11-22T00:00:00.000Z");

  assert.equal(
    windowFromText("what did we decide last week about caching", now)!.after!.toISOString(),
    "2026-11-16T15:30:00.000Z",
  );
  assert.equal(windowFromText("the flaky test from 2 days ago", now)!.after!.toISOString(), "2026-11-20T15:30:00.000Z");
  assert.equal(windowFromText("which database do we use", now), undefined);
});

Deno.test("time words: counts written as words, and weeks or months counted, set the window and the when intent", () => {
  // now is 2026-11-23T15:30Z. Before, only "last 3 days" / "3 days ago" in digits were read: "in the
  // last two weeks" searched every memory of the scope, ranked as a what question.
  const now = new Date("2026-11-23T15:30:00Z");
  const cases: [string, string, string][] = [
    ["which errors were fixed in the last two weeks?", "2026-11-09T15:30:00.000Z", "last two weeks"],
    ["what changed in the last four days", "2026-11-19T15:30:00.000Z", "last four days"],
    ["what outage happened about two weeks ago?", "2026-11-02T15:30:00.000Z", "two weeks ago"],
    ["what did we do in the past 3 weeks", "2026-11-02T15:30:00.000Z", "past 3 weeks"],
    ["which release went out two months ago", "2026-08-25T15:30:00.000Z", "two months ago"],
    ["what did we decide in the last Ten Days", "2026-11-13T15:30:00.000Z", "last Ten Days"],
  ];
  for (const [text, after, phrase] of cases) {
    const w = windowFromText(text, now);
    assert.equal(w?.after?.toISOString(), after, text);
    assert.equal(w?.phrase, phrase, text);
    assert.equal(classifyIntentByKeywords(text).intent, "when", text);
  }
  // A count word is a whole word of a time phrase: "someone", "the two weeks of the freeze" are not.
  assert.equal(windowFromText("someone days ago", now), undefined);
  assert.equal(windowFromText("what happened in the two weeks of the freeze", now), undefined);
});

Deno.test("time words: a today that means nowadays sets no window; a today in a sentence about what happened does", () => {
  // Before, "which ORM does the app use today?" searched only what was recorded since midnight:
  // nothing, by every signal.
  const now = new Date("2026-11-23T15:30:00Z");
  for (
    const text of [
      "Which ORM does the storefront use today?",
      "Which CI runs the iOS tests today?",
      "Where are photos stored today?",
      "How are infrastructure changes applied today?",
      "what shows today's total on the home screen",
    ]
  ) {
    assert.equal(windowFromText(text, now), undefined, text);
    assert.notEqual(classifyIntentByKeywords(text).intent, "when", text);
  }
  for (
    const text of [
      "what broke today",
      "what did we ship today?",
      "which tests failed today",
      "what was fixed today",
      "errors since today",
    ]
  ) {
    assert.equal(windowFromText(text, now)?.after?.toISOString(), "2026-11-23T00:00:00.000Z", text);
    assert.equal(classifyIntentByKeywords(text).intent, "when", text);
  }
  // Another time word in the same question still counts.
  const both = "which flags do we use today, and what changed last week?";
  assert.equal(windowFromText(both, now)?.phrase, "last week");
  assert.equal(classifyIntentByKeywords(both).intent, "when");
});

Deno.test("intent exemplars: a neural embedder classifies cue-less queries by the nearest exemplars; the local one never", async () => {
  // A stand-in neural embedder: one axis per intent, chosen by the exemplar lists' own words.
  const axes: [string, RegExp][] = [
    ["why", /reason|motivation|why|made us/i],
    ["when", /when|last week|recently|friday/i],
    ["who", /who|whom|person/i],
    ["how", /how|steps|set up/i],
    ["what", /what|which/i],
  ];
  let calls = 0;
  const embedder: Embedder = {
    provider: "openai",
    model: "stand-in-neural",
    dimensions: EMBEDDING_DIMENSIONS,
    embed(texts) {
      calls++;
      return Promise.resolve(texts.map((t) => {
        const v = new Array(EMBEDDING_DIMENSIONS).fill(0.01);
        axes.forEach(([, re], i) => {
          if (re.test(t)) v[i] = 1;
        });
        return v;
      }));
    },
  };
  const unitAxis = (i: number) => Array.from({ length: EMBEDDING_DIMENSIONS }, (_, d) => (d === i ? 1 : 0.01));
  assert.equal(await classifyByExemplars(unitAxis(3), embedder), "how");
  assert.equal(await classifyByExemplars(unitAxis(2), embedder), "who");
  assert.equal(await classifyByExemplars(unitAxis(400), embedder), undefined, "far from every exemplar: no intent");
  assert.equal(calls, 1, "the exemplars are embedded once per model");
  assert.equal(await classifyByExemplars(unitAxis(3), localEmbedder()), undefined);
  assert.ok(Object.values(INTENT_EXEMPLARS).every((list) => list.length >= 5));
});

// ---------------------------------------------------------------------------------------------
// Through the handler, on the real database

Deno.test("time words inside a name are not times: the path keeps its words and the question its intent", () => {
  const now = new Date("2026-11-23T15:30:00Z");
  for (
    const text of [
      "src/reports/yesterday.ts",
      "what does src/reports/today.ts compute",
      "the yesterday_totals job",
      "ping @today",
      "open latest.json",
      "reports-today failed",
    ]
  ) {
    assert.notEqual(classifyIntentByKeywords(text).intent, "when", text);
    assert.equal(windowFromText(text, now), undefined, text);
  }
  assert.equal(windowFromText("what broke today.", now)!.after!.toISOString(), "2026-11-23T00:00:00.000Z");
  assert.equal(windowFromText("(yesterday) the deploy failed", now)!.after!.toISOString(), "2026-11-22T00:00:00.000Z");
  assert.equal(classifyIntentByKeywords("what changed in src/app.ts yesterday?").intent, "when");
});

Deno.test("time values: impossible days and clock times are refused; the documented range is accepted whole", () => {
  const now = new Date("2026-11-23T15:30:00Z");
  for (
    const bad of [
      "2026-02-31T10:00:00Z",
      "2026-11-01T24:00:00Z",
      "2026-11-01T10:60:00Z",
      "2026-11-01T10:00:61Z",
      "2026-11-01T10:00:00+24:00",
      "2025-02-29",
      "1969-12-31",
    ]
  ) {
    assert.equal(resolveTime(bad, now), undefined, bad);
  }
  assert.equal(resolveTime("2024-02-29T23:59:59Z", now)!.toISOString(), "2024-02-29T23:59:59.000Z");
  assert.equal(resolveTime("9999-12-31T12:00:00Z", now)!.toISOString(), "9999-12-31T12:00:00.000Z");
  assert.equal(resolveTime("1970-01-01", now)!.toISOString(), "1970-01-01T00:00:00.000Z");
  assert.equal(resolveTime("2026-11-01T10:00:00.123456+05:30", now)!.toISOString(), "2026-11-01T04:30:00.123Z");
});

Deno.test("time words: the keyword text loses the words that set the window, not the same letters in a name", async () => {
  const now = new Date("2026-11-23T15:30:00Z");
  const text = "src/reports/today.ts fails since today";
  const window = windowFromText(text, now);
  assert.equal(window!.index, text.lastIndexOf("today"));
  assert.equal(keywordText(text, { window }), "src/reports/today.ts fails since");
  // Inside an exclusion a time word is what to leave out, not when.
  const excluded = 'what failed -"deploy today"';
  assert.equal(withoutExclusions(excluded).length, excluded.length);
  assert.equal(windowFromText(withoutExclusions(excluded), now), undefined);
  assert.notEqual(classifyIntentByKeywords(withoutExclusions(excluded)).intent, "when");
  // The plan reads them so: no window, no `when`; the same words outside an exclusion set both.
  const plan = (text: string) => resolvePlan({ text }, localEmbedder(), undefined, () => now);
  const inside = await plan(excluded);
  assert.equal(inside.window, undefined);
  assert.notEqual(inside.intent.intent, "when");
  const outside = await plan("what failed deploy today");
  assert.equal(outside.window?.from, "query_text");
  assert.equal(outside.intent.intent, "when");
});

Deno.test("exclusions are not embedded; as_of covers the millisecond the API reports", () => {
  assert.equal(embeddingText("ERR_SOCKET_TIMEOUT -proxy"), "ERR_SOCKET_TIMEOUT");
  // A quote left open runs to the end, as memory_keyword_terms reads it.
  assert.equal(embeddingText('billing -"widget gizmo'), "billing");
  assert.equal(embeddingText('deploy -"fly deploy" staging'), "deploy staging");
  assert.equal(embeddingText("docker-compose up - now"), "docker-compose up - now");
  assert.equal(embeddingText("-proxy"), "-proxy", "a query of exclusions only is embedded as it is");
  // A pasted command's flags and negative numbers are no exclusions (public.memory_keyword_terms).
  assert.equal(embeddingText("git log -n 5 --oneline; exit -1"), "git log -n 5 --oneline; exit -1");
  assert.equal(embeddingText("a -bb c"), "a c");
  assert.equal(embeddingText("a\u00a0-bb c"), "a c", "a no-break space is a blank (Unicode White_Space)");
  assert.equal(embeddingText('-"foo"-bar baz'), "baz", "an exclusion right after another's closing quote");
  assert.equal(asOfInstant("2026-11-27T07:31:18.194Z"), "2026-11-27T07:31:18.194999Z");
  assert.equal(asOfInstant("2026-11-27T09:31:18+02:00"), "2026-11-27T07:31:18.000999Z");
  assert.equal(asOfInstant("2026-11-27T07:31:18.194155Z"), "2026-11-27T07:31:18.194155Z");
});

const sql = testSql();
const config = testConfig();
const URL = "http://localhost/functions/v1/memory-retrieve";

async function retrieve(tenant: string, body: Record<string, unknown>, embedder: Embedder = localEmbedder()) {
  return await callJson(createHandler({ sql, config, embedder }), URL, { headers: await userHeaders(tenant), body });
}

const P = "devai/project/web";
type Mem = { id: string; content: string; signals: Record<string, unknown>; injected: boolean };

dbTest(
  "hybrid: an identifier the vectors miss is found by keyword; every memory says which signals found it",
  async () => {
    const t = newTenant();
    const [exact] = await seedMemories(sql, t, [
      {
        content: "The checkout page crashed with ERR_STRIPE_KEY_MISSING until STRIPE_SECRET was set in .env.local.",
        namespace: P,
      },
      { content: "The checkout page uses Stripe Elements for card input.", namespace: P },
      { content: "Tailwind classes are sorted by the prettier plugin.", namespace: P },
    ]);
    const res = await retrieve(t, { message: "what does ERR_STRIPE_KEY_MISSING mean?", project: "web" });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const first = res.body.memories[0] as Mem;
    assert.equal(first.id, exact!.id);
    assert.equal((first.signals.keyword as { rank: number }).rank, 1);
    assert.ok(first.injected);
    assert.equal(res.body.search.mode, "hybrid");
    assert.equal(res.body.search.intent, "what");
    assert.deepEqual(Object.keys(res.body.search.weights).sort(), ["graph", "keyword", "rrf_k", "vector"]);
    assert.ok(
      res.body.search.weights.keyword > res.body.search.weights.vector,
      "the offline embedder weighs less than keywords",
    );
  },
);

dbTest("hybrid: a graph hit says which memory it came through", async () => {
  const t = newTenant();
  const [decision, reason] = await seedMemories(sql, t, [
    {
      content: "The team moved session storage from JWT cookies to Redis.",
      namespace: P,
      embedding: vectorWithSimilarity(hashVector("q"), 0.2, "a"),
    },
    {
      content: "Revoking tokens instantly was impossible, which forced the change.",
      namespace: P,
      embedding: vectorWithSimilarity(hashVector("q"), 0.0, "b"),
    },
  ]);
  await seedRelation(sql, t, reason!.id, decision!.id, 0.9, "related_to");
  const res = await retrieve(t, { message: "why session storage Redis", project: "web", graph_depth: 1 });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const viaGraph = (res.body.memories as Mem[]).find((m) => m.id === reason!.id);
  assert.ok(viaGraph, "the linked memory is returned");
  assert.deepEqual(viaGraph!.signals.graph, { rank: 1, via: decision!.id, edge: "related_to" });
  assert.equal(res.body.search.intent, "why");
});

dbTest("modes: keyword and vector can be pinned; keyword mode makes no embedding call", async () => {
  const t = newTenant();
  const [seeded] = await seedMemories(sql, t, [{
    content: "Run pnpm test --filter web before merging.",
    namespace: P,
  }]);
  let calls = 0;
  const counting: Embedder = {
    ...localEmbedder(),
    embed(texts) {
      calls++;
      return localEmbedder().embed(texts);
    },
  };
  const kw = await retrieve(t, { message: "pnpm test filter", project: "web", mode: "keyword" }, counting);
  assert.equal(kw.status, 200);
  assert.equal(calls, 0);
  assert.equal(kw.body.search.mode, "keyword");
  assert.deepEqual((kw.body.memories as Mem[]).map((m) => m.id), [seeded!.id], "keyword mode finds the memory");
  assert.ok((kw.body.memories as Mem[]).every((m) => m.signals.keyword && !m.signals.vector));
  const vec = await retrieve(t, { message: "pnpm test filter", project: "web", mode: "vector" }, counting);
  assert.equal(calls, 1);
  assert.deepEqual((vec.body.memories as Mem[]).map((m) => m.id), [seeded!.id], "vector mode finds the memory");
  assert.ok((vec.body.memories as Mem[]).every((m) => m.signals.vector && !m.signals.keyword));
});

dbTest("time: after/before filter, relative forms against `now`, and a window read from the question", async () => {
  const t = newTenant();
  const [old, recent] = await seedMemories(sql, t, [
    { content: "The team decided to cache API responses in Redis for five minutes.", namespace: P },
    { content: "The team decided to cache API responses at the CDN edge instead.", namespace: P },
  ]);
  await sql`update public.devai_memories set created_at = '2026-10-01T10:00:00Z' where id = ${old!.id}`;
  await sql`update public.devai_memories set created_at = '2026-11-20T10:00:00Z' where id = ${recent!.id}`;
  const now = "2026-11-23T12:00:00Z";
  const ids = (r: { body: { memories: Mem[] } }) => r.body.memories.map((m) => m.id);

  const windowed = await retrieve(t, { message: "cache API responses", project: "web", after: "last_week", now });
  assert.equal(windowed.status, 200, JSON.stringify(windowed.body));
  assert.deepEqual(ids(windowed), [recent!.id]);
  assert.equal(windowed.body.search.time_window.from, "request");

  const before = await retrieve(t, { message: "cache API responses", project: "web", before: "2026-11-01", now });
  assert.deepEqual(ids(before), [old!.id]);

  const spoken = await retrieve(t, {
    message: "what did we decide last week about caching API responses",
    project: "web",
    now,
  });
  assert.equal(spoken.body.search.intent, "when");
  assert.equal(spoken.body.search.time_window.from, "query_text");
  assert.deepEqual(ids(spoken), [recent!.id]);
});

dbTest(
  "bad input: unreadable times, after later than before, unknown mode are 400s naming the field; writes nothing",
  async () => {
    const t = newTenant();
    for (
      const [body, field] of [
        [{ message: "x", after: "next tuesday" }, "after"],
        [{ message: "x", before: "0000-01-01" }, "before"],
        [{ message: "x", after: "2026-11-20", before: "2026-11-01" }, "after"],
        [{ message: "x", mode: "fuzzy" }, "mode"],
        [{ message: "x", graph_depth: 9 }, "graph_depth"],
        [{ message: "x", intent: "where" }, "intent"],
        [{ message: "x", after: "" }, "after"],
        [{ message: "x", after: "2026-02-31T10:00:00Z" }, "after"],
        [{ message: "x", after: "yesterday", now: "0001-01-01T00:00:00Z" }, "now"],
        [{ message: "x", as_of: "9999-12-31T23:59:59-14:00" }, "as_of"],
        [{ message: "x", after: "last_week", now: "1970-01-05T00:00:00Z" }, "after"],
      ] as [Record<string, unknown>, string][]
    ) {
      const res = await retrieve(t, body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error.issues[0].path[0], field, JSON.stringify(res.body));
      if (body.after === "next tuesday") assert.equal(res.body.error.issues[0].code, "invalid_time");
      if (field === "after" && body.before === undefined && body.now === undefined) {
        assert.match(res.body.error.issues[0].message, /ISO date .* last_N_days/, JSON.stringify(res.body));
      }
      // A form it reads, whose instant falls outside the range from this `now`: said so.
      if (body.now === "1970-01-05T00:00:00Z") {
        assert.match(
          res.body.error.issues[0].message,
          /'last_week' resolves, from now \(1970-01-05T00:00:00.000Z\), outside/,
        );
      }
      if (field === "now" || field === "as_of") assert.match(res.body.error.issues[0].message, /9999-12-31/);
      if (res.body.error.issues[0].code === "invalid_time" && field !== "now" && body.now === undefined) {
        assert.match(
          res.body.error.issues[0].message,
          /last_N_days/,
        );
      }
    }
    // Counted after the pool's write-behind is written (tenantWrites flushes it): a search event
    // waiting there would otherwise not be counted, and the assertion could not fail.
    assert.equal((await tenantWrites(sql, t)).events, 0);
  },
);

dbTest("queries of only stop words or punctuation answer 200 (vector and graph signals), never 500", async () => {
  const t = newTenant();
  await seedMemories(sql, t, [{
    content: "The user prefers dark mode in every editor.",
    namespace: "devai/user/preferences",
  }]);
  for (const message of ["the of and", "???", "\" ' & | ! : * ( ) -", "-", '""']) {
    const res = await retrieve(t, { message });
    assert.equal(res.status, 200, `${message}: ${JSON.stringify(res.body)}`);
  }
});

dbTest("memory.query: hybrid too, with categories as a filter of every signal", async () => {
  const t = newTenant();
  const [withCategory] = await seedMemories(sql, t, [
    {
      content: "Use TS2345 fixes: add the missing generic to useQuery.",
      namespace: P,
      metadata: { category: "knowledge" },
    },
    { content: "TS2345 appears in the billing service too.", namespace: P, metadata: { category: "tone" } },
  ]);
  const res = await callJson(createHandler({ sql, config, embedder: localEmbedder() }), `${URL}/query`, {
    headers: await userHeaders(t),
    body: { agent: "researcher", query: "TS2345", project: "web", return: "full" },
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual(res.body.results.map((r: { id: string }) => r.id), [withCategory!.id]);
  assert.ok(res.body.results[0].signals.keyword);
  assert.equal(res.body.search.mode, "hybrid");
});

dbTest("RETRIEVAL_TOP_K: a fixed size for memory-retrieve and memory.query alike; a request's top_k wins", async () => {
  const t = newTenant();
  await seedMemories(
    sql,
    t,
    ["first", "second", "third"].map((n) => ({
      content: `ERR_LOCKFILE_DRIFT: the ${n} fix pins the npm version in CI.`,
      namespace: P,
      metadata: { category: "knowledge" },
    })),
  );
  const fixed = createHandler({
    sql,
    config: { ...config, retrieval: { ...config.retrieval, topK: 2 } },
    embedder: localEmbedder(),
  });
  const headers = await userHeaders(t);
  const retrieved = await callJson(fixed, URL, {
    headers,
    body: { project: "web", message: "ERR_LOCKFILE_DRIFT", threshold: 0, keyword_threshold: 0 },
  });
  assert.equal(retrieved.status, 200, JSON.stringify(retrieved.body));
  assert.equal(retrieved.body.memories.length, 2, JSON.stringify(retrieved.body.memories));
  const query = (body: Record<string, unknown>) =>
    callJson(fixed, `${URL}/query`, {
      headers,
      body: { agent: "researcher", query: "ERR_LOCKFILE_DRIFT", project: "web", return: "full", threshold: 0, ...body },
    });
  const queried = await query({});
  assert.equal(queried.status, 200, JSON.stringify(queried.body));
  assert.equal(queried.body.results.length, 2, JSON.stringify(queried.body.results));
  assert.equal((await query({ top_k: 3 })).body.results.length, 3, "the request's top_k wins");
});

dbTest(
  "exclusions: -word keeps a memory out whichever signal finds it, and the excluded word is not embedded",
  async () => {
    const t = newTenant();
    const [proxy, retry] = await seedMemories(sql, t, [
      { content: "ERR_SOCKET_TIMEOUT comes from the upstream proxy closing idle sockets.", namespace: P },
      { content: "ERR_SOCKET_TIMEOUT goes away when the client retries with backoff.", namespace: P },
    ]);
    const embedded: string[] = [];
    const recording: Embedder = {
      ...localEmbedder(),
      embed(texts) {
        embedded.push(...texts);
        return localEmbedder().embed(texts);
      },
    };
    for (const mode of ["hybrid", "vector"]) {
      const res = await retrieve(
        t,
        { message: "ERR_SOCKET_TIMEOUT -proxy", project: "web", mode, threshold: 0 },
        recording,
      );
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const ids = (res.body.memories as Mem[]).map((m) => m.id);
      assert.ok(!ids.includes(proxy!.id), `${mode}: the excluded memory is left out`);
      assert.ok(ids.includes(retry!.id), `${mode}: the other one stays`);
    }
    assert.ok(embedded.length > 0 && embedded.every((text) => !text.includes("proxy")), JSON.stringify(embedded));
  },
);

dbTest(
  "exclusions are the message's: one at the end of the longest message holds; project_context's, and a quote the message leaves open, reach no further",
  async () => {
    const t = newTenant();
    const [blue, other] = await seedMemories(sql, t, [
      { content: "We deploy with blue-green releases on Fridays.", namespace: P },
      { content: "We deploy the docs site on Fridays too.", namespace: P },
    ]);
    const question = "Which releases do we deploy on Fridays?";
    const longest = (tail: string) => question + " ".repeat(20_000 - question.length - tail.length) + tail;
    const context = (words: string) => "Project notes." + " ".repeat(4_000 - 14 - words.length) + words;
    const idsFor = async (body: Record<string, unknown>) => {
      const res = await retrieve(t, { ...body, project: "web", threshold: 0 });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return (res.body.memories as Mem[]).map((m) => m.id);
    };
    // Both texts at their limits: the exclusion is the message's last word.
    const excluded = await idsFor({ message: longest(" -blue"), project_context: context("docs site") });
    assert.ok(!excluded.includes(blue!.id), "the message's exclusion leaves the memory out");
    assert.ok(excluded.includes(other!.id), "the other one stays");
    // The context is what the caller works on: its `-blue` leaves nothing out.
    for (const message of [question, longest("ok")]) {
      const ids = await idsFor({ message, project_context: context("-blue") });
      assert.ok(ids.includes(blue!.id), "project_context's -blue excludes nothing");
    }
    // A quote left open in the message excludes its phrase, not the context after it.
    const open = await idsFor({
      message: 'Which releases do we deploy on Fridays? -"green',
      project_context: "docs site",
    });
    assert.ok(!open.includes(blue!.id), "the open phrase is left out");
    assert.ok(open.includes(other!.id), "the other one stays");
    const stray = await idsFor({ message: 'Which releases do we deploy on Fridays? -"', project_context: "docs site" });
    assert.ok(stray.includes(other!.id), "a stray -\" at the message's end leaves out nothing the context names");
  },
);

dbTest("search.weights: the weights the fusion used, not the nominal ones", async () => {
  const t = newTenant();
  await seedMemories(sql, t, [{ content: "Run pnpm test --filter web before merging.", namespace: P }]);
  const weights = async (body: Record<string, unknown>) =>
    (await retrieve(t, { project: "web", ...body })).body.search.weights as {
      keyword: number;
      vector: number;
      graph: number;
    };
  const kw = await weights({ message: "pnpm test filter", mode: "keyword" });
  assert.ok(kw.keyword > 0 && kw.vector === 0 && kw.graph === 0, JSON.stringify(kw));
  const vec = await weights({ message: "pnpm test filter", mode: "vector" });
  assert.ok(vec.vector > 0 && vec.keyword === 0 && vec.graph === 0, JSON.stringify(vec));
  const simple = await weights({ message: "pnpm test filter" });
  assert.equal(simple.graph, 0, "a simple question without names to look up has no graph signal");
  const why = await weights({ message: "why do we filter pnpm tests?" });
  assert.ok(why.graph > 0, "a why question hops");
});

dbTest("who/what: a simple question looks its names up as entities, without graph hops", async () => {
  const t = newTenant();
  const [owner] = await seedMemories(sql, t, [
    { content: "Dana reviews every change to the users API.", namespace: P },
    { content: "Tailwind classes are sorted by the prettier plugin.", namespace: P },
  ]);
  const [entity] = await sql<{ id: string }[]>`
    insert into public.memory_entities (owner_id, canonical_name, entity_type)
    values (${t}, 'src/api/users.ts', 'file') returning id`;
  await sql`insert into public.memory_entity_links (owner_id, memory_id, entity_id, mention)
            values (${t}, ${owner!.id}, ${entity!.id}, 'src/api/users.ts')`;
  const res = await retrieve(t, { message: "who owns src/api/users.ts", project: "web", threshold: 0 });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.search.intent, "who");
  assert.equal(res.body.search.graph_depth, 0);
  const found = (res.body.memories as Mem[]).find((m) => m.id === owner!.id);
  assert.deepEqual(found?.signals.graph, { rank: 1, via: entity!.id, edge: "entity" }, JSON.stringify(res.body));
  assert.ok(res.body.search.weights.graph > 0);
});

dbTest(
  "memory.query: context-all memories keep the time window; the intent steers it as it steers retrieval",
  async () => {
    const t = newTenant();
    const [convention, procedure] = await seedMemories(sql, t, [
      { content: "Every service logs JSON to stdout.", namespace: P, metadata: { category: "conventions" } },
      { content: "To release: tag the commit and push the tag.", namespace: P, memory_type: "procedural" },
      {
        content: "Releases happen on Thursdays after the release review.",
        namespace: P,
        metadata: { category: "workflows" },
      },
    ]);
    await sql`update public.devai_memories set created_at = '2020-01-01' where id = ${convention!.id}`;
    const handler = createHandler({ sql, config, embedder: localEmbedder() });
    const ask = async (body: Record<string, unknown>) =>
      callJson(handler, `${URL}/query`, {
        headers: await userHeaders(t),
        body: { agent: "coder", project: "web", ...body },
      });
    const all = await ask({ query: "release", return: "full" });
    assert.ok(
      all.body.results.some((r: { id: string }) => r.id === convention!.id),
      "a convention comes whatever the question",
    );
    const windowed = await ask({ query: "release", return: "full", after: "2026-01-01" });
    assert.equal(windowed.status, 200, JSON.stringify(windowed.body));
    assert.ok(
      !windowed.body.results.some((r: { id: string }) => r.id === convention!.id),
      JSON.stringify(windowed.body),
    );

    // "how" prefers procedures: memory.query's relevance for the procedure is retrieval's.
    const how = await ask({ query: "how do we release", return: "full", mode: "vector", threshold: 0 });
    assert.equal(how.body.search.intent, "how");
    const viaRetrieve = await retrieve(t, {
      message: "how do we release",
      project: "web",
      mode: "vector",
      threshold: 0,
    });
    const relevanceOf = (rows: { id: string; relevance: number }[]) =>
      rows.find((r) => r.id === procedure!.id)!.relevance;
    assert.equal(relevanceOf(how.body.results), relevanceOf(viaRetrieve.body.memories));
  },
);

Deno.test({
  ...realServerOnly(
    "as_of: the created_at the API reports (to the millisecond) is a time the memory is there",
    "PGlite's clock keeps milliseconds, so there is no gap to cover",
  ),
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const t = newTenant();
    // A memory whose created_at is not a whole millisecond (the API's times are): seeded again in
    // the rare case that it is, so the test always has the gap to fail on.
    let m: { id: string } | undefined, row: { created: string; micros: number } | undefined;
    for (let i = 0; i < 20 && !(row && row.micros > 0); i++) {
      [m] = await seedMemories(sql, t, [{
        content: `The gateway retries idempotent requests twice (${i}).`,
        namespace: P,
      }]);
      [row] = await sql<{ created: string; micros: number }[]>`
      select to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created,
             extract(microseconds from created_at)::int % 1000 as micros
        from public.devai_memories where id = ${m!.id}`;
    }
    assert.ok(row!.micros > 0);
    const res = await retrieve(t, { message: "gateway retries", project: "web", as_of: row!.created, threshold: 0 });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.ok(
      (res.body.memories as Mem[]).some((x) => x.id === m!.id),
      `as of ${row!.created} (+${row!.micros} us): ${JSON.stringify(res.body)}`,
    );
  },
});

Deno.test("dedup: a near-verbatim candidate is shown to the decision even when its vector disagrees", async () => {
  const env = await writeEnv();
  try {
    const tenant = newTenant();
    const base = hashVector("base memory");
    await seedMemory(env.sql, tenant, {
      content: "The task-api deploys with npm run deploy from the main branch.",
      namespace: "devai/project/taskforge",
      embedding: base,
      embedding_model: EMBEDDING_MODEL,
    });
    const text = "The task-api deploys with npm run deploy from main.";
    env.fake.setEmbedding(text, vectorWithSimilarity(base, 0.2, "far"));
    env.fake.onChat("NEW candidate", reply.json({ action: "NOOP", target: 0, reason: "same fact" }));
    await withTenant(env.sql, { tenantId: tenant, actor: "test" }, (tx) =>
      enqueueJob(tx, {
        ownerId: tenant,
        kind: "dedup",
        idempotencyKey: crypto.randomUUID(),
        payload: {
          origin: "api",
          candidates: [{
            content: text,
            type: "semantic",
            namespace: "devai/project/taskforge",
            source: "discovery",
            priority: "low",
            importance: 3,
          }],
        },
      }));
    await drainAll(env.deps, tenant);
    assert.equal(env.fake.chatRequests().length, 1, "the keyword neighbour reached the decision");
    assert.equal((await memoriesOf(env.sql, tenant)).length, 1, "NOOP: nothing added");
  } finally {
    await env.close();
  }
});
