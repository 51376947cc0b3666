// POST memory/usage (docs/context.md#usage-feedback): an agent (or its integration) reports which
// of the memories it was given it used, each memory counted once per session (a resent report
// changes nothing). Counters per memory, a stronger reinforcement for cited
// ones, and the tenant's totals (prediction accuracy, share of injected tokens that were cited)
// are written by public.record_memory_usage, called as the tenant (security definer: tenants cannot
// write those tables directly); ranking reads the counters (retrieval/rank.ts usageFactor).
import type { Caller } from "../auth.ts";
import { type Sql, type Tx, withTenant } from "../db.ts";
import { bulletText } from "../fit-text.ts";
import { countTokens } from "../tokens.ts";
import type { UsageRequest } from "./schemas.ts";

export interface UsageResponse {
  session_id: string;
  /** Memories this report counted as retrieved: the caller's, first reported in this session. */
  recorded: number;
  /** Memories this report counted as cited: first cited in this session (also those it had reported only retrieved). */
  cited: number;
  /** Reported ids that are no memory of the caller's: nothing was written for them. */
  unknown: string[];
  /** Reported memories of the caller's that were corrected or forgotten: nothing was written for them. */
  inactive: string[];
  /** Reported memories this session had reported before: not counted again (a first citation of one is in `cited`). */
  already_recorded: string[];
  /** Cited memories that context/predict had predicted for this session (in its answer, not all it cached). */
  cited_prefetched: number;
  /** Whether the session had predictions (only then does the report count toward prediction accuracy). */
  predicted_session: boolean;
}

/**
 * Stored text one usage report tokenizes at most (UTF-8 bytes, about 32 memories of 1,000
 * characters): the work stays bounded by the request, not by how long the reported memories are.
 */
export const USAGE_TOKENIZED_BYTES = 32_000;
/** Beyond that budget a memory's tokens are estimated: a quarter of its UTF-8 bytes. */
const BYTES_PER_TOKEN = 4;

/**
 * Tokens each reported memory took in the session (docs/context.md#usage-feedback): what
 * context/assemble recorded injecting; else its full text's, counted exactly while the report's
 * USAGE_TOKENIZED_BYTES last (in id order) and estimated from its length after that (the database
 * sends the text only of the memories counted exactly). `tokenized` is the bytes counted exactly.
 */
export async function injectedTokens(
  tx: Tx,
  sessionId: string,
  ids: readonly string[],
): Promise<{ tokens: number[]; tokenized: number }> {
  const rows = await tx<{ id: string; content: string | null; bytes: number; tokens: number | null }[]>`
    select id, bytes, tokens,
           case when tokens is null and sum(bytes) filter (where tokens is null) over (order by id) <= ${USAGE_TOKENIZED_BYTES}
                then content end as content
      from (select m.id, m.content, octet_length(m.content) as bytes, i.tokens
              from public.devai_memories m
              left join public.context_injections i on i.memory_id = m.id and i.owner_id = m.owner_id and i.session_id = ${sessionId}
             where m.id = any (${[...ids]}::uuid[])) r`;
  let tokenized = 0;
  const byId = new Map(rows.map((r) => {
    if (r.tokens !== null) return [r.id, r.tokens];
    if (r.content === null) return [r.id, Math.ceil(r.bytes / BYTES_PER_TOKEN)];
    tokenized += r.bytes;
    return [r.id, countTokens(bulletText(r.content))];
  }));
  return { tokens: ids.map((id) => byId.get(id) ?? 0), tokenized };
}

export async function reportUsage(deps: { sql: Sql }, caller: Caller, body: UsageRequest): Promise<UsageResponse> {
  const cited = [...new Set(body.cited.map((id) => id.toLowerCase()))];
  const retrieved = [...new Set([...body.retrieved.map((id) => id.toLowerCase()), ...cited])];
  const row = await withTenant(deps.sql, caller, async (tx) => {
    const { tokens } = await injectedTokens(tx, body.session_id, retrieved);
    const [r] = await tx<
      Omit<UsageResponse, "session_id">[]
    >`
      select * from public.record_memory_usage(${body.session_id}, ${retrieved}::uuid[], ${cited}::uuid[], ${tokens}::int[])`;
    return r!;
  });
  return { session_id: body.session_id, ...row };
}
