// Test tokens signed with jose HS256 and TEST_JWT_SECRET (tests/support/config.ts), the way the
// Supabase gateway's tokens look: role + sub claims, short expiry.
import { SignJWT } from "jose";
import { TENANT_HEADER } from "../../supabase/functions/_shared/auth.ts";
import { TEST_JWT_SECRET } from "./config.ts";

export interface TokenOptions {
  role?: string;
  sub?: string;
  /** Seconds from now; negative gives an expired token. Default 1 hour. null: no exp (refused). */
  expiresIn?: number | null;
  /** iat, seconds from now. Default -5. */
  issuedIn?: number;
  secret?: string;
  extraClaims?: Record<string, unknown>;
}

export async function signToken(opts: TokenOptions = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const claims: Record<string, unknown> = { ...opts.extraClaims };
  if (opts.role !== undefined) claims.role = opts.role;
  const jwt = new SignJWT(claims)
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setIssuedAt(now + (opts.issuedIn ?? -5));
  if (opts.expiresIn !== null) jwt.setExpirationTime(now + (opts.expiresIn ?? 3600));
  if (opts.sub) jwt.setSubject(opts.sub);
  return await jwt.sign(new TextEncoder().encode(opts.secret ?? TEST_JWT_SECRET));
}

/** A user (authenticated) token: the tenant is the subject. */
export function userToken(tenantId: string, opts: Omit<TokenOptions, "sub" | "role"> = {}): Promise<string> {
  return signToken({ ...opts, role: "authenticated", sub: tenantId });
}

export function serviceToken(opts: Omit<TokenOptions, "role"> = {}): Promise<string> {
  return signToken({ ...opts, role: "service_role" });
}

export function anonToken(opts: Omit<TokenOptions, "role"> = {}): Promise<string> {
  return signToken({ ...opts, role: "anon" });
}

/** Headers for a JSON request as a tenant's user token. */
export async function userHeaders(
  tenantId: string,
  extra: Record<string, string> = {},
): Promise<Record<string, string>> {
  return { authorization: `Bearer ${await userToken(tenantId)}`, "content-type": "application/json", ...extra };
}

/** Headers for a JSON request as service_role acting for a tenant. */
export async function serviceHeaders(
  tenantId: string,
  extra: Record<string, string> = {},
): Promise<Record<string, string>> {
  return {
    authorization: `Bearer ${await serviceToken()}`,
    [TENANT_HEADER]: tenantId,
    "content-type": "application/json",
    ...extra,
  };
}
