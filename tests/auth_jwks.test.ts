// Token verification with the project's JWKS (hosted projects with asymmetric signing keys): a
// local HTTP server on 127.0.0.1 serves the public keys, as <SUPABASE_URL>/auth/v1/.well-known/jwks.json
// does. The token signed by the project's key passes; one signed by any other key, an expired
// one, and an HS256 token forged with the public key as the HMAC secret (algorithm confusion) fail.
import assert from "node:assert/strict";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { authenticate } from "../supabase/functions/_shared/auth.ts";
import { HttpError } from "../supabase/functions/_shared/http.ts";
import { loadConfig } from "../supabase/functions/_shared/env.ts";

async function withJwksServer(
  fn: (
    jwksUrl: string,
    sign: (claims: Record<string, unknown>, opts?: { expiresIn?: number }) => Promise<string>,
    publicJwk: Record<string, unknown>,
  ) => Promise<void>,
) {
  const { publicKey, privateKey } = await generateKeyPair("ES256");
  const publicJwk = { ...(await exportJWK(publicKey)), kid: "project-key-1", alg: "ES256", use: "sig" };
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    (req) =>
      new URL(req.url).pathname === "/auth/v1/.well-known/jwks.json"
        ? Response.json({ keys: [publicJwk] })
        : new Response("not found", { status: 404 }),
  );
  const sign = async (claims: Record<string, unknown>, opts: { expiresIn?: number } = {}) => {
    const now = Math.floor(Date.now() / 1000);
    return await new SignJWT(claims).setProtectedHeader({ alg: "ES256", kid: "project-key-1" })
      .setIssuedAt(now - 5).setExpirationTime(now + (opts.expiresIn ?? 600)).sign(privateKey);
  };
  try {
    await fn(`http://127.0.0.1:${server.addr.port}`, sign, publicJwk);
  } finally {
    await server.shutdown();
  }
}

const request = (token: string) =>
  new Request("http://local/memory", { headers: { authorization: `Bearer ${token}` } });

async function rejects401(p: Promise<unknown>, code: string) {
  await assert.rejects(p, (e) => e instanceof HttpError && e.status === 401 && e.code === code);
}

Deno.test("auth (JWKS): SUPABASE_URL without a secret verifies against the project's published keys", async () => {
  await withJwksServer(async (supabaseUrl, sign, publicJwk) => {
    const config = loadConfig({ DATABASE_URL: "postgresql://x@127.0.0.1:1/x", SUPABASE_URL: supabaseUrl });
    assert.equal(config.jwt.jwksUrl, `${supabaseUrl}/auth/v1/.well-known/jwks.json`);
    assert.equal(config.jwt.secret, undefined);

    const tenant = crypto.randomUUID();
    const caller = await authenticate(request(await sign({ role: "authenticated", sub: tenant })), config);
    assert.deepEqual(caller, { role: "authenticated", tenantId: tenant, actor: `user:${tenant}` });

    // Another key pair with the same kid: the signature does not verify.
    const other = await generateKeyPair("ES256");
    const now = Math.floor(Date.now() / 1000);
    const forged = await new SignJWT({ role: "service_role" }).setProtectedHeader({
      alg: "ES256",
      kid: "project-key-1",
    })
      .setIssuedAt(now).setExpirationTime(now + 600).sign(other.privateKey);
    await rejects401(authenticate(request(forged), config), "invalid_token");

    // Algorithm confusion: HS256 with the public key's JSON as the shared secret.
    const confused = await new SignJWT({ role: "service_role" }).setProtectedHeader({
      alg: "HS256",
      kid: "project-key-1",
    })
      .setIssuedAt(now).setExpirationTime(now + 600).sign(new TextEncoder().encode(JSON.stringify(publicJwk)));
    await rejects401(authenticate(request(confused), config), "invalid_token");

    await rejects401(
      authenticate(request(await sign({ role: "authenticated", sub: tenant }, { expiresIn: -60 })), config),
      "token_expired",
    );
  });
});

Deno.test("auth (JWKS): a JWKS the server cannot load is its 503, not the caller's bad token; a wrong alg or a non-JWT says so", async () => {
  // A token the project's key signed, checked by a server whose JWKS endpoint is down.
  let token = "";
  let jwksUrl = "";
  await withJwksServer(async (url, sign) => {
    token = await sign({ role: "authenticated", sub: crypto.randomUUID() });
    jwksUrl = url; // closed once this returns: nothing listens there any more
  });
  const down = loadConfig({ DATABASE_URL: "postgresql://x@127.0.0.1:1/x", SUPABASE_URL: jwksUrl });
  const outage = await authenticate(request(token), down).then(() => undefined, (e) => e);
  assert.ok(outage instanceof HttpError, String(outage));
  assert.deepEqual([outage.status, outage.code], [503, "auth_unavailable"], outage.message);
  assert.match(outage.message, /could not load the project's signing keys/);

  await withJwksServer(async (url) => {
    const config = loadConfig({ DATABASE_URL: "postgresql://x@127.0.0.1:1/x", SUPABASE_URL: url });
    const reason = async (t: string) =>
      await authenticate(request(t), config).then(() => "", (e) => `${e.status} ${e.code}: ${e.message}`);
    // HS512 is neither the secret's HS256 nor an algorithm of the JWKS.
    const now = Math.floor(Date.now() / 1000);
    const hs512 = await new SignJWT({ role: "authenticated" }).setProtectedHeader({ alg: "HS512" })
      .setIssuedAt(now).setExpirationTime(now + 600).sign(new TextEncoder().encode("x".repeat(64)));
    assert.match(
      await reason(hs512),
      /^401 invalid_token: the token's algorithm \(alg\) is not one this server accepts/,
    );
    assert.match(
      await reason("a.b.c"),
      /^401 invalid_token: the token is not a valid JWT/,
    );
  });
});
