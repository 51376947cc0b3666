// Agent tokens (docs/auth.md#agent-tokens): long-lived, revocable credentials a user issues for one
// coding agent. A token is AGENT_TOKEN_PREFIX + 32 random bytes (base64url); only its SHA-256 is
// stored (public.memory_agent_tokens), so the table never holds a usable credential, and the token
// is shown once, when issued. The prefix lets secret scanners and our auth recognise one.
import { createHash } from "node:crypto";
import type { Sql, Tx } from "./db.ts";
import { HttpError } from "./http.ts";
import { isoDates } from "./memories/memory-row.ts";

export const AGENT_TOKEN_PREFIX = "dvm_";
/** Characters of a token shown in lists, to tell tokens apart (never enough to use one). */
const SHOWN_PREFIX_LENGTH = 10;

export interface AgentToken {
  id: string;
  agent: string;
  label: string | null;
  token_prefix: string;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
}

function hashOf(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

function newToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return AGENT_TOKEN_PREFIX +
    btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

const COLUMNS = "id, agent, label, token_prefix, created_at, expires_at, last_used_at, revoked_at";

/** The database's refusal of a token beyond agent_tokens_max_active (its trigger's constraint name). */
const ACTIVE_LIMIT_CONSTRAINT = "memory_agent_tokens_active_limit";
/** Revoked or expired tokens a list shows, newest first: with the cap on active ones, lists stay bounded. */
const INACTIVE_TOKENS_LISTED = 50;

/**
 * Issues a token for the tenant (the transaction's) and agent; the token is in the answer only.
 * 409 agent_token_limit when the tenant holds agent_tokens_max_active active tokens already (the
 * database checks it, under a lock per user, so parallel issues cannot pass it together).
 */
export async function issueAgentToken(
  tx: Tx,
  tenantId: string,
  input: { agent: string; label?: string; expiresAt?: Date },
): Promise<AgentToken & { token: string }> {
  const token = newToken();
  try {
    const [row] = await tx`
      insert into public.memory_agent_tokens (owner_id, agent, label, token_hash, token_prefix, expires_at)
      values (${tenantId}, ${input.agent}, ${input.label ?? null}, ${hashOf(token)},
              ${token.slice(0, SHOWN_PREFIX_LENGTH)}, ${input.expiresAt ?? null})
      returning ${tx.unsafe(COLUMNS)}`;
    return { ...(isoDates(row!) as unknown as AgentToken), token };
  } catch (err) {
    const e = err as { code?: string; constraint_name?: string; message?: string; hint?: string };
    if (e.code === "23514" && e.constraint_name === ACTIVE_LIMIT_CONSTRAINT) {
      throw new HttpError(409, "agent_token_limit", `${e.message}: ${e.hint}`);
    }
    throw err;
  }
}

/**
 * The tenant's tokens, newest first (RLS: only the tenant's): every active one (at most
 * agent_tokens_max_active) and the INACTIVE_TOKENS_LISTED newest revoked or expired ones.
 */
export async function listAgentTokens(tx: Tx): Promise<AgentToken[]> {
  const rows = await tx`
    select ${tx.unsafe(COLUMNS)} from (
      select t.*, row_number() over (partition by t.active order by t.created_at desc, t.id) as n
        from (select ${tx.unsafe(COLUMNS)}, revoked_at is null and (expires_at is null or expires_at > now()) as active
                from public.memory_agent_tokens) t
    ) listed
    where active or n <= ${INACTIVE_TOKENS_LISTED}
    order by created_at desc, id`;
  return rows.map((r) => isoDates(r) as unknown as AgentToken);
}

/** Revokes one of the tenant's tokens (again: unchanged); undefined when the tenant has no such token. */
export async function revokeAgentToken(
  tx: Tx,
  id: string,
): Promise<{ changed: boolean; token: AgentToken } | undefined> {
  const [revoked] = await tx`
    update public.memory_agent_tokens set revoked_at = now() where id = ${id} and revoked_at is null
    returning ${tx.unsafe(COLUMNS)}`;
  if (revoked) return { changed: true, token: isoDates(revoked) as unknown as AgentToken };
  const [already] = await tx`select ${tx.unsafe(COLUMNS)} from public.memory_agent_tokens where id = ${id}`;
  return already ? { changed: false, token: isoDates(already) as unknown as AgentToken } : undefined;
}

/**
 * The tenant and agent of a token that is neither revoked nor expired, else undefined. Runs on the
 * service's own connection (no tenant is known yet) through memory_private.use_agent_token.
 */
export async function resolveAgentToken(
  sql: Sql,
  token: string,
): Promise<{ owner_id: string; agent: string } | undefined> {
  const [row] = await sql<{ owner_id: string; agent: string }[]>`
    select owner_id, agent from memory_private.use_agent_token(${hashOf(token)})`;
  return row;
}
