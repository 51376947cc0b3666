// Where each writer files a memory (README "Scopes: where a memory goes"): a namespace the caller
// names is kept when valid for the request; without one, the request's project, else the user
// scope; global only when the caller says `scope: "global"`. One test per writer: remember, the
// rule-based extractor, LLM extraction, compaction and memory-dedup; and what retrieval then shows.
import assert from "node:assert/strict";
import { createHandler as createCompact } from "../supabase/functions/memory-compact/handler.ts";
import { COMPACTION_MARK } from "../supabase/functions/memory-compact/prompt.ts";
import { createHandler as createDedup } from "../supabase/functions/memory-dedup/handler.ts";
import { createHandler as createExtract } from "../supabase/functions/memory-extract/handler.ts";
import { createHandler as createRetrieve } from "../supabase/functions/memory-retrieve/handler.ts";
import { reply } from "./fake_openai.ts";
import { userHeaders } from "./support/auth.ts";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, tenantWrites } from "./support/seed.ts";
import { drainAll, memoriesOf, writeEnv } from "./write_helpers.ts";

const EXTRACT_MARK = "What from this conversation would help you do a better job next time?";
const noKick = () => Promise.resolve();

async function post(handler: (r: Request) => Promise<Response>, fn: string, tenant: string, body: unknown) {
  const res = await handler(
    new Request(`http://localhost/functions/v1/${fn}`, {
      method: "POST",
      headers: await userHeaders(tenant),
      body: JSON.stringify(body),
    }),
  );
  return { status: res.status, body: await res.json() };
}

const correction = [
  { role: "user", content: "Install the dependencies." },
  { role: "assistant", content: "Running npm install." },
  { role: "user", content: "No, use pnpm not npm." },
];

Deno.test("scopes: the rule-based extractor files a project-less session's facts in the user scope, never global", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const extract = createExtract({ ...env.deps, kickWorker: noKick });
    const cases: [Record<string, unknown>, string][] = [
      [{}, "devai/user"],
      [{ scope: "global" }, "devai/global"],
      [{ project: "acme/web" }, "devai/project/acme~web"],
    ];
    for (const [extra, expected] of cases) {
      const tenant = newTenant();
      const res = await post(extract, "memory-extract", tenant, {
        session_id: "s-rules",
        messages: correction,
        ...extra,
      });
      assert.equal(res.status, 202, JSON.stringify(res.body));
      await drainAll(env.deps, tenant);
      const mems = await memoriesOf(env.sql, tenant);
      assert.deepEqual(mems.map((m) => [m.content, m.namespace]), [[
        "Correction from the user: use pnpm not npm.",
        expected,
      ]], JSON.stringify(extra));
    }
  } finally {
    await env.close();
  }
});

Deno.test("scopes: LLM extraction re-files a model's global lesson under the request's scope unless scope is global", async () => {
  const env = await writeEnv();
  try {
    const lesson = {
      content: "The build caches node_modules between CI runs.",
      type: "semantic",
      namespace: "devai/global/build",
      source: "discovery",
      priority: "medium",
      importance: 3,
    };
    const elsewhere = {
      ...lesson,
      content: "The billing service retries webhooks three times.",
      namespace: "devai/project/billing/ops",
    };
    env.fake.onChat(EXTRACT_MARK, reply.json({ stored: [lesson, elsewhere], filtered: [] }));
    const extract = createExtract({ ...env.deps, kickWorker: noKick });
    const messages = [{ role: "user", content: "Why is CI fast now?" }, { role: "assistant", content: "The cache." }];
    const cases: [Record<string, unknown>, string[]][] = [
      [{}, ["devai/user/build", "devai/user/ops"]],
      [{ project: "shop" }, ["devai/project/shop/build", "devai/project/shop/ops"]],
      [{ scope: "global" }, ["devai/global/build", "devai/global/ops"]],
    ];
    for (const [extra, expected] of cases) {
      const tenant = newTenant();
      assert.equal(
        (await post(extract, "memory-extract", tenant, { session_id: "s-llm", messages, ...extra })).status,
        202,
      );
      await drainAll(env.deps, tenant);
      assert.deepEqual(
        (await memoriesOf(env.sql, tenant)).map((m) => m.namespace).sort(),
        expected,
        JSON.stringify(extra),
      );
    }
    // The model is offered global only when the request allows it.
    const prompts = env.fake.chatRequests().map((r) => JSON.stringify(r.body.messages));
    assert.ok(!prompts[0]!.includes("devai/global/<topic>"), "no scope: global is not offered");
    assert.ok(prompts[2]!.includes("devai/global/<topic>"), "scope global: offered");
  } finally {
    await env.close();
  }
});

Deno.test("scopes: compaction of a project-less session keeps its facts out of the global scope", async () => {
  const env = await writeEnv();
  try {
    env.fake.onChat(
      COMPACTION_MARK,
      reply.json({
        summary: "The user set up the repository and chose pnpm.",
        candidates: [{
          content: "The repository lints with biome.",
          type: "semantic",
          namespace: "devai/global/lint",
          source: "discovery",
          priority: "medium",
          importance: 3,
        }],
      }),
    );
    const compact = createCompact({ ...env.deps, kickWorker: noKick });
    const tenant = newTenant();
    const filler = Array.from(
      { length: 12 },
      (_, i) => ({ role: i % 2 ? "assistant" : "user", content: `Step ${i} of the setup. `.repeat(60) }),
    );
    const res = await post(compact, "memory-compact", tenant, {
      session_id: "s-compact",
      messages: [...correction, ...filler],
      trigger_tokens: 1_000,
      target_chunk_tokens: 600,
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.compacted, true);
    await drainAll(env.deps, tenant);
    const mems = await memoriesOf(env.sql, tenant);
    assert.deepEqual(mems.map((m) => [m.content, m.namespace]).sort(), [
      ["Correction from the user: use pnpm not npm.", "devai/user"],
      ["The repository lints with biome.", "devai/user/lint"],
    ]);
  } finally {
    await env.close();
  }
});

Deno.test("scopes: memory-dedup keeps the caller's namespace, files the rest in the request's scope, refuses a wrong one", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const dedup = createDedup({ ...env.deps, kickWorker: noKick });
    const tenant = newTenant();
    const base = { type: "semantic", source: "discovery", priority: "medium", importance: 3 };
    const ok = await post(dedup, "memory-dedup", tenant, {
      candidates: [
        {
          ...base,
          content: "The billing service bills on the first of the month.",
          namespace: "devai/project/billing-service",
        },
        {
          ...base,
          content: "The billing service stores invoices as PDF files.",
          namespace: "devai/project/billing-service/storage",
        },
        { ...base, content: "Invoices are numbered per calendar year.", category: "decisions" },
      ],
    });
    assert.equal(ok.status, 202, JSON.stringify(ok.body));
    assert.equal(ok.body.stats.namespace_rewritten, 0);
    await drainAll(env.deps, tenant);
    assert.deepEqual((await memoriesOf(env.sql, tenant)).map((m) => m.namespace).sort(), [
      "devai/project/billing-service",
      "devai/project/billing-service/storage",
      "devai/user",
    ]);

    const global = newTenant();
    assert.equal(
      (await post(dedup, "memory-dedup", global, {
        scope: "global",
        candidates: [{ ...base, content: "Semantic versioning is used for every package." }],
      })).status,
      202,
    );
    await drainAll(env.deps, global);
    assert.deepEqual((await memoriesOf(env.sql, global)).map((m) => m.namespace), ["devai/global"]);

    // A namespace in another project than the request's, or outside the three scopes: 400, nothing queued.
    const refused = newTenant();
    const wrong = await post(dedup, "memory-dedup", refused, {
      project: "shop",
      candidates: [
        { ...base, content: "The shop ships on Mondays.", namespace: "devai/project/billing-service" },
        { ...base, content: "The shop uses Stripe.", namespace: "devai/elsewhere/x" },
      ],
    });
    assert.equal(wrong.status, 400);
    assert.deepEqual(wrong.body.error.issues.map((i: { path: unknown[] }) => i.path.join(".")), [
      "candidates.0.namespace",
      "candidates.1.namespace",
    ]);
    assert.match(wrong.body.error.issues[0].message, /request's project is 'shop'/);
    assert.equal((await tenantWrites(env.sql, refused)).memories, 0);
    assert.equal(
      (await env.sql`select count(*)::int as n from public.memory_jobs where owner_id = ${refused}`)[0]!.n,
      0,
    );
  } finally {
    await env.close();
  }
});

Deno.test("scopes: remember goes to the user scope by default, the project's with a project, global only when asked", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const api = memoryApi(env.sql);
    const t = newTenant();
    const remember = async (body: Record<string, unknown>) => await api("POST", "/memory/remember", { as: t, body });
    assert.equal(
      (await remember({ content: "Tabs are preferred over spaces" })).body.memory.namespace,
      "devai/user/preferences",
    );
    assert.equal(
      (await remember({ content: "The web app deploys on Vercel", project: "acme/web" })).body.memory.namespace,
      "devai/project/acme~web/notes",
    );
    assert.equal(
      (await remember({ content: "UTC is used for every timestamp", scope: "global" })).body.memory.namespace,
      "devai/global/notes",
    );
    assert.equal(
      (await remember({ content: "Kept where it was named", namespace: "devai/project/billing/notes" })).body.memory
        .namespace,
      "devai/project/billing/notes",
    );
    const outside = await remember({ content: "Nowhere to be retrieved", namespace: "devai/elsewhere/x" });
    assert.equal(outside.status, 400);
    assert.deepEqual(outside.body.error.issues[0].path, ["namespace"]);
    const noProject = await remember({ content: "Which project?", scope: "project" });
    assert.equal(noProject.status, 400);
    assert.deepEqual(noProject.body.error.issues[0].path, ["scope"]);
    assert.equal((await tenantWrites(env.sql, t)).memories, 4);
  } finally {
    await env.close();
  }
});

Deno.test("scopes: a project-less session's correction reaches another project as the user's, not as General Knowledge", async () => {
  const env = await writeEnv({ withLlm: false });
  try {
    const tenant = newTenant();
    const extract = createExtract({ ...env.deps, kickWorker: noKick });
    assert.equal(
      (await post(extract, "memory-extract", tenant, { session_id: "s-x", messages: correction })).status,
      202,
    );
    await drainAll(env.deps, tenant);
    const retrieve = createRetrieve({ ...env.deps, embedder: env.embedder });
    const res = await post(retrieve, "memory-retrieve", tenant, {
      message: "Should I use pnpm or npm to install?",
      project: "shop",
      threshold: 0,
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.match(res.body.block, /### User Preferences\n- Correction from the user: use pnpm not npm\./);
    assert.ok(!res.body.block.includes("General Knowledge"), res.body.block);
  } finally {
    await env.close();
  }
});
