// Categories and agents a coding agent has: the seeded coding defaults, the configuration routes
// (any signed-in caller lists, only the service role changes), and the writers refusing a category
// no agent could ever query.
import assert from "node:assert/strict";
import { createHandler as createDedup } from "../supabase/functions/memory-dedup/handler.ts";
import { createHandler as createRetrieve } from "../supabase/functions/memory-retrieve/handler.ts";
import { localEmbedder } from "../supabase/functions/_shared/embeddings.ts";
import { serviceToken, signToken, userHeaders } from "./support/auth.ts";
import { testConfig } from "./support/config.ts";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, tenantWrites, testSql } from "./support/seed.ts";

const sql = testSql();
const api = memoryApi(sql);
const config = testConfig();
const retrieve = createRetrieve({ sql, config, embedder: localEmbedder() });
const opts = { sanitizeResources: false, sanitizeOps: false };
const CODING = [
  "architecture",
  "build",
  "commands",
  "conventions",
  "decisions",
  "dependencies",
  "deployment",
  "errors_and_fixes",
  "preferences",
  "procedural",
  "testing",
  "workflows",
];

/** The service role, with no tenant header: configuration belongs to no tenant. */
async function admin(): Promise<Record<string, string>> {
  return { authorization: `Bearer ${await serviceToken()}`, "content-type": "application/json" };
}

async function query(tenant: string, body: Record<string, unknown>) {
  const res = await retrieve(
    new Request("http://localhost/functions/v1/memory-retrieve/query", {
      method: "POST",
      headers: await userHeaders(tenant),
      body: JSON.stringify(body),
    }),
  );
  return { status: res.status, body: await res.json() };
}

Deno.test(
  { name: "config: the coding categories and agents are seeded, the chat assistant's still work", ...opts },
  async () => {
    const t = newTenant();
    const categories = await api("GET", "/memory/categories", { as: t });
    assert.equal(categories.status, 200);
    const names = categories.body.categories.map((c: { name: string }) => c.name);
    for (const name of CODING) assert.ok(names.includes(name), name);
    const conventions = categories.body.categories.find((c: { name: string }) => c.name === "conventions");
    assert.deepEqual({ ...conventions, agents: undefined }, {
      name: "conventions",
      context: "all",
      rag_length: 10,
      kind: "system",
      agents: undefined,
    });
    assert.ok(conventions.agents.includes("coder"));

    const agents = await api("GET", "/memory/agents", { as: t });
    const byName = new Map(
      agents.body.agents.map((a: { agent: string; categories: string[] }) => [a.agent, a.categories]),
    );
    for (const agent of ["coder", "reviewer", "planner", "tester", "ops", "supervisor", "stylist"]) {
      assert.ok(
        byName.has(agent),
        agent,
      );
    }
    assert.ok((byName.get("coder") as string[]).includes("testing"));
    assert.ok((byName.get("planner") as string[]).includes("goals"), "the earlier allowlist is kept");

    // A memory filed as `testing` is now found by an agent allowed it.
    const saved = await api("POST", "/memory/remember", {
      as: t,
      body: { content: "Integration tests need the staging database", metadata: { category: "testing" } },
    });
    assert.equal(saved.status, 201);
    const found = await query(t, { agent: "tester", query: "what do integration tests need?", threshold: 0 });
    assert.equal(found.status, 200, JSON.stringify(found.body));
    assert.deepEqual(found.body.results.map((r: { id: string }) => r.id), [saved.body.memory.id]);
  },
);

Deno.test({
  name: "config: the service role adds an agent; a user token can list but not change the configuration",
  ...opts,
}, async () => {
  const t = newTenant();
  const agent = `claude-code-${crypto.randomUUID().slice(0, 6)}`;
  const before = await query(t, { agent, query: "how do we build?" });
  assert.equal(before.status, 403);
  assert.equal(before.body.error.code, "unknown_agent");
  assert.match(before.body.error.message, /configured agents: .*coder/);
  assert.match(before.body.error.message, new RegExp(`PUT memory/agents/${agent}`));

  const asUser = await api("PUT", `/memory/agents/${agent}`, { as: t, body: { categories: ["build"] } });
  assert.equal(asUser.status, 403);
  assert.equal(asUser.body.error.code, "forbidden_role");

  const unknown = await api("PUT", `/memory/agents/${agent}`, {
    headers: await admin(),
    body: { categories: ["build", "made_up"] },
  });
  assert.equal(unknown.status, 400);
  assert.equal(unknown.body.error.code, "unknown_category");
  assert.match(unknown.body.error.message, /made_up.*configured categories: .*architecture/);
  assert.deepEqual(unknown.body.error.issues[0].path, ["categories", 1]);
  assert.equal((await api("GET", `/memory/agents/${agent}`, { as: t })).status, 404, "a refused upsert writes nothing");

  const created = await api("PUT", `/memory/agents/${agent}`, {
    headers: await admin(),
    body: { categories: ["build", "commands"] },
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  assert.deepEqual(created.body, { created: true, agent: { agent, categories: ["build", "commands"] } });
  const changed = await api("PUT", `/memory/agents/${agent}`, {
    headers: await admin(),
    body: { categories: ["commands", "testing"] },
  });
  assert.equal(changed.status, 200);
  assert.deepEqual(changed.body.agent.categories, ["commands", "testing"], "the list is replaced, not merged");
  assert.deepEqual((await api("GET", `/memory/agents/${agent}`, { as: t })).body, {
    agent,
    categories: ["commands", "testing"],
  });

  const saved = await api("POST", "/memory/remember", {
    as: t,
    body: { content: "Run the linter with npm run lint", metadata: { category: "commands" } },
  });
  const after = await query(t, { agent, query: "how do I run the linter?", threshold: 0 });
  assert.equal(after.status, 200, JSON.stringify(after.body));
  assert.deepEqual(after.body.results.map((r: { id: string }) => r.id), [saved.body.memory.id]);
});

Deno.test({
  name: "config: a user token without a uuid subject is a 401 invalid_token here too, as on every memory route",
  ...opts,
}, async () => {
  const badSubjects = [
    await signToken({ role: "authenticated", sub: "admin" }),
    await signToken({
      role: "authenticated",
    }),
  ];
  for (const token of badSubjects) {
    const headers = { authorization: `Bearer ${token}` };
    for (const path of ["/memory/categories", "/memory/agents", "/memory/agents/coder", "/memory/stats"]) {
      const res = await api("GET", path, { headers });
      assert.equal(res.status, 401, `${path}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error.code, "invalid_token");
      assert.match(res.body.error.message, /uuid subject/);
    }
  }
});

Deno.test(
  { name: "config: the service role adds and changes a category; context and cap are validated", ...opts },
  async () => {
    const t = newTenant();
    const name = `runbooks_${crypto.randomUUID().slice(0, 6)}`;
    assert.equal((await api("PUT", `/memory/categories/${name}`, { as: t, body: {} })).status, 403);
    const created = await api("PUT", `/memory/categories/${name}`, { headers: await admin(), body: {} });
    assert.equal(created.status, 201);
    assert.deepEqual(created.body.category, { name, context: "rag", rag_length: null, kind: "custom", agents: [] });
    const changed = await api("PUT", `/memory/categories/${name}`, {
      headers: await admin(),
      body: { context: "all", rag_length: 5 },
    });
    assert.equal(changed.status, 200);
    assert.deepEqual({ context: changed.body.category.context, rag_length: changed.body.category.rag_length }, {
      context: "all",
      rag_length: 5,
    });
    const partial = await api("PUT", `/memory/categories/${name}`, {
      headers: await admin(),
      body: { rag_length: null },
    });
    assert.deepEqual({ context: partial.body.category.context, rag_length: partial.body.category.rag_length }, {
      context: "all",
      rag_length: null,
    });
    assert.equal(
      (await api("PUT", `/memory/categories/${name}`, { headers: await admin(), body: { context: "sometimes" } }))
        .status,
      400,
    );
    assert.equal((await api("PUT", "/memory/categories/Bad-Name", { headers: await admin(), body: {} })).status, 400);
    // Now a memory may carry it.
    assert.equal(
      (await api("POST", "/memory/remember", {
        as: t,
        body: { content: "Restart the worker from the runbook", metadata: { category: name } },
      })).status,
      201,
    );
  },
);

Deno.test({
  name:
    "config: remember and memory-dedup refuse an unknown category with a 400 naming the configured ones, writing nothing",
  ...opts,
}, async () => {
  const t = newTenant();
  const remembered = await api("POST", "/memory/remember", {
    as: t,
    body: { content: "Snapshots live in __snapshots__", metadata: { category: "snapshots" } },
  });
  assert.equal(remembered.status, 400);
  assert.equal(remembered.body.error.code, "unknown_category");
  assert.match(remembered.body.error.message, /unknown category 'snapshots'; configured categories: .*testing/);
  assert.deepEqual(remembered.body.error.issues[0].path, ["metadata", "category"]);

  let kicks = 0;
  const dedup = createDedup({ sql, config, embedder: localEmbedder(), kickWorker: () => (kicks++, Promise.resolve()) });
  const res = await dedup(
    new Request("http://localhost/functions/v1/memory-dedup", {
      method: "POST",
      headers: await userHeaders(t),
      body: JSON.stringify({
        candidates: [{
          content: "Snapshots are updated with -u.",
          type: "semantic",
          source: "discovery",
          priority: "low",
          importance: 2,
          category: "snapshots",
        }],
      }),
    }),
  );
  assert.equal(res.status, 400);
  const body = await res.json();
  assert.equal(body.error.code, "unknown_category");
  assert.deepEqual(body.error.issues[0].path, ["candidates", 0, "category"]);
  assert.equal(kicks, 0);
  const writes = await tenantWrites(sql, t);
  assert.equal(writes.memories, 0);
  assert.equal((await sql`select count(*)::int as n from public.memory_jobs where owner_id = ${t}`)[0]!.n, 0);
});

Deno.test({ name: "config: close the pool", ...opts }, async () => {
  await sql.end();
});
