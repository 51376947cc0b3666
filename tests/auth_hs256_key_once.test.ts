// HS256 user tokens are verified with the JWT secret imported as a key once per configuration, not
// once per request (docs/auth.md#credentials): importing it is a third of a verification's CPU, on
// every retrieve. Counted, not timed: the calls to crypto.subtle.importKey over many verifications.
import assert from "node:assert/strict";
import { verifyJwt } from "../supabase/functions/_shared/jwt.ts";
import { HttpError } from "../supabase/functions/_shared/http.ts";
import { signToken, userToken } from "./support/auth.ts";

Deno.test("auth: the JWT secret is imported once for every HS256 token it verifies, forged ones still refused", async () => {
  const secret = `hs256-import-once-${crypto.randomUUID()}`; // a configuration no other test verified with
  const config = { jwt: { secret } };
  const tenant = crypto.randomUUID();
  const tokens = await Promise.all(Array.from({ length: 20 }, () => userToken(tenant, { secret })));
  const forged = await signToken({ role: "service_role", secret: `${secret}-not` });
  const subtle = crypto.subtle as unknown as { importKey: (...args: unknown[]) => Promise<CryptoKey> };
  const importKey = subtle.importKey;
  let imports = 0;
  subtle.importKey = (...args: unknown[]) => {
    imports++;
    return importKey.apply(crypto.subtle, args);
  };
  try {
    for (const token of tokens) assert.equal((await verifyJwt(token, config)).sub, tenant);
    await assert.rejects(
      verifyJwt(forged, config),
      (e) => e instanceof HttpError && e.status === 401 && e.code === "invalid_token",
    );
    assert.equal((await verifyJwt(tokens[0]!, config)).sub, tenant);
  } finally {
    subtle.importKey = importKey;
  }
  assert.equal(imports, 1, `the secret was imported ${imports} times for 22 tokens`);
});
