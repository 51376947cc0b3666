// Entities and memory ↔ entity links (SQL side: migrations/20261124300100_entities_and_sessions.sql).
// The one way a memory gets linked to entities is public.link_memory_entities, called here inside
// the caller's tenant transaction (RLS: names resolve only among the tenant's own entities, a link
// can only join the tenant's memory and entity). Rules find mentions in every memory written
// (entity-rules.ts); consolidation adds the ones the model names. See docs/graph.md#entities.
import { z } from "zod";
import type { Tx } from "./db.ts";
import { extractEntityMentions } from "./entity-rules.ts";

/** Seed 003's entity types, then the coding ones. The database's memory_entities_type_check has the same list. */
export const ENTITY_TYPES = [
  "person",
  "project",
  "organization",
  "place",
  "concept",
  "tool",
  "file",
  "package",
  "service",
  "function",
  "command",
  "error",
] as const;
export type EntityType = typeof ENTITY_TYPES[number];
export const entityType = z.enum(ENTITY_TYPES);

/** A named thing in a text: its canonical name, its type, and the words that named it. */
export interface EntityMention {
  name: string;
  type: EntityType;
  mention: string;
}

/** An entity as a model names it (consolidation output): validated before it reaches the database. */
export const EntityMentionSchema = z.object({
  name: z.string().trim().min(1).max(200),
  type: entityType,
});

export interface EntityLink extends EntityMention {
  memoryId: string;
  confidence?: number;
  source?: "rules" | "llm" | "api";
}

/** How many links public.link_memory_entities takes in one call (it refuses more). */
export const LINKS_PER_CALL = 500;

/**
 * Links memories to entities (resolving or creating them); returns how many links are new. A dense
 * batch (50 episodes of 24 mentions each) has more links than one call takes: it is sent in calls
 * of at most LINKS_PER_CALL, every link kept.
 */
export async function linkEntities(tx: Tx, links: readonly EntityLink[]): Promise<number> {
  let linked = 0;
  for (let start = 0; start < links.length; start += LINKS_PER_CALL) {
    const payload = links.slice(start, start + LINKS_PER_CALL).map((l) => ({
      memory_id: l.memoryId,
      name: l.name,
      type: l.type,
      mention: l.mention,
      confidence: l.confidence ?? 1,
      source: l.source ?? "rules",
    }));
    const [row] = await tx<{ n: number }[]>`select public.link_memory_entities(${tx.json(payload as never)}) as n`;
    linked += row?.n ?? 0;
  }
  return linked;
}

/** The rule-found mentions of each memory's content, linked (one statement for all of them). */
export async function linkEntitiesByRules(
  tx: Tx,
  memories: readonly { id: string; content: string }[],
): Promise<number> {
  const links: EntityLink[] = memories.flatMap((m) =>
    extractEntityMentions(m.content).map((e) => ({ ...e, memoryId: m.id, source: "rules" as const }))
  );
  return await linkEntities(tx, links);
}
