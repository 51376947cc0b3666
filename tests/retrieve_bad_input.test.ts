// memory-retrieve refuses bad input and bad callers with the documented 4xx, before any embedding
// call or write: memory_events, access counts and history stay unchanged.
import assert from "node:assert/strict";
import { createHandler } from "../supabase/functions/memory-retrieve/handler.ts";
import { TENANT_HEADER } from "../supabase/functions/_shared/auth.ts";
import { anonToken, serviceToken, signToken, userHeaders, userToken } from "./support/auth.ts";
import { testConfig } from "./support/config.ts";
import { callJson, dbTest } from "./support/http.ts";
import { newTenant, seedMemories, tenantWrites, testSql } from "./support/seed.ts";
import { fixedEmbedder, vectorWithSimilarity } from "./support/vectors.ts";

const sql = testSql();
const config = testConfig();
const BASE = "http://localhost/functions/v1/memory-retrieve";

const tenant = newTenant();
let ready: Promise<unknown> | undefined;
function seedOnce() {
  ready ??= seedMemories(sql, tenant, [
    {
      content: "a fact",
      namespace: "devai/global/a",
      embedding: vectorWithSimilarity(0.9, 1),
      metadata: { category: "tasks" },
    },
    { content: "a project fact", namespace: "devai/project/p/a", embedding: vectorWithSimilarity(0.9, 2) },
  ]);
  return ready;
}

async function expectRefused(
  what: string,
  req: { path?: string; body?: unknown; headers?: Record<string, string>; method?: string },
  status: number,
  code?: string,
) {
  await seedOnce();
  const before = await tenantWrites(sql, tenant);
  const embedder = fixedEmbedder();
  const handler = createHandler({ sql, config, embedder });
  const res = await callJson(handler, `${BASE}${req.path ?? ""}`, {
    method: req.method,
    headers: req.headers ?? await userHeaders(tenant),
    body: req.body,
  });
  assert.equal(res.status, status, `${what}: ${JSON.stringify(res.body)}`);
  assert.ok(res.body?.error?.code, `${what}: one error shape`);
  if (code) assert.equal(res.body.error.code, code, what);
  assert.equal(embedder.calls, 0, `${what}: no embedding call`);
  assert.deepEqual(await tenantWrites(sql, tenant), before, `${what}: nothing written`);
  return res;
}

dbTest("malformed JSON, wrong content type, wrong method", async () => {
  await expectRefused("malformed json", { body: '{"message": "hi",' }, 400, "malformed_json");
  await expectRefused("empty body", { body: "" }, 400, "malformed_json");
  await expectRefused("text/plain", {
    body: "{}",
    headers: { ...(await userHeaders(tenant)), "content-type": "text/plain" },
  }, 415);
  await expectRefused("GET", { method: "GET", headers: { authorization: `Bearer ${await userToken(tenant)}` } }, 405);
});

dbTest("wrong types and out-of-range values are 400 with zod issues", async () => {
  const cases: [string, unknown][] = [
    ["no message", {}],
    ["message is a number", { message: 42 }],
    ["empty message", { message: "   " }],
    ["message with NUL", { message: "hi\u0000there" }],
    ["huge top_k", { message: "q", top_k: 10_000 }],
    ["top_k zero", { message: "q", top_k: 0 }],
    ["fractional top_k", { message: "q", top_k: 2.5 }],
    ["negative budget", { message: "q", budget_tokens: -1 }],
    ["zero budget", { message: "q", budget_tokens: 0 }],
    ["budget too large", { message: "q", budget_tokens: 1_000_000 }],
    ["budget as string", { message: "q", budget_tokens: "2000" }],
    ["threshold above 1", { message: "q", threshold: 1.5 }],
    ["negative since_revision", { message: "q", since_revision: -3 }],
    ["project with ../", { message: "q", project: "../other" }],
    ["project ..", { message: "q", project: ".." }],
    ["project with slash", { message: "q", project: "p/../../x" }],
    ["project with control char", { message: "q", project: "p\u0001x" }],
    ["project with newline", { message: "q", project: "p\nx" }],
    ["project with space", { message: "q", project: "my project" }],
    ["thread_id with control char", { message: "q", thread_id: "t\u0007" }],
    ["unknown field", { message: "q", namespace: "devai/project/x" }],
    ["body is an array", [{ message: "q" }]],
  ];
  for (const [what, body] of cases) {
    const res = await expectRefused(what, { body }, 400, "invalid_request");
    assert.ok(Array.isArray(res.body.error.issues) && res.body.error.issues.length > 0, `${what}: issues`);
  }
});

dbTest("query mode: unknown fields, bad filters, bad agent names are 400", async () => {
  const cases: [string, unknown][] = [
    ["unknown top-level field", { agent: "planner", query: "q", namespace: "devai/x" }],
    ["unknown filter", { agent: "planner", query: "q", filters: { owner_id: newTenant() } }],
    ["no query", { agent: "planner" }],
    ["agent with ../", { agent: "../planner", query: "q" }],
    ["category wrong shape", { agent: "planner", query: "q", categories: ["Tasks!"] }],
    ["empty categories", { agent: "planner", query: "q", categories: [] }],
    ["bad return", { agent: "planner", query: "q", return: "everything" }],
    ["importance range inverted", { agent: "planner", query: "q", filters: { importance_min: 4, importance_max: 2 } }],
    ["importance out of range", { agent: "planner", query: "q", filters: { importance_min: 9 } }],
    ["updated_after not a date", { agent: "planner", query: "q", filters: { updated_after: "yesterday" } }],
    ["updated_after in year 0 (was a 500: Postgres has no year 0)", {
      agent: "planner",
      query: "q",
      filters: { updated_after: "0000-01-01" },
    }],
    ["updated_before in year 0", { agent: "planner", query: "q", filters: { updated_before: "0000-12-31T00:00:00Z" } }],
    ["updated_before past 9999-12-31 UTC (an offset carries it into year 10000)", {
      agent: "planner",
      query: "q",
      filters: { updated_before: "9999-12-31T23:59:59-14:00" },
    }],
    ["updated_after later than updated_before", {
      agent: "planner",
      query: "q",
      filters: { updated_after: "2026-11-02", updated_before: "2026-11-01T00:00:00Z" },
    }],
    ["pinned as string", { agent: "planner", query: "q", filters: { pinned: "true" } }],
    ["huge top_k", { agent: "planner", query: "q", top_k: 500 }],
    ["negative budget", { agent: "planner", query: "q", budget_tokens: -5 }],
    ["project with control char", { agent: "planner", query: "q", project: "a\u001fb" }],
  ];
  for (const [what, body] of cases) await expectRefused(what, { path: "/query", body }, 400, "invalid_request");
  // Refused by the schema, with the field named, before the database sees the date (an offset
  // that carries 0001-01-01 back into year 0 reached it, and its message named no field).
  for (const updated_after of ["0000-01-01", "0001-01-01T00:00:00+01:00"]) {
    const yearZero = await expectRefused(`year 0: ${updated_after}`, {
      path: "/query",
      body: { agent: "planner", query: "q", filters: { updated_after } },
    }, 400);
    assert.deepEqual(yearZero.body.error.issues?.map((i: { path: string[] }) => i.path.join(".")), [
      "filters.updated_after",
    ], JSON.stringify(yearZero.body));
  }
});

dbTest("unknown paths are 404, never a retrieval: /queryx, /query/extra, /other", async () => {
  for (const path of ["/queryx", "/query/extra", "/other", "x"]) {
    await expectRefused(path, { path, body: { message: "q", agent: "planner", query: "q" } }, 404, "route_not_found");
  }
});

dbTest("callers: no token 401, bad signature 401, expired 401, anon 403, service role without tenant 400", async () => {
  const body = { message: "q" };
  const json = { "content-type": "application/json" };
  await expectRefused("no token", { body, headers: json }, 401, "missing_token");
  await expectRefused(
    "bad signature",
    {
      body,
      headers: {
        ...json,
        authorization: `Bearer ${await signToken({
          role: "authenticated",
          sub: tenant,
          secret: "another-secret-another-secret-another",
        })}`,
      },
    },
    401,
    "invalid_token",
  );
  await expectRefused(
    "expired",
    { body, headers: { ...json, authorization: `Bearer ${await userToken(tenant, { expiresIn: -60 })}` } },
    401,
    "token_expired",
  );
  await expectRefused("anon", { body, headers: { ...json, authorization: `Bearer ${await anonToken()}` } }, 403);
  await expectRefused(
    "service role, no tenant",
    { body, headers: { ...json, authorization: `Bearer ${await serviceToken()}` } },
    400,
    "tenant_required",
  );
  await expectRefused("user token naming another tenant", {
    body,
    headers: { ...json, authorization: `Bearer ${await userToken(newTenant())}`, [TENANT_HEADER]: tenant },
  }, 403);
});

dbTest("oversize body is 413", async () => {
  const small = createHandler({ sql, config: testConfig({ maxBodyBytes: 1024 }), embedder: fixedEmbedder() });
  const res = await callJson(small, BASE, { headers: await userHeaders(tenant), body: { message: "x".repeat(5000) } });
  assert.equal(res.status, 413);
});

dbTest("a valid request after all that works and writes exactly one event", async () => {
  await seedOnce();
  const before = await tenantWrites(sql, tenant);
  const handler = createHandler({ sql, config, embedder: fixedEmbedder() });
  const res = await callJson(handler, BASE, { headers: await userHeaders(tenant), body: { message: "q" } });
  assert.equal(res.status, 200);
  const after = await tenantWrites(sql, tenant);
  assert.equal(after.events, before.events + 1);
  assert.equal(after.accessTotal, before.accessTotal + 1);
});

dbTest("close pool", async () => {
  await sql.end();
});
