// A token's signature is checked once, not on every request that sends it (docs/auth.md#credentials):
// the same session token comes with every turn, and its HMAC check was a seventh of a retrieval's
// Deno CPU. Counted, not timed: the calls to crypto.subtle.verify. What a remembered token is
// still refused for is checked with the clock moved (Date.now), not by waiting.
import assert from "node:assert/strict";
import { VERIFIED_TOKEN_TTL_MS, verifyJwt } from "../supabase/functions/_shared/jwt.ts";
import { HttpError } from "../supabase/functions/_shared/http.ts";
import { signToken, userToken } from "./support/auth.ts";

/** Runs work counting crypto.subtle.verify's calls. */
async function countingVerifies(work: () => Promise<void>): Promise<number> {
  const subtle = crypto.subtle as unknown as { verify: (...args: unknown[]) => Promise<boolean> };
  const verify = subtle.verify;
  let calls = 0;
  subtle.verify = (...args: unknown[]) => {
    calls++;
    return verify.apply(crypto.subtle, args);
  };
  try {
    await work();
  } finally {
    subtle.verify = verify;
  }
  return calls;
}

/** Runs work with Date.now moved by `ms`. */
async function later<T>(ms: number, work: () => Promise<T>): Promise<T> {
  const now = Date.now;
  Date.now = () => now() + ms;
  try {
    return await work();
  } finally {
    Date.now = now;
  }
}

const refused = (code: string) => (e: unknown) => e instanceof HttpError && e.status === 401 && e.code === code;

Deno.test("auth: a token sent again is not verified again; forged and other projects' tokens still are, and refused", async () => {
  const secret = `verified-once-${crypto.randomUUID()}`; // a configuration no other test verified with
  const config = { jwt: { secret } };
  const tenant = crypto.randomUUID();
  const token = await userToken(tenant, { secret });
  const other = await userToken(tenant, { secret, extraClaims: { session_id: "second" } });
  const forged = await signToken({ role: "service_role", sub: tenant, secret: `${secret}-not` });
  const calls = await countingVerifies(async () => {
    for (let i = 0; i < 20; i++) assert.equal((await verifyJwt(token, config)).sub, tenant);
    assert.equal((await verifyJwt(other, config)).sub, tenant);
    for (let i = 0; i < 3; i++) await assert.rejects(verifyJwt(forged, config), refused("invalid_token"));
  });
  // One check for each token that passed, one for every forged attempt (a refusal is not remembered).
  assert.equal(calls, 5, `crypto.subtle.verify was called ${calls} times`);
  // Another project's configuration does not take this one's word for the token.
  await assert.rejects(verifyJwt(token, { jwt: { secret: `${secret}-other` } }), refused("invalid_token"));
});

Deno.test("auth: a remembered token is refused from its exp on, and checked again after the remembering ends", async () => {
  const secret = `verified-expiry-${crypto.randomUUID()}`;
  const config = { jwt: { secret } };
  const tenant = crypto.randomUUID();
  const token = await userToken(tenant, { secret, expiresIn: 60 });
  const lasting = await userToken(tenant, { secret, expiresIn: 3600 });
  await verifyJwt(token, config);
  await verifyJwt(lasting, config);
  await later(61_000, () => assert.rejects(verifyJwt(token, config), refused("token_expired")));
  const calls = await countingVerifies(async () => {
    await verifyJwt(lasting, config);
    await later(VERIFIED_TOKEN_TTL_MS + 1_000, () => verifyJwt(lasting, config));
  });
  assert.equal(calls, 1, "a token is checked again once it has been remembered for VERIFIED_TOKEN_TTL_MS");
});
