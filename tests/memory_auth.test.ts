// Who may call the memory function, and tenant isolation: another tenant's id is a 404 on every
// route (never 403, so ids cannot be probed) and nothing of theirs changes.
import assert from "node:assert/strict";
import { authenticate, TENANT_HEADER } from "../supabase/functions/_shared/auth.ts";
import { anonToken, serviceToken, signToken, userToken } from "./support/auth.ts";
import { testConfig } from "./support/config.ts";
import { memoryApi } from "./support/memory-api.ts";
import { newTenant, seedMemory, tenantWrites, testSql } from "./support/seed.ts";

const sql = testSql();
const api = memoryApi(sql);
const opts = { sanitizeOps: false, sanitizeResources: false };
const json = { "content-type": "application/json" };

Deno.test({ name: "no token → 401 missing_token", ...opts }, async () => {
  const r = await api("GET", "/memory", { headers: {} });
  assert.equal(r.status, 401);
  assert.equal(r.body.error.code, "missing_token");
});

Deno.test({ name: "bad signature and expired tokens → 401, and nothing is written", ...opts }, async () => {
  const t = newTenant();
  const forged = await userToken(t, { secret: "some-other-secret-that-is-32-bytes-long!!" });
  const r = await api("POST", "/memory/remember", {
    headers: { authorization: `Bearer ${forged}`, ...json },
    body: { content: "x" },
  });
  assert.equal(r.status, 401);
  assert.equal(r.body.error.code, "invalid_token");
  const expired = await userToken(t, { expiresIn: -60 });
  const e = await api("POST", "/memory/remember", {
    headers: { authorization: `Bearer ${expired}`, ...json },
    body: { content: "x" },
  });
  assert.equal(e.status, 401);
  assert.equal(e.body.error.code, "token_expired");
  const garbage = await api("GET", "/memory", { headers: { authorization: "Bearer not.a.jwt" } });
  assert.equal(garbage.status, 401);
  assert.equal((await tenantWrites(sql, t)).memories, 0);
});

Deno.test({ name: "anon token → 403; a token without a role → 403", ...opts }, async () => {
  const r = await api("GET", "/memory", { headers: { authorization: `Bearer ${await anonToken()}` } });
  assert.equal(r.status, 403);
  assert.equal(r.body.error.code, "forbidden_role");
  const none = await api("GET", "/memory", {
    headers: { authorization: `Bearer ${await signToken({ sub: newTenant() })}` },
  });
  assert.equal(none.status, 403);
  assert.match(none.body.error.message, /no role claim/);
});

Deno.test({ name: "a role claim that is not a string → 403 saying so, not naming a role", ...opts }, async () => {
  for (const [role, kind] of [[["service_role"], "an array"], [{ name: "service_role" }, "object"], [7, "number"]]) {
    const token = await signToken({ sub: newTenant(), extraClaims: { role } });
    const r = await api("GET", "/memory", { headers: { authorization: `Bearer ${token}` } });
    assert.equal(r.status, 403);
    assert.equal(r.body.error.code, "forbidden_role");
    assert.match(r.body.error.message, new RegExp(`role claim is not a string \\(${kind}\\)`));
    assert.doesNotMatch(r.body.error.message, /role 'service_role'/);
  }
});

Deno.test(
  { name: "service_role without x-devai-tenant → 400 tenant_required; with a non-uuid → 400", ...opts },
  async () => {
    const token = await serviceToken();
    const r = await api("POST", "/memory/remember", {
      headers: { authorization: `Bearer ${token}`, ...json },
      body: { content: "x" },
    });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.code, "tenant_required");
    const bad = await api("GET", "/memory", {
      headers: { authorization: `Bearer ${token}`, [TENANT_HEADER]: "tenant-a" },
    });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, "invalid_tenant");
  },
);

Deno.test(
  { name: "a tenant's uuid is one tenant in any case: x-devai-tenant and a token's subject are lower-cased", ...opts },
  async () => {
    // In-process state is keyed by the tenant id as a string (the tenant's share of the pool, its
    // heavy turns, the write-behind batches): `ABC…` and `abc…` must not be two tenants there.
    const tenant = newTenant();
    const config = testConfig();
    const service = await serviceToken();
    const callerOf = async (token: string, named?: string) =>
      await authenticate(
        new Request("http://local/memory", {
          headers: { authorization: `Bearer ${token}`, ...(named ? { [TENANT_HEADER]: named } : {}) },
        }),
        config,
      );
    const mixed = tenant.slice(0, 18).toUpperCase() + tenant.slice(18);
    for (const named of [tenant.toUpperCase(), mixed, tenant]) {
      assert.equal((await callerOf(service, named)).tenantId, tenant, `service_role naming ${named}`);
    }
    const upperSubject = await userToken(tenant.toUpperCase());
    assert.equal((await callerOf(upperSubject)).tenantId, tenant, "a user whose subject is upper-case");
    assert.equal((await callerOf(upperSubject, mixed)).tenantId, tenant, "naming itself in another case");
  },
);

Deno.test({ name: "a user token naming another tenant in x-devai-tenant → 403", ...opts }, async () => {
  const a = newTenant();
  const r = await api("GET", "/memory", {
    headers: { authorization: `Bearer ${await userToken(a)}`, [TENANT_HEADER]: newTenant() },
  });
  assert.equal(r.status, 403);
  assert.equal(r.body.error.code, "forbidden_tenant");
});

Deno.test(
  { name: "tenant A on tenant B's memory id → 404 on every route, and B's data is unchanged", ...opts },
  async () => {
    const a = newTenant();
    const b = newTenant();
    const bm = await seedMemory(sql, b, { content: "B's secret deploy key location", namespace: "devai/user/secrets" });
    const bGone = await seedMemory(sql, b, {
      content: "B's forgotten fact",
      namespace: "devai/user/secrets",
      state: "soft_deleted",
    });
    const snapshot = async () => ({
      writes: await tenantWrites(sql, b),
      rows: await sql`select id, content, state, is_valid, pinned, superseded_by, purge_at, strength, updated_at
                      from public.devai_memories where owner_id = ${b} order by id`,
    });
    const before = await snapshot();

    const calls: [string, string, unknown?][] = [
      ["GET", `/memory/${bm.id}`],
      ["GET", `/memory/${bm.id}/history`],
      ["GET", `/memory/${bm.id}/explain`],
      ["POST", `/memory/${bm.id}/correct`, { content: "A overwrites B" }],
      ["POST", `/memory/${bm.id}/forget`],
      ["POST", `/memory/${bGone.id}/restore`],
      ["POST", `/memory/${bm.id}/pin`],
      ["POST", `/memory/${bm.id}/confirm`],
      ["POST", `/memory/${bm.id}/unpin`],
    ];
    for (const [method, path, body] of calls) {
      const r = await api(method, path, { as: a, body });
      assert.equal(r.status, 404, `${method} ${path} gave ${r.status}`);
      assert.equal(r.body.error.code, "not_found");
      assert.doesNotMatch(JSON.stringify(r.body), /secret|forgotten/);
    }
    // The same through service_role acting for A.
    const svc = { authorization: `Bearer ${await serviceToken()}`, [TENANT_HEADER]: a, ...json };
    assert.equal((await api("GET", `/memory/${bm.id}`, { headers: svc })).status, 404);
    assert.equal((await api("POST", `/memory/${bm.id}/forget`, { headers: svc })).status, 404);

    assert.deepEqual(await snapshot(), before);
    assert.equal((await tenantWrites(sql, a)).memories, 0, "A's failed correct wrote nothing for A either");
  },
);

Deno.test({ name: "list, stats, weak and export never show another tenant's memories", ...opts }, async () => {
  const a = newTenant();
  const b = newTenant();
  await seedMemory(sql, a, { content: "A's fact", namespace: "devai/global/x" });
  await seedMemory(sql, b, { content: "B's fact", namespace: "devai/global/x", priority: "low", strength: 0.2 });
  const list = await api("GET", "/memory?state=all", { as: a });
  assert.deepEqual(list.body.memories.map((m: { content: string }) => m.content), ["A's fact"]);
  const stats = await api("GET", "/memory/stats", { as: a });
  assert.equal(stats.body.total, 1);
  const weakContents = async (as: string) =>
    (await api("GET", "/memory/weak", { as })).body.memories.map((w: { memory: { content: string } }) =>
      w.memory.content
    );
  assert.deepEqual(await weakContents(a), ["A's fact"]);
  // B's weak memory is listed where it may be: for B.
  assert.deepEqual(await weakContents(b), ["B's fact"]);
  const exp = await api("GET", "/memory/export", { as: a });
  assert.deepEqual(exp.body.memories.map((m: { content: string }) => m.content), ["A's fact"]);
  assert.deepEqual(
    exp.body.history.map((h: { memory_id: string; event: string }) => [h.memory_id, h.event]),
    [[exp.body.memories[0].id, "ADD"]],
  );
  // Remembering B's exact text as A is not a "duplicate": A gets its own memory.
  const r = await api("POST", "/memory/remember", { as: a, body: { content: "B's fact" } });
  assert.equal(r.status, 201);
});

Deno.test({ name: "OPTIONS preflight is answered without a token", ...opts }, async () => {
  const r = await api("OPTIONS", "/memory/remember", { headers: {} });
  assert.equal(r.status, 204); // hono/cors: No Content
  assert.ok(r.headers.get("access-control-allow-headers")?.includes("x-devai-tenant"));
});

Deno.test({ name: "close the pool", ...opts }, async () => {
  await sql.end();
});
