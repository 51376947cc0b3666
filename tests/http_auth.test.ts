// Auth and bad input from the outside, over HTTP through the local functions server (the gateway's
// verify_jwt, then the handlers): every refusal is the documented status in the one error shape
// { error: { code, message, issues?, request_id } }, and writes nothing.
import assert from "node:assert/strict";
import { SignJWT } from "jose";
import { readVerifyJwt } from "../scripts/serve/functions.ts";
import { anonToken, serviceToken, signToken, userToken } from "./support/auth.ts";
import { type RunningServer, startTestServer } from "./support/http_server.ts";
import { newTenant, seedMemory, tenantWrites, testSql } from "./support/seed.ts";

const MEMORY_ROUTES = ["memory", "memory-retrieve", "memory-extract"] as const;

interface ErrorBody {
  error: {
    code: string;
    message: string;
    issues?: { path: (string | number)[]; message: string }[];
    request_id?: string;
  };
}

async function call(
  server: RunningServer,
  path: string,
  init: { method?: string; token?: string; headers?: Record<string, string>; body?: BodyInit | null; json?: unknown } =
    {},
): Promise<{ status: number; body: unknown; headers: Headers }> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.token) headers.authorization = `Bearer ${init.token}`;
  let body = init.body;
  if (init.json !== undefined) {
    body = JSON.stringify(init.json);
    headers["content-type"] ??= "application/json";
  }
  const res = await fetch(`${server.functionsUrl}/${path}`, {
    method: init.method ?? (body ? "POST" : "GET"),
    headers,
    body,
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: the assertion on the shape below reports it
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

/** The one error shape, with the expected status and code. */
function assertError(
  res: { status: number; body: unknown; headers: Headers },
  status: number,
  code: string,
): ErrorBody["error"] {
  assert.equal(res.status, status, JSON.stringify(res.body));
  const body = res.body as ErrorBody;
  assert.equal(typeof body?.error, "object", `not the error shape: ${JSON.stringify(res.body)}`);
  assert.equal(body.error.code, code, JSON.stringify(body));
  assert.equal(typeof body.error.message, "string");
  assert.ok(body.error.message.length > 0);
  assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
  return body.error;
}

const retrieveBody = { message: "how do we deploy?", project: "auth-tests" };

Deno.test("http auth: the gateway and the handlers refuse bad callers with the documented codes", async (t) => {
  const server = await startTestServer({ worker: false });
  const sql = testSql(2);
  try {
    const tenantA = newTenant();
    const tenantB = newTenant();
    const memoryOfB = await seedMemory(sql, tenantB, {
      content: "Tenant B keeps its secrets in Vault",
      namespace: "devai/user/preferences",
    });
    const before = { a: await tenantWrites(sql, tenantA), b: await tenantWrites(sql, tenantB) };

    await t.step("no token → 401 missing_token, before the handler runs", async () => {
      for (const name of MEMORY_ROUTES) {
        const err = assertError(await call(server, name, { json: retrieveBody }), 401, "missing_token");
        assert.ok(err.request_id, "401s carry a request id");
      }
      assertError(await call(server, `memory/${memoryOfB.id}`), 401, "missing_token");
      assertError(await call(server, "memory-worker", { json: {} }), 401, "missing_token");
    });

    await t.step("not a bearer token → 401 invalid_token", async () => {
      assertError(
        await call(server, "memory", { headers: { authorization: "Basic dXNlcjpwYXNz" } }),
        401,
        "invalid_token",
      );
      // curl -H "Authorization: Bearer $TOKEN" with TOKEN unset: the message names the likely cause.
      const empty = assertError(
        await call(server, "memory", { headers: { authorization: "Bearer " } }),
        401,
        "invalid_token",
      );
      assert.match(empty.message, /no token after it \(an unset shell variable\?\)/);
      const notJwt = assertError(await call(server, "memory", { token: "not-a-jwt" }), 401, "invalid_token");
      assert.match(notJwt.message, /not a valid JWT: send a user's JWT, an agent token/);
    });

    await t.step("bad signature → 401 invalid_token", async () => {
      const forged = await signToken({
        role: "authenticated",
        sub: tenantA,
        secret: "another-secret-that-is-at-least-32-bytes!!",
      });
      const err = assertError(
        await call(server, "memory-retrieve", { token: forged, json: retrieveBody }),
        401,
        "invalid_token",
      );
      // The message says what is wrong and what to send: a token of another project is the usual cause.
      assert.match(err.message, /signature does not match this server's keys: send a token issued by this project/);
      // A valid token with its payload swapped (signature no longer matches).
      const [h, , s] = (await userToken(tenantA)).split(".");
      const payload = btoa(JSON.stringify({ role: "service_role", exp: 4_000_000_000 })).replace(/=+$/, "").replace(
        /\+/g,
        "-",
      ).replace(/\//g, "_");
      assertError(await call(server, "memory", { token: `${h}.${payload}.${s}` }), 401, "invalid_token");
      // alg none is never accepted.
      const none = `${btoa(JSON.stringify({ alg: "none", typ: "JWT" })).replace(/=+$/, "")}.${payload}.`;
      assertError(await call(server, "memory", { token: none }), 401, "invalid_token");
    });

    await t.step("expired token → 401 token_expired", async () => {
      const expired = await userToken(tenantA, { expiresIn: -120 });
      assertError(await call(server, "memory-retrieve", { token: expired, json: retrieveBody }), 401, "token_expired");
      assertError(await call(server, "memory", { token: expired }), 401, "token_expired");
    });

    await t.step("anon token passes the gateway, the handler refuses it → 403 forbidden_role", async () => {
      const anon = await anonToken();
      for (const name of MEMORY_ROUTES) {
        const refused = assertError(
          await call(server, name, { token: anon, json: retrieveBody }),
          403,
          "forbidden_role",
        );
        // It says what to send instead, agent tokens included (it named user and service_role tokens only).
        assert.match(refused.message, /a user's JWT or an agent token \(dvm_…\)/);
      }
      assertError(await call(server, "memory-worker", { token: anon, json: {} }), 403, "forbidden_role");
      assertError(
        await call(server, "memory-worker", { token: await userToken(tenantA), json: {} }),
        403,
        "forbidden_role",
      );
    });

    await t.step("tenant A's token on B's memory id → 404, like an unknown id", async () => {
      const tokenA = await userToken(tenantA);
      const id = memoryOfB.id;
      const forB = assertError(await call(server, `memory/${id}`, { token: tokenA }), 404, "not_found");
      assertError(await call(server, `memory/${id}/history`, { token: tokenA }), 404, "not_found");
      assertError(await call(server, `memory/${id}/explain`, { token: tokenA }), 404, "not_found");
      assertError(await call(server, `memory/${id}/forget`, { token: tokenA, json: {} }), 404, "not_found");
      assertError(await call(server, `memory/${id}/pin`, { token: tokenA, json: {} }), 404, "not_found");
      assertError(
        await call(server, `memory/${id}/correct`, { token: tokenA, json: { content: "Tenant B uses plain files" } }),
        404,
        "not_found",
      );
      // An id that exists nowhere answers exactly the same (but for the id it names).
      const nowhere = crypto.randomUUID();
      const unknown = assertError(await call(server, `memory/${nowhere}`, { token: tokenA }), 404, "not_found");
      assert.equal(unknown.message.replaceAll(nowhere, "<id>"), forB.message.replaceAll(id, "<id>"));
      // B's memory is untouched and A's list does not show it.
      const [row] = await sql`select state, pinned, is_valid from public.devai_memories where id = ${id}`;
      assert.deepEqual({ ...row }, { state: "active", pinned: false, is_valid: true });
      const listA = await call(server, "memory", { token: tokenA });
      assert.equal(listA.status, 200);
      assert.deepEqual((listA.body as { memories: unknown[] }).memories, []);
      // The control: the same list as B shows B's memory.
      const listB = await call(server, "memory", { token: await userToken(tenantB) });
      assert.deepEqual((listB.body as { memories: { id: string }[] }).memories.map((m) => m.id), [id]);
      // A user token naming another tenant in the header is refused.
      assertError(
        await call(server, "memory", { token: tokenA, headers: { "x-devai-tenant": tenantB } }),
        403,
        "forbidden_tenant",
      );
    });

    await t.step(
      "service role without a tenant → 400 tenant_required; with a bad one → 400 invalid_tenant",
      async () => {
        const service = await serviceToken();
        for (const name of MEMORY_ROUTES) {
          assertError(await call(server, name, { token: service, json: retrieveBody }), 400, "tenant_required");
        }
        assertError(
          await call(server, "memory", { token: service, headers: { "x-devai-tenant": "../etc" } }),
          400,
          "invalid_tenant",
        );
        const ok = await call(server, `memory/${memoryOfB.id}`, {
          token: service,
          headers: { "x-devai-tenant": tenantB },
        });
        assert.equal(ok.status, 200, "service role acting for B reads B's memory");
        // A tenant is any uuid Postgres keys rows by, not only an RFC 9562 one (schemas.ts anyUuid).
        const versionZero = await call(server, "memory", {
          token: service,
          headers: { "x-devai-tenant": "00000000-0000-0000-0000-000000000001" },
        });
        assert.equal(versionZero.status, 200, "a tenant id of version 0 names a tenant");
      },
    );

    await t.step("malformed JSON → 400 malformed_json; wrong types → 400 invalid_request with zod issues", async () => {
      const token = await userToken(tenantA);
      const headers = { "content-type": "application/json" };
      assertError(
        await call(server, "memory-retrieve", { token, headers, body: '{"message": "hi",' }),
        400,
        "malformed_json",
      );
      assertError(await call(server, "memory/remember", { token, headers, body: "{not json}" }), 400, "malformed_json");
      assertError(await call(server, "memory-extract", { token, headers, body: "[1, 2" }), 400, "malformed_json");
      const wrong = assertError(
        await call(server, "memory-retrieve", { token, json: { message: 42, budget_tokens: -5 } }),
        400,
        "invalid_request",
      );
      const paths = (wrong.issues ?? []).map((i) => i.path.join("."));
      assert.ok(paths.includes("message") && paths.includes("budget_tokens"), JSON.stringify(wrong.issues));
      assertError(
        await call(server, "memory-retrieve", { token, json: { message: "hi", top_k: 1_000_000 } }),
        400,
        "invalid_request",
      );
      assertError(
        await call(server, "memory/remember", { token, json: { content: "x", namespace: "devai/../etc" } }),
        400,
        "invalid_request",
      );
      assertError(
        await call(server, "memory/remember", { token, json: { content: "x", namespace: "devai/user/a\u0007b" } }),
        400,
        "invalid_request",
      );
      assertError(
        await call(server, "memory-retrieve", { token, body: "message=hi", headers: { "content-type": "text/plain" } }),
        415,
        "unsupported_media_type",
      );
    });

    await t.step("oversize body → 413 payload_too_large (declared length and chunked stream)", async () => {
      const token = await userToken(tenantA);
      const big = JSON.stringify({ message: "x".repeat(server.config.maxBodyBytes + 10) });
      assertError(
        await call(server, "memory-retrieve", { token, headers: { "content-type": "application/json" }, body: big }),
        413,
        "payload_too_large",
      );
      assertError(
        await call(server, "memory/remember", { token, headers: { "content-type": "application/json" }, body: big }),
        413,
        "payload_too_large",
      );
      // No Content-Length: the limit is enforced while streaming.
      const bytes = new TextEncoder().encode(big);
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let i = 0; i < bytes.length; i += 64 * 1024) controller.enqueue(bytes.slice(i, i + 64 * 1024));
          controller.close();
        },
      });
      // (memory-dedup: memory-extract takes 8 MiB, tested in write_extract_after.test.ts)
      assertError(
        await call(server, "memory-dedup", { token, headers: { "content-type": "application/json" }, body: stream }),
        413,
        "payload_too_large",
      );
    });

    await t.step("unknown function → 404 function_not_found; paths outside /functions/v1 → 404", async () => {
      const token = await userToken(tenantA);
      assertError(await call(server, "no-such-function", { token }), 404, "function_not_found");
      assertError(await call(server, "no-such-function"), 404, "function_not_found");
      assertError(await call(server, "_shared/auth.ts"), 404, "function_not_found");
      assertError(await call(server, ""), 404, "function_not_found");
      // The answer names the functions there are, and a doubled prefix (the functions URL given as
      // SUPABASE_URL) says what SUPABASE_URL is.
      const misspelt = assertError(await call(server, "memory-retrive", { token }), 404, "function_not_found");
      assert.match(misspelt.message, /^no function named 'memory-retrive'; the functions: .*\bmemory-retrieve\b/);
      const doubled = assertError(
        await call(server, "functions/v1/memory-retrieve", { token }),
        404,
        "function_not_found",
      );
      assert.ok(
        doubled.message.includes(`/functions/v1 twice (SUPABASE_URL is ${server.url}, without`),
        doubled.message,
      );
      const res = await fetch(`${server.url}/rest/v1/devai_memories`);
      assertError({ status: res.status, body: await res.json(), headers: res.headers }, 404, "not_found");
      // An unknown route inside a known function is the function's own 404.
      assertError(await call(server, "memory/no/such/route", { token, json: {} }), 404, "route_not_found");
    });

    await t.step("CORS preflight passes the gateway without a token", async () => {
      const res = await fetch(`${server.functionsUrl}/memory-retrieve`, {
        method: "OPTIONS",
        headers: { origin: "http://localhost:3000", "access-control-request-method": "POST" },
      });
      await res.body?.cancel();
      assert.equal(res.status, 204); // hono/cors: No Content
      assert.equal(res.headers.get("access-control-allow-origin"), "*");
      assert.match(res.headers.get("access-control-allow-headers") ?? "", /authorization/);
    });

    await t.step("a request id is echoed, or made up and returned", async () => {
      const mine = await call(server, "memory", { headers: { "x-request-id": "req-123" } });
      assert.equal((mine.body as ErrorBody).error.request_id, "req-123");
      const token = await userToken(tenantA);
      const ok = await call(server, "memory", { token });
      assert.equal(ok.status, 200);
      assert.match(ok.headers.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/);
    });

    await t.step("none of the refused requests wrote anything", async () => {
      assert.deepEqual(await tenantWrites(sql, tenantA), before.a);
      assert.deepEqual(await tenantWrites(sql, tenantB), before.b);
    });
  } finally {
    await server.close();
    await sql.end();
  }
});

Deno.test("http auth: every JWT must carry exp; nbf and iat in the future are refused (30 s leeway), exp at once", async () => {
  const server = await startTestServer({ worker: false });
  try {
    const tenant = newTenant();
    const now = Math.floor(Date.now() / 1000);
    // Both checks: the gateway's (memory-retrieve, verify_jwt) and the handler's (memory).
    const refused = async (token: string, reason: RegExp) => {
      for (const name of ["memory-retrieve", "memory"]) {
        const err = assertError(await call(server, name, { token, json: retrieveBody }), 401, "invalid_token");
        assert.match(err.message, reason);
      }
    };
    // A token without exp would never expire: refused whatever its role, before the role is read.
    for (const role of ["authenticated", "service_role", "anon"]) {
      await refused(await signToken({ role, sub: tenant, expiresIn: null }), /no 'exp' claim/);
    }
    await refused(await userToken(tenant, { expiresIn: null, extraClaims: { exp: "9999999999" } }), /exp/);
    await refused(await userToken(tenant, { extraClaims: { nbf: now + 3600 } }), /not valid yet/);
    await refused(await userToken(tenant, { issuedIn: 86_400 }), /issued in the future/);
    // nbf and iat within the leeway (clocks disagree by seconds): the token passes.
    for (
      const token of [
        await userToken(tenant, { extraClaims: { nbf: now + 10 } }),
        await userToken(tenant, { issuedIn: 10 }),
      ]
    ) {
      const ok = await call(server, "memory", { token });
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
    }
    // exp has no leeway: expired seconds ago is expired.
    assertError(
      await call(server, "memory", { token: await userToken(tenant, { expiresIn: -5 }) }),
      401,
      "token_expired",
    );
  } finally {
    await server.close();
  }
});

Deno.test("http auth: verify_jwt comes from supabase/config.toml, default true", async () => {
  const real = await readVerifyJwt(new URL("../supabase/config.toml", import.meta.url).pathname);
  // Ours take secret API keys and agent tokens, which the platform's JWT check refuses: our own auth checks them.
  for (
    const name of [
      "memory",
      "memory-retrieve",
      "memory-extract",
      "memory-compact",
      "memory-dedup",
      "memory-worker",
      "context",
      "memory-mcp",
    ]
  ) {
    assert.equal(real(name), false, name);
  }
  assert.equal(real("not-declared"), true);
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/config.toml`;
    await Deno.writeTextFile(
      path,
      '[functions.public-hook]\nverify_jwt = false\n\n[functions."quoted-name"]\nverify_jwt = true\n',
    );
    const parsed = await readVerifyJwt(path);
    assert.equal(parsed("public-hook"), false);
    assert.equal(parsed("quoted-name"), true);
    assert.equal(parsed("other"), true);
    assert.equal(
      (await readVerifyJwt(`${dir}/missing.toml`))("memory"),
      true,
      "no config.toml: every function verifies",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("http auth: with verify_jwt = false the gateway lets a tokenless request reach the function", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/config.toml`;
  await Deno.writeTextFile(path, "[functions.memory]\nverify_jwt = false\n");
  const server = await startTestServer({ worker: false, configTomlPath: path });
  try {
    // The memory handler still authenticates: its 401 comes back (the gateway did not stop it),
    // and a token signed with the right secret but an anon role is the handler's 403.
    assertError(await call(server, "memory"), 401, "missing_token");
    assertError(await call(server, "memory", { token: await anonToken() }), 403, "forbidden_role");
    assert.equal(server.functions.find((f) => f.name === "memory")?.verifyJwt, false);
    assert.equal(server.functions.find((f) => f.name === "memory-retrieve")?.verifyJwt, true);
  } finally {
    await server.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("http auth: tokens the server prints are accepted by it (local development secret)", async () => {
  const server = await startTestServer({ worker: false, jwtSecret: undefined, env: { DB_POOL_MAX: "2" } });
  try {
    assert.equal(server.usingLocalDevSecret, true);
    assert.ok(server.tokens);
    // They expire (2032), as Supabase's demo keys do: a JWT without exp is refused.
    for (const token of Object.values(server.tokens)) {
      const claims = JSON.parse(atob(token.split(".")[1]!.replaceAll("-", "+").replaceAll("_", "/")));
      assert.equal(typeof claims.exp, "number", JSON.stringify(claims));
    }
    const ok = await call(server, "memory", { token: server.tokens.demoUser });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assertError(await call(server, "memory", { token: server.tokens.anon }), 403, "forbidden_role");
    assertError(await call(server, "memory", { token: server.tokens.serviceRole }), 400, "tenant_required");
    // A token signed with the test secret is not valid here.
    assertError(await call(server, "memory", { token: await userToken(newTenant()) }), 401, "invalid_token");
    // And one signed with the local secret but already expired is refused.
    const now = Math.floor(Date.now() / 1000);
    const expired = await new SignJWT({ role: "authenticated", sub: newTenant() })
      .setProtectedHeader({ alg: "HS256" })
      .setIssuedAt(now - 7200)
      .setExpirationTime(now - 3600)
      .sign(new TextEncoder().encode("super-secret-jwt-token-with-at-least-32-characters-long"));
    assertError(await call(server, "memory", { token: expired }), 401, "token_expired");
  } finally {
    await server.close();
  }
});
