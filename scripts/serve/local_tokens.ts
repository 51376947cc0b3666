// Tokens for local development, signed with the local HS256 secret the way `supabase start` does:
// the same well-known secret and the same long-lived anon / service_role demo tokens. NEVER use
// this secret for anything reachable from outside the machine.
import { SignJWT } from "jose";

/** `supabase start`'s well-known local JWT secret. Local development only. */
export const LOCAL_DEV_JWT_SECRET = "super-secret-jwt-token-with-at-least-32-characters-long";

/**
 * The local project's secret API key (Supabase's new key kind: sent in the apikey header, not a
 * JWT; acts as service_role). Local development only, like the secret above.
 */
export const LOCAL_DEV_SECRET_KEY = "sb_secret_devai-local-development-only_00000000";

/** The tenant of the printed demo user token (an `authenticated` token is its own tenant). */
export const LOCAL_DEMO_USER_ID = "00000000-0000-4000-8000-00000000d001";

// Fixed iat/exp (like Supabase's demo keys) so the printed tokens are the same on every start.
const ISSUED_AT = 1_641_769_200; // 2022-01-10
const EXPIRES_AT = 1_983_812_996; // 2032-11-12

export interface LocalTokens {
  anon: string;
  serviceRole: string;
  /** role authenticated, sub LOCAL_DEMO_USER_ID: the quickest way to try the memory API. */
  demoUser: string;
}

export async function signLocalToken(secret: string, claims: Record<string, unknown>): Promise<string> {
  return await new SignJWT({ iss: "supabase-demo", ...claims })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setIssuedAt(ISSUED_AT)
    .setExpirationTime(EXPIRES_AT)
    .sign(new TextEncoder().encode(secret));
}

export async function localTokens(secret: string): Promise<LocalTokens> {
  return {
    anon: await signLocalToken(secret, { role: "anon" }),
    serviceRole: await signLocalToken(secret, { role: "service_role" }),
    demoUser: await signLocalToken(secret, { role: "authenticated", sub: LOCAL_DEMO_USER_ID, aud: "authenticated" }),
  };
}
