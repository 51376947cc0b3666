// Provenance for explain (GET /memory/{id}/explain): the episodes a fact was derived from
// (derived_from edges: fact → episode) and the entities it mentions. In the caller's tenant
// transaction, so RLS limits both to the tenant. docs/graph.md#explain.
import type { Tx } from "../db.ts";
import { isoDates } from "./memory-row.ts";

/** A fact rarely has more sources than this; more would be a data problem, not provenance. */
const MAX_SOURCES = 50;
const MAX_ENTITIES = 100;

export interface SourceEpisode {
  id: string;
  session_id: string | null;
  seq: number | null;
  role: string | null;
  /** When the message was sent (the episode's valid_from). */
  at: string;
  content: string;
  state: "active" | "soft_deleted";
  /** Confidence of the derived_from edge (rules 1, a model 0.8). */
  confidence: number;
}

export interface LinkedEntity {
  id: string;
  canonical_name: string;
  entity_type: string;
  mention: string;
  confidence: number;
  source: string;
}

/**
 * The episodes memory `id` was derived from, in the order they were said: those of its first
 * MAX_SOURCES derived_from edges (memory_relations_derived_from), so a fact re-derived by many
 * sessions costs MAX_SOURCES edges, not all of them.
 */
export async function sourceEpisodes(tx: Tx, id: string): Promise<SourceEpisode[]> {
  const rows = await tx`
    select m.id, m.session_id, (m.metadata ->> 'seq')::int as seq, m.metadata ->> 'role' as role, m.valid_from as at,
           m.content, m.state, r.confidence
      from (select r.to_id, r.confidence from public.memory_relations r
             where r.from_id = ${id} and r.relation_type = 'derived_from'
             order by r.created_at, r.id
             limit ${MAX_SOURCES}) r
      join public.devai_memories m on m.id = r.to_id
     order by m.valid_from, (m.metadata ->> 'seq')::int, m.id`;
  return rows.map((r) => ({ ...isoDates(r), confidence: Number(r.confidence) }) as unknown as SourceEpisode);
}

/** The entities memory `id` mentions, most certain first. */
export async function linkedEntities(tx: Tx, id: string): Promise<LinkedEntity[]> {
  const rows = await tx`
    select e.id, e.canonical_name, e.entity_type, l.mention, l.confidence, l.source
      from public.memory_entity_links l
      join public.memory_entities e on e.id = l.entity_id
     where l.memory_id = ${id}
     order by l.confidence desc, e.canonical_name, e.id
     limit ${MAX_ENTITIES}`;
  return rows.map((r) => ({ ...r, confidence: Number(r.confidence) }) as unknown as LinkedEntity);
}
