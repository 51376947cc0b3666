// Reading memories: list with filters, what decays soon, stats, one memory, its history and its
// explanation (the export streams: memory-export.ts). Each is one tenant transaction (RLS):
// another tenant's id is simply not found. list, get and explain read from the read replica when
// one is configured (get and explain look on the primary before answering "not found":
// docs/operations.md#read-replicas).
import { assertKnownCategory } from "../categories.ts";
import { type TenantContext, withTenant } from "../db.ts";
import { HttpError } from "../http.ts";
import { asOfColumns, memoryAsOf, recordedBy } from "../memories/as-of.ts";
import { listPage, nextCursor } from "../memories/list-page.ts";
import { PROPOSAL_EVENTS } from "../proposals.ts";
import {
  assertNotHistoryRow,
  cursorAfter,
  cursorText,
  decodeCursor,
  encodeCursor,
  invalidCursor,
} from "../memories/cursor.ts";
import { explainMemory, type Explanation } from "../memories/explain.ts";
import { isoDates, memoryColumns } from "../memories/memory-row.ts";
import { notFound, toMemory } from "../memories/record.ts";
import type {
  HistoryEntry,
  HistoryQuery,
  ListQuery,
  ListResponse,
  Memory,
  MemoryQuery,
  StatsQuery,
  WeakQuery,
} from "../memories/schemas.ts";
import { decaySettings } from "../memories/settings.ts";
import { type MemoryStats, memoryStats } from "../memories/stats.ts";
import { daysSince, daysUntilPrune, predictStrength } from "../memories/weak.ts";
import { readOwnWrite, readPoolOf, type ServiceDeps } from "./deps.ts";

/** A page of the tenant's memories, newest first (keyset pagination: created_at desc, id desc). */
export async function listMemories(
  deps: ServiceDeps,
  tenant: TenantContext,
  q: ListQuery,
): Promise<ListResponse & { as_of?: string }> {
  const { config } = deps;
  const sql = readPoolOf(deps);
  const after = q.cursor === undefined ? undefined : decodeCursor(q.cursor, "memories");
  const listed = await withTenant(sql, tenant, async (tx) => {
    // A category no memory can be filed under (remember refuses it) is a 400 naming the configured
    // ones, as remember's, not an empty page that reads as "none filed there".
    if (q.category) await assertKnownCategory(tx, q.category, ["category"]);
    if (after) await assertNotHistoryRow(tx, after);
    return await listPage(tx, config.namespaceRoot, q, after);
  });
  const page = listed.rows.slice(0, q.limit);
  const next = nextCursor(listed, q.limit);
  const next_cursor = next ? encodeCursor("memories", next) : null;
  return {
    memories: page.map(({ cursor_ts: _, ...m }) => toMemory(memoryAsOf(m))),
    next_cursor,
    ...(q.as_of ? { as_of: q.as_of } : {}),
  };
}

export interface WeakFact {
  memory: Memory;
  predicted_strength: number;
  days_since_access: number;
  days_until_prune: number | null;
}

export interface WeakFacts {
  decay_per_day: number;
  prune_threshold: number;
  as_of: string;
  memories: WeakFact[];
}

/** What decays soonest: valid, active memories that are not protected from decay, weakest first. */
export async function weakFacts(deps: ServiceDeps, tenant: TenantContext, q: WeakQuery): Promise<WeakFacts> {
  const now = deps.clock();
  const { rows, settings } = await withTenant(deps.sql, tenant, async (tx) => {
    const settings = await decaySettings(tx);
    const rows = await tx`
        select ${memoryColumns(tx, "m")}
          from public.devai_memories m
         where m.is_valid and m.state = 'active' and not m.pinned and m.priority <> 'highest'
           and m.source is distinct from 'conversation'
         order by public.memory_decayed_strength(m.base_strength, m.last_accessed_at, ${now}::timestamptz, ${settings.decayBase}::float8), m.id
         limit ${q.limit}`;
    return { rows, settings };
  });
  return {
    decay_per_day: settings.decayBase,
    prune_threshold: settings.pruneThreshold,
    as_of: now.toISOString(),
    memories: rows.map((r) => {
      const memory = toMemory(r);
      const last = new Date(memory.last_accessed_at);
      return {
        memory,
        predicted_strength: predictStrength(memory.base_strength, last, now, settings),
        days_since_access: daysSince(last, now),
        days_until_prune: daysUntilPrune(memory.base_strength, last, now, settings),
      };
    }),
  };
}

/** Counts by type, namespace, state, validity and pinned; relations and history. */
export async function stats(deps: ServiceDeps, tenant: TenantContext, q: StatsQuery): Promise<MemoryStats> {
  return await withTenant(deps.sql, tenant, (tx) => memoryStats(tx, q.top_namespaces, deps.embedder.model));
}

export type MemoryAt = { memory: Memory } | { memory: Memory; as_of: string; held: boolean };

/** One memory now, or as it was at q.as_of (with whether it was held then). */
export async function getMemory(
  deps: ServiceDeps,
  tenant: TenantContext,
  id: string,
  q: MemoryQuery,
): Promise<MemoryAt> {
  const row = await readOwnWrite(deps, async (sql) => {
    const [found] = await withTenant(
      sql,
      tenant,
      (tx) =>
        tx`select ${memoryColumns(tx, "m")}, ${asOfColumns(tx, q.as_of)}
             from public.devai_memories m ${recordedBy(tx, q.as_of, { held: false })} where m.id = ${id}`,
    );
    return found;
  });
  if (!row) {
    throw q.as_of
      ? new HttpError(404, "not_found", `memory ${id} not found, or not recorded yet at ${q.as_of}`)
      : notFound(id);
  }
  if (!q.as_of) return { memory: toMemory(row) };
  return { memory: toMemory(memoryAsOf(row)), as_of: q.as_of, held: row.as_of_held === true };
}

export interface MemoryHistory {
  memory_id: string;
  /** True when the memory itself is gone: its history rows outlive a purge. */
  purged: boolean;
  history: HistoryEntry[];
  /** Pass as `cursor` for the next (older) page; null on the last page. */
  next_cursor: string | null;
}

/**
 * A page of a memory's audit rows, newest first (keyset pagination: ts desc, seq desc, id desc, in
 * the order of the (memory_id, ts desc, seq desc nulls last, id desc) index). Rows written in one
 * transaction share its ts: their seq (the order they were written, migration 20261206100000)
 * orders them, so a memory's ADD lists below the LINK its request wrote after it, and a page
 * boundary among them skips and repeats none. Rows written before that migration have no seq
 * (read as 0, below every numbered one) and are told apart by id.
 */
export async function memoryHistory(
  deps: ServiceDeps,
  tenant: TenantContext,
  id: string,
  q: HistoryQuery,
): Promise<MemoryHistory> {
  const after = q.cursor === undefined ? undefined : decodeCursor(q.cursor, "history");
  const result = await withTenant(deps.sql, tenant, async (tx) => {
    // A history cursor names one of this memory's rows (they are never deleted): another memory's
    // cursor, or a list's, would answer a page that silently misses this memory's rows. Checked in
    // the statement that looks the memory up, which also reads the row's seq: the cursor carries
    // (ts, id), and rows of one transaction are paged in write order (seq, 0 for rows written
    // before it was kept).
    const cursorSeq = after
      ? tx`(select coalesce(c.seq, 0) from public.memory_history c where c.id = ${after.id} and c.memory_id = ${id})`
      : tx`0`;
    const [found] = await tx<{ exists: boolean; cursor_seq: string | null }[]>`
      select exists (select from public.devai_memories where id = ${id}) as exists, ${cursorSeq} as cursor_seq`;
    if (found!.cursor_seq === null) throw invalidCursor("history", `it names no audit row of memory ${id}`);
    const key = { ts: "ts", id: "id" };
    const older = after
      ? tx`and (ts, coalesce(seq, 0), id) < (${after.ts}::text::timestamp at time zone 'UTC',
               ${found!.cursor_seq}::bigint, ${after.id}::uuid)`
      : tx``;
    const history = await tx`
        select id, memory_id, event, old_ref, new_ref, actor, old_content, new_content, meta, ts, ${cursorText(tx, key)}
          from public.memory_history where memory_id = ${id}
           -- a proposal's decisions share the table under its id: that id was never a memory's
           and event <> all (${[...PROPOSAL_EVENTS]}::text[])
           ${older}
         order by ts desc, seq desc nulls last, id desc limit ${q.limit + 1}`;
    return { exists: found!.exists, history };
  });
  // History outlives a purged memory, so its rows alone are enough to answer.
  if (!result.exists && result.history.length === 0) throw notFound(id);
  const page = result.history.slice(0, q.limit);
  const next = cursorAfter(result.history, q.limit);
  return {
    memory_id: id,
    purged: !result.exists,
    history: page.map(({ cursor_ts: _, ...h }) => isoDates(h) as unknown as HistoryEntry),
    next_cursor: next ? encodeCursor("history", next) : null,
  };
}

/** Why a memory is what it is: supersede chain, typed edges, source episodes, entities, decay outlook. */
export async function explainFact(deps: ServiceDeps, tenant: TenantContext, id: string): Promise<Explanation> {
  const explanation = await readOwnWrite(
    deps,
    (sql) => withTenant(sql, tenant, (tx) => explainMemory(tx, id, deps.clock())),
  );
  if (!explanation) throw notFound(id);
  return explanation;
}
