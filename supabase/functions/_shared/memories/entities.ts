// GET /memory/entities and GET /memory/entities/{id}: the tenant's entities (RLS), found by name,
// alias or summary words, and one entity's profile: what it is, the facts that mention it (newest
// first) and the timeline of episodes that named it. Search text is plain text: it becomes an
// entity key (public.memory_entity_key) matched with = / starts_with / strpos and a
// websearch_to_tsquery, never a LIKE pattern or raw tsquery syntax. docs/graph.md#entities.
import type { Tx } from "../db.ts";
import { isoDates, memoryColumns } from "./memory-row.ts";
import type { EntityListQuery, Memory } from "./schemas.ts";

/** The facts and the timeline of a profile show at most this many rows each. */
export const PROFILE_ROWS = 50;

export interface Entity {
  id: string;
  canonical_name: string;
  entity_type: string;
  aliases: string[];
  summary: string | null;
  mention_count: number;
  first_seen_at: string;
  last_seen_at: string;
  attributes: Record<string, unknown>;
  embedding_model: string | null;
  created_at: string;
  updated_at: string;
}

export interface EntityListItem extends Entity {
  /** How q matched: the canonical name, an alias, a name prefix, inside the name, or the summary's words. */
  matched: "name" | "alias" | "prefix" | "contains" | "summary" | null;
}

export interface EntityProfile {
  entity: Entity;
  /** Valid, active memories (not episodes) that mention it, newest first (valid_from). */
  facts: (Memory & { mention: string; link_confidence: number; link_source: string })[];
  /** Episodes that named it, oldest first (the latest PROFILE_ROWS). */
  timeline: {
    id: string;
    session_id: string | null;
    seq: number | null;
    role: string | null;
    at: string;
    content: string;
    mention: string;
  }[];
}

const ENTITY_COLUMNS = `e.id, e.canonical_name, e.entity_type, e.aliases, e.summary, e.mention_count, e.first_seen_at,
  e.last_seen_at, e.attributes, e.embedding_model, e.created_at, e.updated_at`;

export async function listEntities(tx: Tx, q: EntityListQuery): Promise<EntityListItem[]> {
  const text = q.q ?? null;
  const rows = await tx`
    with k as (
      select public.memory_entity_key(${text ?? ""}) as key,
             websearch_to_tsquery('english', ${text ?? ""}) as words,
             auth.uid()::text || '|' || public.memory_entity_key(${text ?? ""}) as lookup
    ),
    found as (
      select ${tx.unsafe(ENTITY_COLUMNS)},
             case when ${text}::text is null then null
                  when k.key <> '' and e.normalized_name = k.key then 'name'
                  when k.key <> '' and cardinality(e.alias_keys) > 0 and e.alias_keys && array[k.lookup] then 'alias'
                  when k.key <> '' and starts_with(e.normalized_name, k.key) then 'prefix'
                  when k.key <> '' and strpos(e.normalized_name, k.key) > 0 then 'contains'
                  when e.summary is not null and to_tsvector('english', e.summary) @@ k.words then 'summary'
             end as matched
        from public.memory_entities e cross join k
       where ${q.type ?? null}::text is null or e.entity_type = ${q.type ?? null}
    )
    select * from found f
     where ${text}::text is null or f.matched is not null
     order by array_position(array['name', 'alias', 'prefix', 'contains', 'summary'], f.matched), f.mention_count desc, f.id
     limit ${q.limit}`;
  return rows.map((r) => isoDates(r) as unknown as EntityListItem);
}

export async function entityProfile(tx: Tx, id: string): Promise<EntityProfile | undefined> {
  const [entity] = await tx`select ${tx.unsafe(ENTITY_COLUMNS)} from public.memory_entities e where e.id = ${id}`;
  if (!entity) return undefined;
  const facts = await tx`
    select ${memoryColumns(tx, "m")}, l.mention, l.confidence as link_confidence, l.source as link_source
      from public.memory_entity_links l
      join public.devai_memories m on m.id = l.memory_id
     where l.entity_id = ${id} and m.source is distinct from 'conversation' and m.is_valid and m.state = 'active'
     order by m.valid_from desc, m.id desc
     limit ${PROFILE_ROWS}`;
  const timeline = await tx`
    select m.id, m.session_id, (m.metadata ->> 'seq')::int as seq, m.metadata ->> 'role' as role, m.valid_from as at,
           m.content, l.mention
      from public.memory_entity_links l
      join public.devai_memories m on m.id = l.memory_id
     where l.entity_id = ${id} and m.source = 'conversation' and m.state = 'active'
     order by m.valid_from desc, (m.metadata ->> 'seq')::int desc, m.id desc
     limit ${PROFILE_ROWS}`;
  return {
    entity: isoDates(entity) as unknown as Entity,
    facts: facts.map((f) => isoDates(f) as unknown as EntityProfile["facts"][number]),
    timeline: timeline.reverse().map((t) => isoDates(t) as unknown as EntityProfile["timeline"][number]),
  };
}
