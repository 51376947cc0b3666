// explain_fact (seed 003): why a memory is what it is. Its supersede chain in both directions
// (what it replaced, what replaced it; each link's memory carries its validity interval,
// valid_from / valid_until), its typed edges with the other memory's content, where it came from
// (source, session, the episodes of its derived_from edges: provenance.ts), the entities it
// mentions, its history in brief and its decay outlook.
// Every query runs in the caller's tenant transaction, so RLS limits all of it to the tenant.
import type { Tx } from "../db.ts";
import { isoDates, memoryColumns } from "./memory-row.ts";
import { linkedEntities, type LinkedEntity, type SourceEpisode, sourceEpisodes } from "./provenance.ts";
import type { Memory } from "./schemas.ts";
import { decaySettings } from "./settings.ts";
import { daysUntilPrune, predictStrength } from "./weak.ts";

/** A chain longer than this is a data problem, not history; it also guards against cycles. */
const MAX_CHAIN = 50;
const MAX_RELATIONS = 100;

export interface ChainLink {
  depth: number;
  memory: Memory;
}

export interface ExplainedRelation {
  id: string;
  relation_type: string;
  direction: "outgoing" | "incoming";
  strength: number;
  confidence: number;
  valid_from: string;
  valid_until: string | null;
  evidence: Record<string, unknown>[];
  created_at: string;
  other: Pick<Memory, "id" | "content" | "namespace" | "memory_type" | "is_valid" | "state">;
}

export interface Explanation {
  memory: Memory;
  /** Older memories this one replaced (depth 1 = replaced directly), oldest last. */
  supersedes: ChainLink[];
  /** Newer memories that replaced this one, in order; the last is the current version. */
  superseded_by: ChainLink[];
  current_id: string;
  relations: ExplainedRelation[];
  source: {
    source: string | null;
    session_id: string | null;
    created_at: string;
    actor: string | null;
    derived_from: string[];
    /** The episodes behind derived_from, in the order they were said. */
    episodes: SourceEpisode[];
  };
  entities: LinkedEntity[];
  history: {
    total: number;
    by_event: Record<string, number>;
    first_at: string | null;
    last_at: string | null;
    recent: { event: string; actor: string | null; ts: string }[];
  };
  decay: {
    protected: boolean;
    reason: "pinned" | "highest_priority" | "episode" | null;
    predicted_strength: number;
    days_until_prune: number | null;
  };
}

const toMemory = (row: Record<string, unknown>) => isoDates(row) as unknown as Memory;

export async function explainMemory(tx: Tx, id: string, now: Date): Promise<Explanation | undefined> {
  const [row] = await tx`select ${memoryColumns(tx, "m")} from public.devai_memories m where m.id = ${id}`;
  if (!row) return undefined;
  const memory = toMemory(row);

  const newer = await tx`
    with recursive chain (id, depth, seen) as (
      select m.superseded_by, 1, array[m.id]
        from public.devai_memories m where m.id = ${id} and m.superseded_by is not null
      union all
      select m.superseded_by, c.depth + 1, c.seen || m.id
        from chain c join public.devai_memories m on m.id = c.id
       where m.superseded_by is not null and m.superseded_by <> all (c.seen || m.id) and c.depth < ${MAX_CHAIN}
    )
    select c.depth, ${memoryColumns(tx, "m")}
      from chain c join public.devai_memories m on m.id = c.id
     order by c.depth`;

  const older = await tx`
    with recursive chain (id, depth, seen) as (
      select m.id, 1, array[${id}::uuid, m.id]
        from public.devai_memories m where m.superseded_by = ${id}
      union all
      select m.id, c.depth + 1, c.seen || m.id
        from chain c join public.devai_memories m on m.superseded_by = c.id
       where m.id <> all (c.seen) and c.depth < ${MAX_CHAIN}
    )
    select c.depth, ${memoryColumns(tx, "m")}
      from chain c join public.devai_memories m on m.id = c.id
     order by c.depth, m.created_at desc, m.id`;

  const relations = await tx`
    select r.id, r.relation_type, r.strength, r.confidence, r.valid_from, r.valid_until, r.evidence, r.created_at,
           case when r.from_id = ${id} then 'outgoing' else 'incoming' end as direction,
           o.id as other_id, o.content as other_content, o.namespace as other_namespace,
           o.memory_type as other_memory_type, o.is_valid as other_is_valid, o.state as other_state
      from ((select * from public.memory_relations x where x.from_id = ${id}
              order by x.created_at desc, x.id desc limit ${MAX_RELATIONS})
            union all
            (select * from public.memory_relations x where x.to_id = ${id}
              order by x.created_at desc, x.id desc limit ${MAX_RELATIONS})) r
      join public.devai_memories o on o.id = case when r.from_id = ${id} then r.to_id else r.from_id end
     order by r.created_at desc, r.id desc
     limit ${MAX_RELATIONS}`;

  const byEvent = await tx<{ event: string; n: number; first_at: Date; last_at: Date }[]>`
    select event, count(*)::int as n, min(ts) as first_at, max(ts) as last_at
      from public.memory_history where memory_id = ${id} group by event`;
  const recent = await tx<{ event: string; actor: string | null; ts: Date }[]>`
    select event, actor, ts from public.memory_history where memory_id = ${id} order by ts desc, seq desc nulls last, id desc limit 5`;
  const [added] = await tx<{ actor: string | null }[]>`
    select actor from public.memory_history where memory_id = ${id} and event = 'ADD' order by ts limit 1`;

  const link = (r: Record<string, unknown>): ChainLink => {
    const { depth, ...rest } = r;
    return { depth: Number(depth), memory: toMemory(rest) };
  };
  const superseded_by = newer.map(link);
  const explained: ExplainedRelation[] = relations.map((r) => ({
    id: r.id as string,
    relation_type: r.relation_type as string,
    direction: r.direction as "outgoing" | "incoming",
    strength: Number(r.strength),
    confidence: Number(r.confidence),
    valid_from: (r.valid_from as Date).toISOString(),
    valid_until: r.valid_until ? (r.valid_until as Date).toISOString() : null,
    evidence: r.evidence as Record<string, unknown>[],
    created_at: (r.created_at as Date).toISOString(),
    other: {
      id: r.other_id as string,
      content: r.other_content as string,
      namespace: r.other_namespace as string,
      memory_type: r.other_memory_type as Memory["memory_type"],
      is_valid: r.other_is_valid as boolean,
      state: r.other_state as Memory["state"],
    },
  }));

  const episodes = await sourceEpisodes(tx, id);
  const firsts = byEvent.map((e) => e.first_at.getTime());
  const lasts = byEvent.map((e) => e.last_at.getTime());
  // Raw episodes never decay (TTL and purge still apply: docs/graph.md#episodes).
  const protectedBy = memory.pinned
    ? "pinned"
    : memory.priority === "highest"
    ? "highest_priority"
    : memory.source === "conversation"
    ? "episode"
    : null;
  const lastAccess = new Date(memory.last_accessed_at);
  const settings = await decaySettings(tx);

  return {
    memory,
    supersedes: older.map(link),
    superseded_by,
    current_id: superseded_by.at(-1)?.memory.id ?? memory.id,
    relations: explained,
    source: {
      source: memory.source,
      session_id: memory.session_id,
      created_at: memory.created_at,
      actor: added?.actor ?? null,
      // the same edges as episodes (not the newest relations, where newer edges of other types
      // could leave no derived_from one)
      derived_from: episodes.map((e) => e.id),
      episodes,
    },
    entities: await linkedEntities(tx, id),
    history: {
      total: byEvent.reduce((s, e) => s + e.n, 0),
      by_event: Object.fromEntries(byEvent.map((e) => [e.event, e.n])),
      first_at: firsts.length ? new Date(Math.min(...firsts)).toISOString() : null,
      last_at: lasts.length ? new Date(Math.max(...lasts)).toISOString() : null,
      recent: recent.map((h) => ({ event: h.event, actor: h.actor, ts: h.ts.toISOString() })),
    },
    decay: {
      protected: protectedBy !== null,
      reason: protectedBy,
      predicted_strength: protectedBy
        ? memory.strength
        : predictStrength(memory.base_strength, lastAccess, now, settings),
      days_until_prune: protectedBy ? null : daysUntilPrune(memory.base_strength, lastAccess, now, settings),
    },
  };
}
