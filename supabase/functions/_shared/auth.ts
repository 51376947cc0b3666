// Who is calling, from the Authorization bearer token (verified with jose: HS256 secret or the
// project's JWKS). An `authenticated` token is its own tenant; `service_role` (server-side agents,
// workers) must name the tenant it acts for in the x-devai-tenant header; `anon` is refused.
import type { MiddlewareHandler } from "hono";
import { createRemoteJWKSet, errors as joseErrors, jwtVerify, type JWTPayload } from "jose";
import type { Config } from "./env.ts";
import { HttpError } from "./http.ts";

export interface Caller {
  role: "authenticated" | "service_role";
  /** The tenant whose memories this request reads and writes (owner_id). */
  tenantId: string;
  /** Written to the history as the actor of every change. */
  actor: string;
}

export const TENANT_HEADER = "x-devai-tenant";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

type Verifier = (token: string) => Promise<JWTPayload>;
const verifiers = new Map<string, Verifier>();

function verifierFor(jwt: Config["jwt"]): Verifier {
  const key = jwt.secret ? `hs256:${jwt.secret}` : `jwks:${jwt.jwksUrl}`;
  let verifier = verifiers.get(key);
  if (!verifier) {
    if (jwt.secret) {
      const secret = new TextEncoder().encode(jwt.secret);
      verifier = async (token) => (await jwtVerify(token, secret, { algorithms: ["HS256"] })).payload;
    } else if (jwt.jwksUrl) {
      const jwks = createRemoteJWKSet(new URL(jwt.jwksUrl));
      verifier = async (token) => (await jwtVerify(token, jwks)).payload;
    } else {
      throw new Error("no JWT verification key configured");
    }
    verifiers.set(key, verifier);
  }
  return verifier;
}

/** Verifies the token's signature and expiry; 401 with a precise code when it cannot. */
export async function verifyBearer(req: Request, config: Pick<Config, "jwt">): Promise<JWTPayload> {
  const header = req.headers.get("authorization");
  if (!header) throw new HttpError(401, "missing_token", "send Authorization: Bearer <jwt>");
  const match = /^Bearer\s+(\S+)$/i.exec(header);
  if (!match?.[1]) throw new HttpError(401, "invalid_token", "Authorization must be 'Bearer <jwt>'");
  try {
    return await verifierFor(config.jwt)(match[1]);
  } catch (err) {
    if (err instanceof joseErrors.JWTExpired) throw new HttpError(401, "token_expired", "the token has expired");
    throw new HttpError(401, "invalid_token", "the token could not be verified");
  }
}

/** The caller and tenant for a memory request; see the module comment for the rules. */
export async function authenticate(req: Request, config: Pick<Config, "jwt">): Promise<Caller> {
  const claims = await verifyBearer(req, config);
  const role = claims.role;
  if (role === "authenticated") {
    if (typeof claims.sub !== "string" || !UUID.test(claims.sub)) {
      throw new HttpError(401, "invalid_token", "an authenticated token needs a uuid subject");
    }
    const named = req.headers.get(TENANT_HEADER);
    if (named && named.toLowerCase() !== claims.sub.toLowerCase()) {
      throw new HttpError(403, "forbidden_tenant", "a user token can only act for its own tenant");
    }
    return { role, tenantId: claims.sub.toLowerCase(), actor: `user:${claims.sub.toLowerCase()}` };
  }
  if (role === "service_role") {
    const tenant = req.headers.get(TENANT_HEADER);
    if (!tenant) {
      throw new HttpError(400, "tenant_required", `a service_role caller must name the tenant in the ${TENANT_HEADER} header`);
    }
    if (!UUID.test(tenant)) throw new HttpError(400, "invalid_tenant", `${TENANT_HEADER} must be a uuid`);
    return { role, tenantId: tenant.toLowerCase(), actor: "service_role" };
  }
  throw new HttpError(403, "forbidden_role", `role '${String(role ?? "none")}' may not use the memory API; use a user or service_role token`);
}

/** Who changes deployment-wide configuration (agents, categories): no tenant is involved. */
export interface ConfigCaller {
  role: "authenticated" | "service_role";
  actor: string;
}

/**
 * For configuration routes: a user token (reads) or a service_role token, which here needs no
 * tenant header because nothing it does belongs to one tenant.
 */
export async function authenticateConfigCaller(req: Request, config: Pick<Config, "jwt">): Promise<ConfigCaller> {
  const claims = await verifyBearer(req, config);
  if (claims.role === "service_role") return { role: "service_role", actor: "service_role" };
  if (claims.role === "authenticated" && typeof claims.sub === "string" && UUID.test(claims.sub)) {
    return { role: "authenticated", actor: `user:${claims.sub.toLowerCase()}` };
  }
  throw new HttpError(403, "forbidden_role", `role '${String(claims.role ?? "none")}' may not read the memory configuration`);
}

/** For worker endpoints that act across tenants: only service_role tokens pass. */
export async function requireServiceRole(req: Request, config: Pick<Config, "jwt">): Promise<void> {
  const claims = await verifyBearer(req, config);
  if (claims.role !== "service_role") throw new HttpError(403, "forbidden_role", "this endpoint needs a service_role token");
}

/** Middleware: the request's caller (authenticate), as the context variable `caller`. */
export function requireCaller(config: Pick<Config, "jwt">): MiddlewareHandler<{ Variables: { caller: Caller } }> {
  return async (c, next) => {
    c.set("caller", await authenticate(c.req.raw, config));
    await next();
  };
}
