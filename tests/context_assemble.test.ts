// POST context/assemble against the real database: the tiers a debugging and a feature session
// get, exact budgets with a pathological memory, determinism, compression levels (a model's
// forms when stored), contradictions in the critical tier, bad input (400 naming the field,
// nothing written), missing signals, and tenant isolation. docs/context.md.
import assert from "node:assert/strict";
import { contentDigest } from "../supabase/functions/_shared/context/compress.ts";
import { countTokens } from "../supabase/functions/_shared/tokens.ts";
import { userHeaders } from "./support/auth.ts";
import { CONTEXT_URL, contextApi, ns, seedLinked } from "./support/context.ts";
import { callJson, dbTest } from "./support/http.ts";
import { newTenant, seedRelation, tenantWrites, testSql } from "./support/seed.ts";
import { createHandler } from "../supabase/functions/context/handler.ts";
import { testConfig } from "./support/config.ts";
import { type Embedder, EMBEDDING_DIMENSIONS, localEmbedder } from "../supabase/functions/_shared/embeddings.ts";

const sql = testSql();
const api = contextApi(sql);

const ERROR = "TypeError: Cannot read properties of undefined (reading 'user') at login (src/auth/login.ts:42:17)";

/** A small shop project: a decision about login.ts, an error fix, conventions, a workflow, architecture. */
async function seedShop(tenant: string) {
  return await seedLinked(sql, tenant, [
    {
      content: "src/auth/login.ts keeps sessions server-side in Redis; the client never decodes the JWT.",
      namespace: ns("shop"),
      metadata: { category: "decisions" },
    },
    {
      content:
        "TypeError reading 'user' in src/auth/login.ts comes from an expired session: check req.session before reading user.",
      namespace: ns("shop"),
      metadata: { category: "errors_and_fixes" },
      source: "error_resolution",
    },
    {
      content: "Every TypeScript module returns Result<T, E> values instead of throwing exceptions.",
      namespace: ns("shop"),
      metadata: { category: "conventions" },
    },
    {
      content: "Deploy the shop with pnpm test, then pnpm build, then fly deploy with the bluegreen strategy.",
      namespace: ns("shop", "workflows"),
      memory_type: "procedural",
    },
    {
      content: "The storefront is a Next.js 14 App Router application with server actions for checkout.",
      namespace: ns("shop"),
      metadata: { category: "architecture" },
    },
    {
      content: "Checkout posts orders to the orders service over gRPC with a five second deadline.",
      namespace: ns("shop"),
      metadata: { category: "architecture" },
    },
    {
      content: "Pull requests need one review and a green CI run before merging into main.",
      namespace: ns("shop"),
      metadata: { category: "workflows" },
    },
  ]);
}

dbTest(
  "debugging: the error's fix and the file's decision are critical, critical is widened, conventions compressed",
  async () => {
    const t = newTenant();
    const [decision, fix, convention] = await seedShop(t);
    const res = await api.assemble(t, {
      project: "shop",
      message: "login crashes after the session expires, why?",
      signals: { current_file: "src/auth/login.ts", recent_errors: [ERROR], activity: "debugging" },
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const body = res.body;
    assert.equal(body.budget, 8000);
    assert.ok(body.token_count <= 8000 && body.token_count === countTokens(body.context));
    const critical = body.memories.filter((m: { tier: string }) => m.tier === "critical");
    assert.deepEqual(critical.map((m: { id: string; tag: string }) => [m.id, m.tag]), [[decision!.id, "decision"], [
      fix!.id,
      "fix",
    ]]);
    assert.ok(body.context.includes(`- [decision] ${decision!.content}`), body.context);
    assert.ok(body.context.includes(`- [fix] ${fix!.content}`));
    // Debugging: critical gets 37.5% of what the heading leaves, background 18.75% (+ what the tiers before it left).
    const available = 8000 - countTokens("## Working Context");
    assert.equal(body.tiers.critical.budget, Math.floor(available * 0.375) + 1);
    assert.equal(body.activity, "debugging");
    // The convention is background, compressed or summarised (never beyond its summary).
    const conv = body.memories.find((m: { id: string }) => m.id === convention!.id);
    assert.equal(conv.tier, "background");
    assert.ok(["compressed", "summary"].includes(conv.level));
    for (const tier of ["critical", "relevant", "background", "index"]) {
      const section = body.context.split("\n\n").find((s: string) => s.toLowerCase().startsWith(`### ${tier}`)) ?? "";
      assert.equal(body.tiers[tier].token_count, countTokens(section), tier);
    }
    // After the answer: the critical and relevant memories are reinforced, one event describes the assembly.
    assert.equal(await api.settle(), 1);
    const [ev] = await sql`select meta from public.memory_events where owner_id = ${t} and node = 'context'`;
    assert.equal(ev!.meta.mode, "assemble");
    assert.equal(ev!.meta.injected, body.memories.filter((m: { tier: string }) => m.tier !== "index").length);
    // The critical and relevant memories are reinforced; background is standing context, not use.
    const access = async (id: string) =>
      (await sql`select access_count from public.devai_memories where id = ${id}`)[0]!.access_count;
    assert.equal(await access(decision!.id), 1);
    assert.equal(await access(convention!.id), 0);
  },
);

dbTest("an error on screen is searched for what it says: its `-verbose` is no exclusion", async () => {
  const t = newTenant();
  const [fix] = await seedLinked(sql, t, [
    {
      content: "The CLI's unknown option error for verbose: pass --verbose, not the single-dash form.",
      namespace: ns("shop"),
    },
  ]);
  const res = await api.assemble(t, {
    project: "shop",
    signals: { recent_errors: ["error: unknown option -verbose"], activity: "feature" },
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.ok(res.body.memories.some((m: { id: string }) => m.id === fix!.id), JSON.stringify(res.body.memories));
});

dbTest(
  "the message's -exclusions are not embedded: an excluded word pulls no memory in by the vector signal",
  async () => {
    const t = newTenant();
    // A stand-in neural embedder (the local one is not searched by vector here): a text naming a
    // proxy points along one axis, any other text along another.
    const model = "stand-in-neural";
    const axis = (i: number) => Array.from({ length: EMBEDDING_DIMENSIONS }, (_, d) => (d === i ? 1 : 0));
    const embedded: string[] = [];
    const embedder: Embedder = {
      provider: "openai",
      model,
      dimensions: EMBEDDING_DIMENSIONS,
      embed(texts) {
        embedded.push(...texts);
        return Promise.resolve(texts.map((text) => axis(/proxy/i.test(text) ? 1 : 2)));
      },
    };
    // The gateway memory names no word of the message: only the vector of `proxy` would find it.
    const [gateway, sockets] = await seedLinked(sql, t, [
      {
        content: "The gateway in front of the shop closes connections after sixty seconds.",
        namespace: ns("shop"),
        embedding: axis(1),
        embedding_model: model,
      },
      {
        content: "Idle sockets time out when the client sends no keep-alive.",
        namespace: ns("shop"),
        embedding: axis(2),
        embedding_model: model,
      },
    ]);
    const deferred: Promise<unknown>[] = [];
    const handler = createHandler({ sql, config: testConfig(), embedder, defer: (p) => void deferred.push(p) });
    const res = await callJson(handler, `${CONTEXT_URL}/assemble`, {
      headers: await userHeaders(t),
      body: { project: "shop", message: "why do idle sockets time out -proxy", signals: { activity: "feature" } },
    });
    await Promise.all(deferred);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const ids = res.body.memories.map((m: { id: string }) => m.id);
    assert.ok(!ids.includes(gateway!.id), `pulled in by -proxy: ${JSON.stringify(res.body.memories)}`);
    assert.ok(ids.includes(sockets!.id), JSON.stringify(res.body.memories));
    assert.deepEqual(embedded, ["why do idle sockets time out"]);
  },
);

dbTest("feature: the default shares; architecture relevant to the message; the index points at the rest", async () => {
  const t = newTenant();
  await seedShop(t);
  const res = await api.assemble(t, {
    project: "shop",
    budget: 300,
    message: "add a gift card step to checkout",
    signals: { activity: "feature" },
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const available = 300 - countTokens("## Working Context");
  assert.equal(res.body.tiers.critical.budget, Math.floor(available * 0.25) + 1);
  assert.ok(res.body.token_count <= 300);
  const relevant = res.body.memories.filter((m: { tier: string }) => m.tier === "relevant");
  assert.ok(relevant.length > 0, res.body.context);
  assert.ok(res.body.context.includes("checkout"), res.body.context);
  // Nothing critical: its budget flowed on, into relevant.
  assert.equal(res.body.tiers.critical.token_count, 0);
  assert.ok(res.body.tiers.relevant.budget > Math.floor(available * 0.375));
});

dbTest(
  "budgets: token_count ≤ budget from 200 to 32,000, a memory longer than its tier included; the same request renders the same text",
  async () => {
    const t = newTenant();
    await seedShop(t);
    const giant = Array.from(
      { length: 60 },
      (_, i) =>
        `Step ${i}: src/auth/login.ts validates the session cookie, refreshes it when older than an hour and logs the user out otherwise.`,
    ).join(" ");
    await seedLinked(sql, t, [{
      content: giant.slice(0, 3990),
      namespace: ns("shop"),
      metadata: { category: "decisions" },
    }]);
    const body = {
      project: "shop",
      message: "how does login validate sessions?",
      signals: { current_file: "src/auth/login.ts", activity: "debugging" },
    };
    for (const budget of [200, 257, 1000, 8000, 32000]) {
      const res = await api.assemble(t, { ...body, budget });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.ok(res.body.token_count <= budget, `budget ${budget}: ${res.body.token_count}`);
      assert.equal(res.body.token_count, countTokens(res.body.context));
      assert.ok(
        res.body.memories.some((m: { tier: string }) => m.tier === "critical"),
        `budget ${budget}: something critical fits`,
      );
    }
    const a = await api.assemble(t, { ...body, budget: 1000 });
    const b = await api.assemble(t, { ...body, budget: 1000 });
    assert.equal(a.body.context, b.body.context);
  },
);

dbTest("compression: a model's stored forms are used at their levels; open contradictions are critical", async () => {
  const t = newTenant();
  const content =
    "The payments team moved card tokenisation from the monolith to the vault service because PCI audits of the monolith took weeks.";
  const compression = {
    summary: "Card tokenisation moved to the vault service (PCI audits).",
    compressed: "payments: monolith→vault (PCI)",
    index: "tokenisation_vault",
    by: "llm",
    for: contentDigest(content),
  };
  const [m, a, b] = await seedLinked(sql, t, [
    { content, namespace: ns("pay"), metadata: { category: "conventions", compression } },
    {
      content: "Refunds are issued within five business days.",
      namespace: ns("pay"),
      metadata: { category: "decisions" },
    },
    { content: "Refunds are issued the same day.", namespace: ns("pay"), metadata: { category: "decisions" } },
  ]);
  await seedRelation(sql, t, b!.id, a!.id, 0.9, "contradicts");
  const res = await api.assemble(t, { project: "pay", budget: 400 });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const placed = res.body.memories.find((x: { id: string }) => x.id === m!.id);
  assert.equal(placed.compression, "llm");
  assert.ok(
    res.body.context.includes(
      placed.level === "compressed"
        ? "payments: monolith→vault (PCI)"
        : "Card tokenisation moved to the vault service (PCI audits).",
    ),
    res.body.context,
  );
  assert.ok(res.body.context.includes("- [unresolved] "), res.body.context);
  const unresolved = res.body.memories.filter((x: { tag?: string }) => x.tag === "unresolved").map((
    x: { id: string },
  ) => x.id).sort();
  assert.deepEqual(unresolved, [a!.id, b!.id].sort());
});

dbTest(
  "missing signals mean less context, not an error: no message and no signals gives background and index",
  async () => {
    const t = newTenant();
    await seedShop(t);
    const res = await api.assemble(t, { project: "shop" });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.ok(res.body.memories.length > 0);
    assert.ok(res.body.memories.every((m: { tier: string }) => m.tier === "background" || m.tier === "index"));
    assert.equal(res.body.prefetch.status, "none");
    const empty = await api.assemble(newTenant(), {});
    assert.equal(empty.status, 200);
    assert.equal(empty.body.context, "");
    assert.equal(empty.body.token_count, 0);
  },
);

dbTest("bad input: a 400 naming the field, and nothing written", async () => {
  const t = newTenant();
  await seedShop(t);
  const before = await tenantWrites(sql, t);
  const cases: [Record<string, unknown>, string][] = [
    [{ budget: 100 }, "budget"],
    [{ budget: 40000 }, "budget"],
    [{ budget: 8000.5 }, "budget"],
    [{ signals: { activity: "napping" } }, "signals.activity"],
    [{ signals: { recent_errors: "TypeError" } }, "signals.recent_errors"],
    [{ signals: { current_file: 42 } }, "signals.current_file"],
    [{ signals: { merged_branches: ["ok", "no spaces"] } }, "signals.merged_branches.1"],
    [{ signals: { ancestor_commits: ["not-hex"] } }, "signals.ancestor_commits.0"],
    [{ signals: [] }, "signals"],
    [{ budgett: 8000 }, "budgett"],
  ];
  for (const [body, field] of cases) {
    const res = await api.assemble(t, { project: "shop", ...body });
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.equal(res.body.error.code, "invalid_request");
    assert.ok(
      res.body.error.issues.some((i: { path: (string | number)[] }) => i.path.join(".") === field),
      `${JSON.stringify(body)} → ${JSON.stringify(res.body.error.issues)}`,
    );
  }
  const handler = createHandler({ sql, config: testConfig(), embedder: localEmbedder() });
  const wrongMethod = await callJson(handler, `${CONTEXT_URL}/assemble`, {
    method: "GET",
    headers: await userHeaders(t),
  });
  assert.equal(wrongMethod.status, 405);
  const unknown = await callJson(handler, `${CONTEXT_URL}/assembel`, { headers: await userHeaders(t), body: {} });
  assert.equal(unknown.status, 404);
  const noToken = await callJson(handler, `${CONTEXT_URL}/assemble`, { body: {} });
  assert.equal(noToken.status, 401);
  assert.deepEqual(await tenantWrites(sql, t), before);
});

dbTest("tenants: another tenant's memories, files and contradictions never reach the context", async () => {
  const mine = newTenant(), theirs = newTenant();
  await seedShop(theirs);
  const [a, b] = await seedLinked(sql, theirs, [
    { content: "Other tenant: deploys on Fridays.", namespace: ns("shop"), metadata: { category: "decisions" } },
    { content: "Other tenant: never deploy on Fridays.", namespace: ns("shop"), metadata: { category: "decisions" } },
  ]);
  await seedRelation(sql, theirs, b!.id, a!.id, 0.9, "contradicts");
  const [own] = await seedLinked(sql, mine, [{
    content: "Mine: src/auth/login.ts uses passkeys.",
    namespace: ns("shop"),
    metadata: { category: "decisions" },
  }]);
  const request = {
    project: "shop",
    message: "login sessions deploy checkout",
    signals: { current_file: "src/auth/login.ts", recent_errors: [ERROR], activity: "debugging" },
  };
  const res = await api.assemble(mine, request);
  assert.equal(res.status, 200);
  assert.deepEqual(res.body.memories.map((m: { id: string }) => m.id), [own!.id]);
  assert.ok(!res.body.context.includes("Other tenant") && !res.body.context.includes("Redis"));
  // The same request as the other tenant finds all of it: what mine left out was there to find.
  const theirsRes = await api.assemble(theirs, request);
  assert.equal(theirsRes.status, 200);
  assert.ok(theirsRes.body.context.includes("Other tenant") && theirsRes.body.context.includes("Redis"));
});

/** Five files of src/web, open in the tests below. */
const HELPER_FILES = Array.from({ length: 5 }, (_, i) => `src/web/h${i}.ts`);

/** `count` important memories citing HELPER_FILES, to crowd the file lookups. */
const webHelpers = (count: number, project: string) =>
  Array.from({ length: count }, (_, i) => ({
    content: `Helper ${i} formats dates for the web layer.`,
    namespace: ns(project),
    importance: 4,
    metadata: { category: "workflows", files: [HELPER_FILES[i % 5]!] },
  }));

dbTest("open files never take the current file's memories out of the critical tier", async () => {
  const t = newTenant();
  const [shared, testing] = await seedLinked(sql, t, [
    // Cites the current file and an open file whose path sorts first.
    {
      content: "The session store and the cookie helper share one signing key; rotate them together.",
      namespace: ns("cur"),
      metadata: { category: "decisions", files: ["src/web/session.ts", "src/web/cookie.ts"] },
    },
    {
      content: "session.ts tests run against a fake clock; never sleep in them.",
      namespace: ns("cur"),
      importance: 2,
      metadata: { category: "testing", files: ["src/web/session.ts"] },
    },
    // More, and more important, citations of the open files than the file lookup keeps.
    ...webHelpers(35, "cur"),
  ]);
  const open = ["src/web/cookie.ts", ...HELPER_FILES];
  for (const open_files of [[], open]) {
    const res = await api.assemble(t, { project: "cur", signals: { current_file: "src/web/session.ts", open_files } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const placed = (id: string) => res.body.memories.find((m: { id: string }) => m.id === id);
    // Before: with the files open, relevant and untagged, both.
    assert.deepEqual(
      [placed(shared!.id)?.tier, placed(shared!.id)?.tag],
      ["critical", "decision"],
      `open: ${open_files.length}`,
    );
    assert.deepEqual(
      [placed(testing!.id)?.tier, placed(testing!.id)?.tag],
      ["critical", "file"],
      `open: ${open_files.length}`,
    );
  }
});

dbTest("a memory in two open contradictions: all three memories are shown, each placed once", async () => {
  const t = newTenant();
  const [a, b, c] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()].sort();
  await seedLinked(sql, t, [
    { id: a, content: "Deploys go out on Fridays.", namespace: ns("two"), metadata: { category: "decisions" } },
    { id: b, content: "Deploys are frozen on Fridays.", namespace: ns("two"), metadata: { category: "decisions" } },
    { id: c, content: "Deploys happen only on Mondays.", namespace: ns("two"), metadata: { category: "decisions" } },
  ]);
  await seedRelation(sql, t, b!, a!, 0.9, "contradicts");
  await seedRelation(sql, t, c!, a!, 0.9, "contradicts");
  const res = await api.assemble(t, { project: "two", session_id: "two-contradictions" });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  // Before: one bullet, "Deploys go out on Fridays. ⟷ Deploys are frozen on Fridays.", and the
  // Monday memory nowhere (counted in `omitted`).
  for (const text of ["go out on Fridays", "frozen on Fridays", "only on Mondays"]) {
    assert.ok(res.body.context.includes(text), res.body.context);
  }
  assert.equal((res.body.context.match(/- \[unresolved\] /g) ?? []).length, 2, res.body.context);
  assert.deepEqual(res.body.memories.map((m: { id: string }) => m.id).sort(), [a, b, c]);
  assert.equal(res.body.tiers.critical.memories, 3);
  assert.equal(res.body.omitted, 0);
  // The memory on two bullets has its share of both: the memories' tokens add up to the bullets'.
  const bullets = res.body.context.split("\n").filter((l: string) => l.startsWith("- [unresolved] "));
  assert.equal(
    res.body.memories.reduce((sum: number, m: { tokens: number }) => sum + m.tokens, 0),
    bullets.reduce((sum: number, l: string) => sum + countTokens(l), 0),
  );
  await api.settle();
  const injected = await sql`select memory_id from public.context_injections
                              where owner_id = ${t} and session_id = 'two-contradictions' order by memory_id`;
  assert.deepEqual(injected.map((r) => r.memory_id), [a, b, c]);
});

dbTest("a contradiction too long for the critical tier points to both of its sides in the index", async () => {
  const t = newTenant();
  const [a, b] = [crypto.randomUUID(), crypto.randomUUID()].sort();
  // Thirty identifiers after the subject: even the compressed bullet of both sides is past 200 tokens' critical share.
  const long = (subject: string) =>
    `${subject} ${Array.from({ length: 30 }, (_, i) => `svc_${i}_xq${i * 7}zz_handler${i}`).join(" ")}.`;
  await seedLinked(sql, t, [
    {
      id: a,
      content: long("release_train_fridays ships"),
      namespace: ns("wide"),
      metadata: { category: "deployment" },
    },
    {
      id: b,
      content: long("deploy_freeze_fridays blocks"),
      namespace: ns("wide"),
      metadata: { category: "deployment" },
    },
  ]);
  await seedRelation(sql, t, b!, a!, 0.9, "contradicts");
  const res = await api.assemble(t, { project: "wide", budget: 200 });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.ok(!res.body.context.includes("[unresolved]"), res.body.context);
  // Before: a pointer to the first side only; the second was in neither the index nor the context (omitted 1).
  assert.deepEqual(res.body.memories.map((m: { id: string; tier: string }) => [m.id, m.tier]), [
    [a, "index"],
    [b, "index"],
  ]);
  assert.ok(res.body.context.includes("deploy_freeze_fridays"), res.body.context);
  assert.equal(res.body.omitted, 0);
});

dbTest("a current file's memory is found however many memories cite the open files", async () => {
  const t = newTenant();
  // Cites the current file through metadata.files only: neither its words nor its name say it.
  const [mine] = await seedLinked(sql, t, [
    {
      content: "Tests here run against a fake clock; never sleep in them.",
      namespace: ns("crowd"),
      importance: 2,
      metadata: { category: "testing", files: ["src/web/session.ts"] },
    },
    // More important citations of the open files, in the same directory, than the file and the
    // directory lookups keep together.
    ...webHelpers(70, "crowd"),
  ]);
  const open_files = HELPER_FILES;
  const res = await api.assemble(t, { project: "crowd", signals: { current_file: "src/web/session.ts", open_files } });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const placed = res.body.memories.find((m: { id: string }) => m.id === mine!.id);
  // Before: nowhere in the answer (not even counted in `omitted`).
  assert.deepEqual([placed?.tier, placed?.tag], ["critical", "file"]);
});

dbTest("close the pool", async () => {
  await api.settle();
  await sql.end();
});
