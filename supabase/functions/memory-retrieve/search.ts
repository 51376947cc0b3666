// What both modes of memory-retrieve share: the rows a search returns, the scopes it covers, the
// Server-Timing header and the one memory_events row each search records.
import type { Caller } from "../_shared/auth.ts";
import type { Tx } from "../_shared/db.ts";
import { projectScope } from "../_shared/schemas.ts";

/** A row of match_memories / query_memories as postgres.js returns it. */
export interface MatchRow {
  id: string;
  content: string;
  similarity: number;
  memory_type: "semantic" | "episodic" | "procedural";
  namespace: string;
  strength: number;
  priority: "highest" | "high" | "medium" | "low";
  importance: number;
  pinned: boolean;
  source: string | null;
  metadata: Record<string, unknown>;
  session_id: string | null;
  access_count: number;
  last_accessed_at: Date;
  created_at: Date;
  updated_at: Date;
  max_relation_strength: number | null;
}

export interface QueryRow extends MatchRow {
  category: string;
  category_context: "all" | "rag";
}

/** The scopes one retrieval searches (README "Scopes: where a memory goes"). */
export function retrievalScopes(root: string, project?: string): string[] {
  return [`${root}/global`, ...(project !== undefined ? [projectScope(root, project)] : []), `${root}/user`];
}

export function serverTiming(parts: Record<string, number>): Record<string, string> {
  return { "server-timing": Object.entries(parts).map(([k, v]) => `${k};dur=${v.toFixed(1)}`).join(", ") };
}

/** One memory_events row per search: node context, op search, best similarity. */
export async function recordSearch(
  tx: Tx,
  caller: Caller,
  threadId: string | null,
  rows: readonly { similarity: number }[],
  category: string | null,
  meta: Record<string, unknown>,
): Promise<void> {
  const best = rows.length > 0 ? Math.max(...rows.map((r) => r.similarity)) : null;
  await tx`
    insert into public.memory_events (owner_id, thread_id, node, op, status, category, sim, meta)
    values (${caller.tenantId}::uuid, ${threadId}, 'context', 'search', 'ok', ${category}, ${best},
            ${tx.json(meta as never)})`;
}
