// Supabase's current keys beside the legacy ones (docs/auth.md): user tokens signed with the
// legacy HS256 secret and with the project's asymmetric key are both accepted by one
// configuration; a new secret API key (sb_secret_…, in the apikey header, not a JWT) acts as
// service_role, including for memory-worker (the pg_cron call); a publishable key is anon. Agent
// tokens: issued once by the user, hashed, usable at once, revocable, expiring, never able to mint
// more; the agent they name (or x-devai-agent) selects the memory.query allowlist.
import assert from "node:assert/strict";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { authenticate } from "../supabase/functions/_shared/auth.ts";
import { loadConfig } from "../supabase/functions/_shared/env.ts";
import { HttpError } from "../supabase/functions/_shared/http.ts";
import { signToken, userToken } from "./support/auth.ts";
import { TEST_JWT_SECRET, TEST_PUBLISHABLE_KEY, TEST_SECRET_KEY } from "./support/config.ts";
import { functionJson as http, type RunningServer, startTestServer } from "./support/http_server.ts";
import { newTenant, tenantWrites, testSql } from "./support/seed.ts";
import { waitUntil } from "./support/wait.ts";
import type { Sql } from "../supabase/functions/_shared/db.ts";
import { realServerOnly } from "./support/backend.ts";

const request = (headers: Record<string, string>) => new Request("http://local/memory", { headers });

async function rejects(p: Promise<unknown>, status: number, code: string) {
  await assert.rejects(p, (e) => e instanceof HttpError && e.status === status && e.code === code);
}

async function projectKeys() {
  const { publicKey, privateKey } = await generateKeyPair("ES256");
  const jwk = { ...(await exportJWK(publicKey)), kid: "project-key-1", alg: "ES256", use: "sig" };
  const now = Math.floor(Date.now() / 1000);
  const sign = (claims: Record<string, unknown>, key: CryptoKey = privateKey, alg = "ES256") =>
    new SignJWT(claims).setProtectedHeader({ alg, kid: "project-key-1" }).setIssuedAt(now - 5).setExpirationTime(
      now + 600,
    ).sign(key);
  return { jwk, sign };
}

Deno.test("auth: the legacy HS256 secret and the project's JWKS verify user tokens at once", async () => {
  const { jwk, sign } = await projectKeys();
  const config = loadConfig({
    DATABASE_URL: "postgresql://x@127.0.0.1:1/x",
    JWT_SECRET: TEST_JWT_SECRET,
    SUPABASE_JWKS: JSON.stringify({ keys: [jwk] }),
  });
  const tenant = newTenant();
  const legacy = await userToken(tenant);
  const modern = await sign({ role: "authenticated", sub: tenant });
  for (const token of [legacy, modern]) {
    assert.deepEqual(await authenticate(request({ authorization: `Bearer ${token}` }), config), {
      role: "authenticated",
      tenantId: tenant,
      actor: `user:${tenant}`,
    });
  }
  // Either kind signed with anything else fails, and so does algorithm confusion (HS256 keyed with the public key).
  const other = await generateKeyPair("ES256");
  const forged = [
    await sign({ role: "service_role" }, other.privateKey),
    await signToken({ role: "service_role", secret: "another-secret-that-is-at-least-32-bytes!!" }),
    await new SignJWT({ role: "service_role" }).setProtectedHeader({ alg: "HS256" }).setExpirationTime("10m")
      .sign(new TextEncoder().encode(JSON.stringify(jwk))),
  ];
  for (const token of forged) {
    await rejects(authenticate(request({ authorization: `Bearer ${token}` }), config), 401, "invalid_token");
  }

  // SUPABASE_URL beside JWT_SECRET keeps both (it used to switch JWKS off).
  const both = loadConfig({
    DATABASE_URL: "postgresql://x@127.0.0.1:1/x",
    JWT_SECRET: TEST_JWT_SECRET,
    SUPABASE_URL: "https://ref.supabase.co/",
  });
  assert.equal(both.jwt.secret, TEST_JWT_SECRET);
  assert.equal(both.jwt.jwksUrl, "https://ref.supabase.co/auth/v1/.well-known/jwks.json");
  assert.equal(both.publicUrl, "https://ref.supabase.co");
  assert.throws(
    () =>
      loadConfig({ DATABASE_URL: "postgresql://postgres@127.0.0.1/postgres", JWT_SECRET: "s", SUPABASE_JWKS: "{nope" }),
    /SUPABASE_JWKS/,
  );
});

Deno.test("auth: a secret API key in apikey acts as service_role; a wrong one is 401, a publishable key is anon", async () => {
  const config = loadConfig({
    DATABASE_URL: "postgresql://x@127.0.0.1:1/x",
    JWT_SECRET: TEST_JWT_SECRET,
    SUPABASE_SECRET_KEYS: JSON.stringify({ default: TEST_SECRET_KEY, automations: "sb_secret_second-key_1111" }),
    SUPABASE_PUBLISHABLE_KEYS: JSON.stringify({ default: TEST_PUBLISHABLE_KEY }),
  });
  assert.deepEqual(config.apiKeys.secret, [TEST_SECRET_KEY, "sb_secret_second-key_1111"]);
  const tenant = newTenant();
  for (const key of config.apiKeys.secret) {
    for (const headers of [{ apikey: key }, { authorization: `Bearer ${key}` }] as Record<string, string>[]) {
      assert.deepEqual(await authenticate(request({ ...headers, "x-devai-tenant": tenant }), config), {
        role: "service_role",
        tenantId: tenant,
        actor: "service_role",
      });
    }
  }
  await rejects(authenticate(request({ apikey: TEST_SECRET_KEY }), config), 400, "tenant_required");
  await rejects(
    authenticate(request({ apikey: `${TEST_SECRET_KEY}x`, "x-devai-tenant": tenant }), config),
    401,
    "invalid_token",
  );
  await rejects(authenticate(request({ apikey: TEST_PUBLISHABLE_KEY }), config), 403, "forbidden_role");
  await rejects(authenticate(request({ apikey: "sb_publishable_not-ours" }), config), 401, "invalid_token");
  // supabase-js sends the publishable key in apikey and the user's session as the bearer: the session decides.
  const session = await userToken(tenant);
  assert.equal(
    (await authenticate(request({ apikey: TEST_PUBLISHABLE_KEY, authorization: `Bearer ${session}` }), config))
      .tenantId,
    tenant,
  );
  await rejects(authenticate(request({}), config), 401, "missing_token");
});

async function withServer(fn: (server: RunningServer) => Promise<void>) {
  const server = await startTestServer({
    worker: false,
    env: { DB_POOL_MAX: "4", SUPABASE_SECRET_KEYS: JSON.stringify({ default: TEST_SECRET_KEY }) },
  });
  try {
    await fn(server);
  } finally {
    await server.close();
  }
}

Deno.test("auth over HTTP: the secret key works for the memory API and for memory-worker, as pg_cron calls it", async () => {
  await withServer(async (server) => {
    const tenant = newTenant();
    const asService = { apikey: TEST_SECRET_KEY, "x-devai-tenant": tenant };
    const remembered = await http(server, "memory/remember", asService, {
      content: "Service callers use the new secret key",
    });
    assert.equal(remembered.status, 201, JSON.stringify(remembered.body));
    assert.equal((await http(server, "memory", asService)).body.memories.length, 1);
    // The headers memory_private.worker_request_headers builds for a new key.
    const drained = await http(server, "memory-worker", { apikey: TEST_SECRET_KEY }, {});
    assert.equal(drained.status, 200, JSON.stringify(drained.body));
    assert.equal((await http(server, "memory-worker", { apikey: "sb_secret_wrong" }, {})).status, 401);
    assert.equal(
      (await http(server, "memory-worker", { authorization: `Bearer ${await userToken(tenant)}` }, {})).status,
      403,
    );
  });
});

Deno.test("agent tokens: issued once, hashed, usable at once; revoked or expired → 401; they cannot mint tokens", async () => {
  await withServer(async (server) => {
    const sql = testSql(2);
    const tenant = newTenant();
    const session = { authorization: `Bearer ${await userToken(tenant)}` };
    try {
      const issued = await http(server, "memory/agent-tokens", session, {
        agent: "coder",
        label: "Claude Code on the laptop",
        expires_in_days: 30,
      });
      assert.equal(issued.status, 201, JSON.stringify(issued.body));
      const token = issued.body.token as string;
      assert.match(token, /^dvm_[A-Za-z0-9_-]{43}$/);
      assert.equal(issued.body.agent, "coder");
      const [stored] =
        await sql`select token_hash, token_prefix from public.memory_agent_tokens where id = ${issued.body.id}`;
      assert.notEqual(stored!.token_hash, token, "only a hash is stored");
      assert.ok(token.startsWith(stored!.token_prefix as string));

      const asAgent = { authorization: `Bearer ${token}` };
      const remembered = await http(server, "memory/remember", asAgent, { content: "Agent tokens act for their user" });
      assert.equal(remembered.status, 201, JSON.stringify(remembered.body));
      assert.equal(
        (await http(server, "memory", session)).body.memories.length,
        1,
        "the user sees what the agent stored",
      );

      const listed = await http(server, "memory/agent-tokens", session);
      assert.deepEqual(listed.body.tokens.map((t: { id: string }) => t.id), [issued.body.id]);
      assert.equal("token" in listed.body.tokens[0], false, "a list never shows a token");
      assert.equal(typeof listed.body.tokens[0].last_used_at, "string", "its use is noted");

      // An agent token manages no tokens; an unknown agent gets none; another tenant cannot revoke this one.
      assert.equal(
        (await http(server, "memory/agent-tokens", asAgent, { agent: "coder" })).body.error.code,
        "forbidden_credential",
      );
      assert.equal((await http(server, `memory/agent-tokens/${issued.body.id}/revoke`, asAgent, {})).status, 403);
      assert.equal(
        (await http(server, "memory/agent-tokens", session, { agent: "no-such-agent" })).body.error.code,
        "unknown_agent",
      );
      const other = { authorization: `Bearer ${await userToken(newTenant())}` };
      assert.equal((await http(server, `memory/agent-tokens/${issued.body.id}/revoke`, other, {})).status, 404);

      // An agent token is a tenant's credential: the cross-tenant worker refuses it (403, not "unknown token").
      assert.equal((await http(server, "memory-worker", asAgent, {})).body.error.code, "forbidden_role");

      const revoked = await http(server, `memory/agent-tokens/${issued.body.id}/revoke`, session, {});
      assert.equal(revoked.status, 200);
      assert.equal(revoked.body.changed, true);
      const refused = (await http(server, "memory", asAgent)).body.error;
      assert.equal(refused.code, "invalid_token");
      // It says what to do: a revoked token is not coming back.
      assert.match(refused.message, /revoked or expired: issue a new one with POST memory\/agent-tokens/);
      assert.equal(
        (await http(server, `memory/agent-tokens/${issued.body.id}/revoke`, session, {})).body.changed,
        false,
      );

      const second = await http(server, "memory/agent-tokens", session, { agent: "tester" });
      await sql`update public.memory_agent_tokens set created_at = now() - interval '2 days', expires_at = now() - interval '1 day'
                 where id = ${second.body.id}`;
      const expired = await http(server, "memory", { authorization: `Bearer ${second.body.token}` });
      assert.equal(expired.status, 401);
      assert.equal(expired.body.error.code, "invalid_token");
    } finally {
      await sql.end();
    }
  });
});

Deno.test("agent tokens: one pasted into a memory or a token's label is redacted, never stored", async () => {
  await withServer(async (server) => {
    const sql = testSql(2);
    const tenant = newTenant();
    const session = { authorization: `Bearer ${await userToken(tenant)}` };
    try {
      const token = (await http(server, "memory/agent-tokens", session, { agent: "coder" })).body.token as string;
      const remembered = await http(server, "memory/remember", session, {
        content: `Remember: the CI job authenticates with ${token}`,
      });
      assert.equal(remembered.status, 201, JSON.stringify(remembered.body));
      assert.equal(remembered.body.memory.content, "Remember: the CI job authenticates with [REDACTED:agent_token]");
      const labelled = await http(server, "memory/agent-tokens", session, {
        agent: "coder",
        label: `copy of ${token}`,
      });
      assert.equal(labelled.body.label, "copy of [REDACTED:agent_token]");
      const stored = await sql`
        select (select count(*)::int from public.devai_memories where owner_id = ${tenant} and content like ${`%${token}%`})
             + (select count(*)::int from public.memory_agent_tokens where owner_id = ${tenant} and label like ${`%${token}%`}) as n`;
      assert.equal(stored[0]!.n, 0, "the token is nowhere in the tenant's rows");
      // Still a working credential: redaction only keeps it out of what is stored.
      assert.equal((await http(server, "memory", { authorization: `Bearer ${token}` })).status, 200);
    } finally {
      await sql.end();
    }
  });
});

Deno.test("agent tokens: a label whose redaction markers outgrow its 200 characters is shortened, not a 422", async () => {
  await withServer(async (server) => {
    const session = { authorization: `Bearer ${await userToken(newTenant())}` };
    // 200 characters; `[REDACTED:password]` is 12 longer than `hunter2`.
    const label = `laptop ${"x".repeat(163)} DB_PASSWORD=hunter2 ok`.slice(0, 200);
    const issued = await http(server, "memory/agent-tokens", session, { agent: "coder", label });
    assert.equal(issued.status, 201, JSON.stringify(issued.body));
    const stored = issued.body.label as string;
    assert.ok([...stored].length <= 200, stored);
    assert.ok(stored.startsWith(`laptop ${"x".repeat(163)}`) && stored.endsWith("…"), stored);
    assert.equal(stored.includes("hunter2"), false);
  });
});

Deno.test("agent identity: an agent token's agent is fixed; x-devai-agent names it for other callers", async () => {
  await withServer(async (server) => {
    const sql = testSql(2);
    const tenant = newTenant();
    const session = { authorization: `Bearer ${await userToken(tenant)}` };
    try {
      const reviewer = (await http(server, "memory/agent-tokens", session, { agent: "reviewer" })).body.token as string;
      const before = await tenantWrites(sql, tenant);
      const query = { agent: "coder", query: "how do we deploy?" };
      // memory.query as another agent than the token's, by body or by header: 403, nothing written.
      assert.equal(
        (await http(server, "memory-retrieve/query", { authorization: `Bearer ${reviewer}` }, query)).body.error.code,
        "forbidden_agent",
      );
      const asCoder = { authorization: `Bearer ${reviewer}`, "x-devai-agent": "coder" };
      assert.equal(
        (await http(server, "memory-retrieve/query", asCoder, { ...query, agent: "reviewer" })).body.error.code,
        "forbidden_agent",
      );
      assert.equal(
        (await http(server, "memory", { ...session, "x-devai-agent": "Not An Agent" })).body.error.code,
        "invalid_agent",
      );
      assert.deepEqual(await tenantWrites(sql, tenant), before);
      // As its own agent it reads what its allowlist allows.
      const own = await http(server, "memory-retrieve/query", { authorization: `Bearer ${reviewer}` }, {
        ...query,
        agent: "reviewer",
      });
      assert.equal(own.status, 200, JSON.stringify(own.body));
    } finally {
      await sql.end();
    }
  });
});

/** Gives the tenant n tokens straight in the table: active, revoked or expired (for the cap's tests). */
async function holdTokens(sql: Sql, owner: string, n: number, state: "active" | "revoked" | "expired") {
  await sql`
    insert into public.memory_agent_tokens (owner_id, agent, token_hash, token_prefix, created_at, expires_at, revoked_at)
    select ${owner}, 'coder', md5(random()::text) || md5(random()::text), 'dvm_held',
           now() - interval '2 days',
           case when ${state} = 'expired' then now() - interval '1 day' end,
           case when ${state} = 'revoked' then now() - interval '1 day' end
      from generate_series(1, ${n})`;
}

Deno.test("agent tokens: at most agent_tokens_max_active active per user; beyond it 409 until one is revoked", async () => {
  await withServer(async (server) => {
    const sql = testSql(2);
    const tenant = newTenant();
    const session = { authorization: `Bearer ${await userToken(tenant)}` };
    try {
      const { cap } = (await sql<{ cap: number }[]>`
        select public.memory_setting('agent_tokens_max_active')::int as cap`)[0]!;
      assert.equal(cap, 50);
      // Revoked and expired tokens take no place; the tenant is one short of the cap.
      await holdTokens(sql, tenant, 60, "revoked");
      await holdTokens(sql, tenant, 3, "expired");
      await holdTokens(sql, tenant, cap - 1, "active");
      // Five issues at once for the last place: exactly one gets it.
      const issues = await Promise.all(
        [1, 2, 3, 4, 5].map((i) =>
          http(server, "memory/agent-tokens", session, { agent: "coder", label: `race ${i}` })
        ),
      );
      assert.deepEqual(issues.map((r) => r.status).sort(), [201, 409, 409, 409, 409], JSON.stringify(issues));
      const refused = issues.find((r) => r.status === 409)!.body.error;
      assert.equal(refused.code, "agent_token_limit");
      assert.match(refused.message, /50 active agent tokens.*revoke one/);
      const { active } = (await sql<{ active: number }[]>`
        select count(*)::int as active from public.memory_agent_tokens
         where owner_id = ${tenant} and revoked_at is null and (expires_at is null or expires_at > now())`)[0]!;
      assert.equal(active, cap);

      // The list stays bounded: every active token and the 50 newest revoked or expired ones.
      const listed = await http(server, "memory/agent-tokens", session);
      assert.equal(listed.status, 200);
      const tokens = listed.body.tokens as { id: string; revoked_at: string | null; expires_at: string | null }[];
      const inactive = tokens.filter((t) =>
        t.revoked_at !== null || (t.expires_at && Date.parse(t.expires_at) < Date.now())
      );
      assert.equal(tokens.length - inactive.length, cap);
      assert.equal(inactive.length, 50);

      // Revoking one frees its place.
      const issued = issues.find((r) => r.status === 201)!.body;
      assert.equal((await http(server, `memory/agent-tokens/${issued.id}/revoke`, session, {})).status, 200);
      const again = await http(server, "memory/agent-tokens", session, { agent: "coder" });
      assert.equal(again.status, 201, JSON.stringify(again.body));
    } finally {
      await sql.end();
    }
  });
});

Deno.test({
  ...realServerOnly(
    "agent tokens: the cap holds under a race (the second issue waits for the first to commit)",
    "two connections hold transactions at once",
  ),
}, async () => {
  const sql = testSql(3);
  const tenant = newTenant();
  const first = await sql.reserve();
  const second = await sql.reserve();
  try {
    const { cap } =
      (await sql<{ cap: number }[]>`select public.memory_setting('agent_tokens_max_active')::int as cap`)[0]!;
    await holdTokens(sql, tenant, cap - 1, "active");
    const insert = (q: typeof first) =>
      q`insert into public.memory_agent_tokens (owner_id, agent, token_hash, token_prefix)
        values (${tenant}, 'coder', md5(random()::text) || md5(random()::text), 'dvm_race')`;
    const { pid } = (await second<{ pid: number }[]>`select pg_backend_pid() as pid`)[0]!;
    await first`begin`;
    await insert(first); // the last place, not committed yet
    let settled: string | undefined;
    const racing = insert(second).then(() => (settled = "inserted"), (e) => (settled = e.constraint_name));
    // Until the second insert either finished (no lock: it counted only committed tokens) or waits.
    await waitUntil(async () => {
      if (settled) return true;
      const [row] = await sql<{ n: number }[]>`
        select count(*)::int as n from pg_locks where pid = ${pid} and locktype = 'advisory' and not granted`;
      return row!.n > 0;
    }, "the second insert finished or waiting for the first");
    await first`commit`;
    await racing;
    assert.equal(settled, "memory_agent_tokens_active_limit");
    const { n } = (await sql<{ n: number }[]>`
      select count(*)::int as n from public.memory_agent_tokens where owner_id = ${tenant} and revoked_at is null`)[0]!;
    assert.equal(n, cap);
  } finally {
    first.release();
    second.release();
    await sql.end();
  }
});
