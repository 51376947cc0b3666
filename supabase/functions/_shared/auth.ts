// Who is calling (docs/auth.md). The credential is the Authorization bearer token, else the
// apikey header:
// - a JWT (a user's session, or a legacy anon / service_role key), verified in jwt.ts: HS256 with
//   the legacy secret, asymmetric algorithms with the project's JWKS, both accepted at once;
// - a secret API key (sb_secret_…): service_role; a publishable key (sb_publishable_…): anon.
//   Compared in constant time with the project's keys (SUPABASE_SECRET_KEYS, …);
// - an agent token (agent-tokens.ts): a user's tenant, as one agent.
// An `authenticated` caller is its own tenant; `service_role` (server-side agents, workers) must
// name the tenant it acts for in the x-devai-tenant header; `anon` is refused. The agent whose
// memory.query allowlist applies comes from an agent token, else from the x-devai-agent header.
import { createHash, timingSafeEqual } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import type { JWTPayload } from "jose";
import { AGENT_TOKEN_PREFIX, resolveAgentToken } from "./agent-tokens.ts";
import type { Sql } from "./db.ts";
import type { Config } from "./env.ts";
import { HttpError } from "./http.ts";
import { verifyJwt } from "./jwt.ts";
import { agentName, anyUuid } from "./schemas.ts";

export interface Caller {
  role: "authenticated" | "service_role";
  /** The tenant whose memories this request reads and writes (owner_id). */
  tenantId: string;
  /** Written to the history as the actor of every change. */
  actor: string;
  /** The agent whose memory.query allowlist applies: an agent token's, or the x-devai-agent header's. */
  agent?: string;
  /** True when the agent comes from an agent token (it cannot act as another agent). */
  agentBound?: boolean;
}

/** Who a credential says the caller is, before any tenant is decided. */
export interface Identity {
  role: "anon" | "authenticated" | "service_role";
  /** The user (a session's subject, an agent token's owner). */
  sub?: string;
  /** The agent an agent token was issued for. */
  agent?: string;
  credential: "jwt" | "secret_key" | "publishable_key" | "agent_token";
}

/** What verifying a credential needs: the keys, and the database for agent tokens. */
export type AuthConfig = Pick<Config, "jwt" | "apiKeys">;

export const TENANT_HEADER = "x-devai-tenant";
export const AGENT_HEADER = "x-devai-agent";

function bearerOf(req: Request): string | undefined {
  const header = req.headers.get("authorization");
  if (header === null) return undefined;
  const match = /^Bearer\s+(\S+)$/i.exec(header);
  if (!match?.[1]) {
    // `-H "Authorization: Bearer $TOKEN"` with TOKEN unset sends "Bearer " and nothing: say so.
    const empty = /^\s*Bearer\s*$/i.test(header);
    throw new HttpError(
      401,
      "invalid_token",
      empty
        ? "Authorization is 'Bearer ' with no token after it (an unset shell variable?): send 'Bearer <token>'"
        : "Authorization must be 'Bearer <token>'",
    );
  }
  return match[1];
}

/** The gateway's check (verify_jwt): a valid JWT in the Authorization header, any role. */
export async function verifyBearer(req: Request, config: Pick<Config, "jwt">): Promise<JWTPayload> {
  const token = bearerOf(req);
  if (!token) throw new HttpError(401, "missing_token", "send Authorization: Bearer <jwt>");
  return await verifyJwt(token, config);
}

function digest(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}

/** Whether key is one of keys, compared in constant time (digests of equal length). */
function isOneOf(key: string, keys: readonly string[]): boolean {
  const mine = digest(key);
  let found = false;
  for (const k of keys) found = timingSafeEqual(mine, digest(k)) || found;
  return found;
}

/** Who the request's credential says the caller is; 401 when it has none or a bad one. */
export async function identify(req: Request, config: AuthConfig, sql?: Sql): Promise<Identity> {
  const credential = bearerOf(req) ?? req.headers.get("apikey") ?? undefined;
  if (!credential) {
    throw new HttpError(
      401,
      "missing_token",
      "send Authorization: Bearer <token> (a user's JWT or an agent token), or a secret key in apikey",
    );
  }
  if (credential.startsWith("sb_secret_")) {
    if (!isOneOf(credential, config.apiKeys.secret)) {
      throw new HttpError(401, "invalid_token", "the secret key is not one of this project's");
    }
    return { role: "service_role", credential: "secret_key" };
  }
  if (credential.startsWith("sb_publishable_")) {
    if (!isOneOf(credential, config.apiKeys.publishable)) {
      throw new HttpError(401, "invalid_token", "the publishable key is not one of this project's");
    }
    return { role: "anon", credential: "publishable_key" };
  }
  if (credential.startsWith(AGENT_TOKEN_PREFIX)) {
    const token = sql ? await resolveAgentToken(sql, credential) : undefined;
    if (!token) {
      throw new HttpError(
        401,
        "invalid_token",
        "the agent token is unknown, revoked or expired: issue a new one with POST memory/agent-tokens, signed in as the user (docs/auth.md#agent-tokens)",
      );
    }
    return { role: "authenticated", sub: token.owner_id, agent: token.agent, credential: "agent_token" };
  }
  const claims = await verifyJwt(credential, config);
  if (claims.role === "authenticated" || claims.role === "service_role" || claims.role === "anon") {
    return { role: claims.role, sub: typeof claims.sub === "string" ? claims.sub : undefined, credential: "jwt" };
  }
  throw new HttpError(403, "forbidden_role", `${roleRefusal(claims.role)}; use a user or service_role token`);
}

/**
 * Why a JWT's role claim is refused. A claim that is not a string (["service_role"], an object) is
 * said to be so: printed as a string it read as the role it only contains.
 */
function roleRefusal(role: unknown): string {
  if (role === undefined) return "the token has no role claim";
  if (typeof role !== "string") {
    return `the token's role claim is not a string (${Array.isArray(role) ? "an array" : typeof role})`;
  }
  return `role '${role}' may not use the memory API`;
}

/** The agent named by the x-devai-agent header, checked against the identity's own. */
function agentOf(req: Request, identity: Identity): { agent?: string; agentBound?: boolean } {
  const named = req.headers.get(AGENT_HEADER);
  if (named !== null && !agentName.safeParse(named).success) {
    throw new HttpError(
      400,
      "invalid_agent",
      `${AGENT_HEADER} must be an agent name: lowercase letters, digits, _ or -`,
    );
  }
  if (identity.agent) {
    if (named !== null && named !== identity.agent) {
      throw new HttpError(
        403,
        "forbidden_agent",
        `this agent token is ${identity.agent}'s; it cannot act as '${named}'`,
      );
    }
    return { agent: identity.agent, agentBound: true };
  }
  return named !== null ? { agent: named } : {};
}

/** A user credential's user (lower-cased): its subject, which must be a uuid (401 otherwise). */
function userOf(identity: Identity): string {
  if (!identity.sub || !anyUuid.safeParse(identity.sub).success) {
    throw new HttpError(401, "invalid_token", "an authenticated token needs a uuid subject");
  }
  return identity.sub.toLowerCase();
}

/** The caller and tenant for a memory request; see the module comment for the rules. */
export async function authenticate(req: Request, config: AuthConfig, sql?: Sql): Promise<Caller> {
  const identity = await identify(req, config, sql);
  if (identity.role === "authenticated") {
    const tenantId = userOf(identity);
    const named = req.headers.get(TENANT_HEADER);
    if (named && named.toLowerCase() !== tenantId) {
      throw new HttpError(403, "forbidden_tenant", "a user token can only act for its own tenant");
    }
    const agent = agentOf(req, identity);
    const actor = identity.credential === "agent_token"
      ? `agent:${identity.agent}@user:${tenantId}`
      : `user:${tenantId}`;
    return { role: "authenticated", tenantId, actor, ...agent };
  }
  if (identity.role === "service_role") {
    const tenant = req.headers.get(TENANT_HEADER);
    if (!tenant) {
      throw new HttpError(
        400,
        "tenant_required",
        `a service_role caller must name the tenant in the ${TENANT_HEADER} header`,
      );
    }
    if (!anyUuid.safeParse(tenant).success) {
      throw new HttpError(400, "invalid_tenant", `${TENANT_HEADER} must be a uuid`);
    }
    return { role: "service_role", tenantId: tenant.toLowerCase(), actor: "service_role", ...agentOf(req, identity) };
  }
  throw new HttpError(
    403,
    "forbidden_role",
    "role 'anon' may not use the memory API (the anon or publishable key names no user): send a user's JWT or an agent " +
      "token (dvm_…) as the bearer, or a secret key in apikey with x-devai-tenant",
  );
}

/**
 * For what only the user (or service_role acting for the tenant) decides, never an agent acting
 * as the user: managing agent tokens, consenting to proposals. `what` says what is refused.
 */
export function refuseAgentToken(caller: Pick<Caller, "agentBound">, what: string): void {
  if (caller.agentBound) {
    throw new HttpError(403, "forbidden_credential", `${what} with the user's own session, not with an agent token`);
  }
}

/** Who changes deployment-wide configuration (agents, categories): no tenant is involved. */
export interface ConfigCaller {
  role: "authenticated" | "service_role";
  actor: string;
  /** A user's own tenant: whose rate limit the request is charged to (service_role: none). */
  tenantId?: string;
}

/**
 * For configuration routes: a user (reads) or a service_role caller, which here needs no tenant
 * header because nothing it does belongs to one tenant.
 */
export async function authenticateConfigCaller(req: Request, config: AuthConfig, sql?: Sql): Promise<ConfigCaller> {
  const identity = await identify(req, config, sql);
  if (identity.role === "service_role") return { role: "service_role", actor: "service_role" };
  // The same rule as for memory requests: a user token without a uuid subject is a bad token (401).
  if (identity.role === "authenticated") {
    const tenantId = userOf(identity);
    return { role: "authenticated", actor: `user:${tenantId}`, tenantId };
  }
  throw new HttpError(403, "forbidden_role", "role 'anon' may not read the memory configuration");
}

/** For worker endpoints that act across tenants: only service_role (a secret key or service_role JWT) passes. */
export async function requireServiceRole(req: Request, config: AuthConfig, sql?: Sql): Promise<void> {
  const identity = await identify(req, config, sql);
  if (identity.role !== "service_role") {
    throw new HttpError(403, "forbidden_role", "this endpoint needs a service_role token");
  }
}

/** Middleware: the request's caller (authenticate), as the context variable `caller`. */
export function requireCaller(config: AuthConfig, sql?: Sql): MiddlewareHandler<{ Variables: { caller: Caller } }> {
  return async (c, next) => {
    c.set("caller", await authenticate(c.req.raw, config, sql));
    await next();
  };
}
