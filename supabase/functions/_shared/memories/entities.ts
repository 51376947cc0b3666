// GET /memory/entities and GET /memory/entities/{id}: the tenant's entities (RLS), found by name,
// alias or summary words, and one entity's profile: what it is, the facts that mention it (newest
// first) and the timeline of episodes that named it. Search text is plain text: it becomes an
// entity key (public.memory_entity_key) and a websearch_to_tsquery, looked up through the
// tenant's own index entries (memory_search.entity_matches), never a LIKE pattern or raw tsquery
// syntax. docs/graph.md#entities.
import type { Tx } from "../db.ts";
import { HttpError } from "../http.ts";
import { decodeEntityCursor, encodeEntityCursor, invalidCursor } from "./cursor.ts";
import { inIndexOrder } from "./list-page.ts";
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

export interface EntityListPage {
  entities: EntityListItem[];
  /** Pass as `cursor` for the next page of the listing by mentions; null on its last page, and for a search (q). */
  next_cursor: string | null;
}

/**
 * The tenant's entities by mentions, a page at a time, or those q matches, best match first (its
 * best `limit`: a search has no next page). With q, candidates come from the tenant's own entries
 * of the name grams and summary lexemes q has (GIN index memory_entities_search_terms) and the
 * alias index, never from a read of every entity; how each matched is decided on its own columns.
 * docs/graph.md#entities.
 */
export async function listEntities(tx: Tx, q: EntityListQuery): Promise<EntityListPage> {
  const type = q.type ?? null;
  if (q.q === undefined) return await entitiesByMentions(tx, q);
  if (q.cursor !== undefined) {
    throw new HttpError(400, "invalid_request", "cursor pages the listing by mentions: a search (q) has one page", [
      { path: ["cursor"], message: "leave out q to page through every entity" },
    ]);
  }
  const matches = await tx<{ id: string; matched: string }[]>`
    select m.id, m.matched from memory_search.entity_matches(auth.uid(), ${q.q}, ${type}, ${q.limit}) m`;
  // Read by their ids, a statement of its own: joined to the lookup, whose row count the planner
  // cannot know, the rows were at times read by a scan of all the tenant's entities (3,111 rows
  // read for 5 matches, tests/entity_search_cost.test.ts, on a freshly analyzed table).
  const rows = await tx`
    select ${tx.unsafe(ENTITY_COLUMNS)} from public.memory_entities e where e.id = any (${
    matches.map((m) => m.id)
  }::uuid[])`;
  const byId = new Map(rows.map((r) => [r.id as string, r]));
  const entities = matches.flatMap((m) => {
    const r = byId.get(m.id);
    return r ? [{ ...isoDates(r), matched: m.matched } as unknown as EntityListItem] : [];
  });
  return { entities, next_cursor: null };
}

/**
 * A page of the listing by mentions (mention_count desc, id), after the cursor's entity. The cursor
 * must name one of the tenant's entities (RLS: another tenant's is as unknown as a made-up id, the
 * same 400) with at most the mentions it has now (entities are never deleted and their counts only
 * grow), and one this listing lists: with `type`, an entity of that type. A cursor of another
 * type's listing was a position in this one, and the page silently left out this type's entities
 * between the two walks' positions. A typed listing's cursor carries its type, which the listing
 * of every type refuses: its entity is a position there too, and the page went on as if the entities
 * of every type before it had been listed. Its own count places the page, not the entity's count now: an
 * entity mentioned since is not listed twice. One mentioned during the walk may rise past the
 * cursor and be missed, as a new entity is (docs/graph.md#entities).
 */
async function entitiesByMentions(tx: Tx, q: EntityListQuery): Promise<EntityListPage> {
  const type = q.type ?? null;
  const after = q.cursor === undefined ? undefined : decodeEntityCursor(q.cursor);
  if (after) {
    const [cursor] = await tx<{ entity_type: string }[]>`
      select entity_type from public.memory_entities where id = ${after.id} and mention_count >= ${after.mentions}`;
    if (!cursor) throw invalidCursor("entities");
    if (type !== null && cursor.entity_type !== type) {
      throw invalidCursor("entities", `its entity is not of type ${type}: it pages another listing`);
    }
    if (type === null && after.type !== undefined) {
      throw invalidCursor("entities", `it pages the listing of type ${after.type}: pass type=${after.type}`);
    }
  }
  // Read through memory_entities_by_mentions / _of_type_by_mentions (migration 20261205500100), a
  // statement for each listing: `type is null or entity_type = type` and the cursor as one `or`
  // had every page read and sort all the tenant's entities (50,000: 28 ms, 2,746 buffers). The
  // entities tied with the cursor's count and the ones after them are two index ranges, each read
  // only as far as the page, in index order (inIndexOrder: on fresh rows a bitmap scan of all the
  // ties after the cursor and a sort looked cheaper; tests/entity_listing_cost.test.ts).
  const inOrder = inIndexOrder(tx);
  const ofType = type === null ? tx`` : tx`and e.entity_type = ${type}`;
  const n = q.limit + 1;
  const rows = after
    ? await tx`
    select p.* from (
      (select ${tx.unsafe(ENTITY_COLUMNS)}, null as matched from public.memory_entities e
        where e.mention_count = ${after.mentions} and e.id > ${after.id} ${ofType}
        order by e.mention_count desc, e.id limit ${n})
      union all
      (select ${tx.unsafe(ENTITY_COLUMNS)}, null as matched from public.memory_entities e
        where e.mention_count < ${after.mentions} ${ofType}
        order by e.mention_count desc, e.id limit ${n})) p
     order by p.mention_count desc, p.id
     limit ${n}`
    : await tx`
    select ${tx.unsafe(ENTITY_COLUMNS)}, null as matched from public.memory_entities e
     where true ${ofType}
     order by e.mention_count desc, e.id
     limit ${n}`;
  await inOrder;
  const last = rows.length > q.limit ? rows[q.limit - 1] : undefined;
  return {
    entities: rows.slice(0, q.limit).map((r) => isoDates(r) as unknown as EntityListItem),
    next_cursor: last
      ? encodeEntityCursor({
        mentions: last.mention_count as number,
        id: last.id as string,
        ...(type === null ? {} : { type }),
      })
      : null,
  };
}

export async function entityProfile(tx: Tx, id: string): Promise<EntityProfile | undefined> {
  const [entity] = await tx`select ${tx.unsafe(ENTITY_COLUMNS)} from public.memory_entities e where e.id = ${id}`;
  if (!entity) return undefined;
  // Both read the entity's shown links in profile order from memory_entity_links_profile (a link
  // carries its memory's valid_from and where it shows, kept by trigger), only as many as they
  // return, and look each memory up by id (offset 0: never a join the planner could turn into a
  // read of the tenant). They are read in index order (list-page.ts inIndexOrder, for the rest of
  // the profile's transaction, which reads nothing else; no round trip of its own): the planner's
  // one other way to their order, taken on some statistics, is to read all the entity's links of
  // that kind and sort them. They have no ORDER BY of their own (a sort costed as disabled would
  // have them JIT-compiled at every call): the rows are put in order here. Migration
  // 20261128910000; tests/entity_profile_cost.test.ts.
  const inOrder = inIndexOrder(tx);
  const facts = await tx`
    select ${memoryColumns(tx, "m")}, l.mention, l.confidence as link_confidence, l.source as link_source
      from (select l.memory_id, l.mention, l.confidence, l.source
              from public.memory_entity_links l
             where l.entity_id = ${id} and l.profile_kind = 'fact'
             order by l.profile_at desc, l.memory_id desc
             limit ${PROFILE_ROWS}) l
     cross join lateral (select m.* from public.devai_memories m where m.id = l.memory_id offset 0) m`;
  // Episodes of one instant (a batch sent without `at`) go by seq, which no index holds: the
  // latest PROFILE_ROWS links and the rest of the last one's instant, the latest kept below.
  const timeline = await tx`
    select m.id, m.session_id, (m.metadata ->> 'seq')::int as seq, m.metadata ->> 'role' as role, l.profile_at as at,
           m.content, l.mention
      from (select l.memory_id, l.mention, l.profile_at
              from public.memory_entity_links l
             where l.entity_id = ${id} and l.profile_kind = 'episode'
             order by l.profile_at desc
             fetch first (${PROFILE_ROWS}) rows with ties) l
     cross join lateral (select m.id, m.session_id, m.metadata, m.content from public.devai_memories m
                          where m.id = l.memory_id offset 0) m`;
  await inOrder;
  // uuids compare in Postgres as their lower-case hex text does here.
  const order = (a: { at: Date; seq: number | null; id: string }, b: typeof a) =>
    a.at.getTime() - b.at.getTime() || (a.seq ?? 0) - (b.seq ?? 0) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  facts.sort((a, b) => order({ at: b.valid_from, seq: 0, id: b.id }, { at: a.valid_from, seq: 0, id: a.id }));
  timeline.sort((a, b) => order({ at: a.at, seq: a.seq, id: a.id }, { at: b.at, seq: b.seq, id: b.id }));
  return {
    entity: isoDates(entity) as unknown as Entity,
    facts: facts.map((f) => isoDates(f) as unknown as EntityProfile["facts"][number]),
    timeline: timeline.slice(-PROFILE_ROWS).map((t) => isoDates(t) as unknown as EntityProfile["timeline"][number]),
  };
}
