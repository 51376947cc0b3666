// Typed edges between memories of one tenant (public.memory_relations): the one statement every
// writer uses (dedup's links, episodes' temporal chain, consolidation's derived_from, causal
// inference). An edge that exists already is skipped by the unique (from, to, type) key, never
// duplicated or re-weighted; the trigger on memory_relations writes a LINK history row for each
// new edge. Directions and meanings: docs/graph.md#edges.
import type { Tx } from "./db.ts";

export const RELATION_TYPES = [
  "related_to",
  "supersedes",
  "derived_from",
  "contradicts",
  "temporal",
  "causal",
  "entity",
] as const;
export type RelationType = typeof RELATION_TYPES[number];

export interface GraphEdge {
  from: string;
  to: string;
  type: RelationType;
  /** 0-1: how closely the two are related (similarity for related_to; 1 for structural edges). */
  strength: number;
  /** 0-1: how sure the writer is the edge holds (1 for what the system knows, 0.7 for inferred causes). */
  confidence?: number;
  /** Why the edge exists: small JSON records (job id, the model's reason), at most 20. */
  evidence?: Record<string, unknown>[];
}

/** Writes the edges in one statement; returns how many were new. */
export async function insertEdges(tx: Tx, ownerId: string, edges: readonly GraphEdge[]): Promise<number> {
  if (edges.length === 0) return 0;
  const rows = edges.map((e) => ({
    owner_id: ownerId,
    from_id: e.from,
    to_id: e.to,
    relation_type: e.type,
    strength: e.strength,
    confidence: e.confidence ?? 1,
    evidence: (e.evidence ?? []).slice(0, 20),
  }));
  const inserted = await tx`
    insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength, confidence, evidence)
    select r.owner_id, r.from_id, r.to_id, r.relation_type, r.strength, r.confidence, r.evidence
      from json_to_recordset(${tx.json(rows as never)}::json)
        as r(owner_id uuid, from_id uuid, to_id uuid, relation_type text, strength real, confidence real, evidence jsonb)
    on conflict (from_id, to_id, relation_type) do nothing
    returning id`;
  return inserted.length;
}

/** An edge from the memory being written (dedup's links). */
export interface Edge {
  to: string;
  type: "related_to" | "supersedes" | "contradicts" | "derived_from";
  strength: number;
}

/**
 * Writes the edges from one memory in a single statement (≤ 2 ms per edge, bench/README.md), through
 * insertEdges: an edge that already exists is skipped, each new one gets a LINK history row. Returns
 * how many edges were new.
 */
export async function linkMemory(tx: Tx, ownerId: string, fromId: string, edges: readonly Edge[]): Promise<number> {
  return await insertEdges(
    tx,
    ownerId,
    edges.map((e) => ({ from: fromId, to: e.to, type: e.type, strength: e.strength })),
  );
}
