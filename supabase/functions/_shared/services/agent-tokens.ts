// Issuing, listing and revoking agent tokens (docs/auth.md#agent-tokens), as the tenant (RLS). A
// token is issued by the user (a session) or a service_role caller acting for the tenant, never
// by an agent token: an agent cannot mint or revoke credentials.
import { type AgentToken, issueAgentToken, listAgentTokens, revokeAgentToken } from "../agent-tokens.ts";
import { type Caller, refuseAgentToken } from "../auth.ts";
import { withTenant } from "../db.ts";
import { HttpError } from "../http.ts";
import { AGENT_TOKEN_LABEL_MAX, type AgentTokenRequest } from "../memories/schemas.ts";
import { requireAllowlist } from "../memory-config.ts";
import { redactField } from "../redact.ts";
import { recordRedactions } from "../redaction-events.ts";
import type { ServiceDeps } from "./deps.ts";

const refuseAgentTokens = (caller: Caller) => refuseAgentToken(caller, "agent tokens are managed");

/** A new token for a configured agent; the token itself is in this answer only. */
export async function issueToken(
  deps: ServiceDeps,
  caller: Caller,
  body: AgentTokenRequest,
): Promise<AgentToken & { token: string }> {
  refuseAgentTokens(caller);
  const now = deps.clock();
  // The label is stored and listed: a secret pasted into it is redacted (docs/redaction.md).
  const label = redactField(body.label, "text", AGENT_TOKEN_LABEL_MAX);
  return await withTenant(deps.sql, caller, async (tx) => {
    await requireAllowlist(tx, body.agent);
    await recordRedactions(tx, {
      ownerId: caller.tenantId,
      writer: "agent-token",
      node: "hotpath",
      counts: label.counts,
      dropped: label.dropped,
    });
    return await issueAgentToken(tx, caller.tenantId, {
      agent: body.agent,
      label: label.text,
      expiresAt: body.expires_in_days ? new Date(now.getTime() + body.expires_in_days * 86_400_000) : undefined,
    });
  });
}

export async function listTokens(deps: ServiceDeps, caller: Caller): Promise<AgentToken[]> {
  refuseAgentTokens(caller);
  return await withTenant(deps.sql, caller, listAgentTokens);
}

/** Revokes a token at once: its next request is a 401. Revoking it again changes nothing. */
export async function revokeToken(
  deps: ServiceDeps,
  caller: Caller,
  id: string,
): Promise<{ changed: boolean; token: AgentToken }> {
  refuseAgentTokens(caller);
  const result = await withTenant(deps.sql, caller, (tx) => revokeAgentToken(tx, id));
  if (!result) throw new HttpError(404, "not_found", `agent token ${id} not found`);
  return result;
}
