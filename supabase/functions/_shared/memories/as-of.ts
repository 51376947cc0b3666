// as_of for GET /memory and GET /memory/{id}: what the tenant's memory held at an instant, by the
// one as-of rule, public.memory_at (recorded by then, validity not closed, valid and active after
// its last change then; content, validity, supersede, pin, importance, priority, source, metadata,
// scope and type as they were then, from the history).
// The list shows the memories held then; one memory is shown as it was then, with `held`.
// docs/graph.md#as-of.
import type { Sql, Tx } from "../db.ts";

type Row = Record<string, unknown>;

/**
 * The instant an as_of names, to the microsecond Postgres keeps. The API gives times to the
 * millisecond (a memory created at 07:31:18.194155 reads 07:31:18.194Z), so an as_of given to the
 * millisecond or coarser covers the whole of that millisecond: as of the created_at the API
 * reported, that memory is there. Sent as text (`::text::timestamptz`): postgres.js would turn a
 * timestamptz parameter into a JavaScript Date, which keeps milliseconds only.
 */
export function asOfInstant(asOf: string): string {
  const digits = /:\d{2}\.(\d+)/.exec(asOf)?.[1]?.length ?? 0;
  return digits > 3 ? asOf : new Date(Date.parse(asOf)).toISOString().replace(/Z$/, "999Z");
}

/** as_of as a query value (asOfInstant, sent as text), or null; the one place it is cast. */
export function asOfValue(q: Tx | Sql, asOf: string | null | undefined) {
  return q`${asOf ? asOfInstant(asOf) : null}::text::timestamptz`;
}

/** What memory_at answers of a memory as it was (every field its history snapshot records). */
const AS_OF_FIELDS = [
  "content",
  "is_valid",
  "state",
  "superseded_by",
  "namespace",
  "memory_type",
  "priority",
  "source",
  "importance",
  "pinned",
  "metadata",
] as const;

/** The as-of columns a query selects beside memoryColumns (null without as_of). */
export function asOfColumns(tx: Tx, asOf: string | undefined) {
  return asOf
    ? tx.unsafe(["a.held as as_of_held", ...AS_OF_FIELDS.map((f) => `a.${f} as as_of_${f}`)].join(", "))
    : tx`null::boolean as as_of_held`;
}

/**
 * The join that evaluates memory m at asOf (nothing without as_of): keeps the memories held then,
 * or with held: false every memory recorded by then. memory_at is never inlined (it sets its
 * search_path), so `held` alone is only known row by row: the plain `m.created_at <= asOf` beside
 * it (held implies it) lets the index on (owner_id, created_at) start at asOf instead of reading
 * every memory of the tenant recorded since.
 */
export function recordedBy(tx: Tx, asOf: string | undefined, opts: { held?: boolean } = {}) {
  if (!asOf) return tx``;
  const at = asOfValue(tx, asOf);
  return tx`join lateral public.memory_at(m, ${at}) a
              on m.created_at <= ${at} ${opts.held === false ? tx`` : tx`and a.held`}`;
}

/** The row as it was at as_of when the as-of columns say so; the as-of columns removed either way. */
export function memoryAsOf(row: Row): Row {
  const memory: Row = {};
  const then: Row = {};
  for (const [k, v] of Object.entries(row)) {
    if (k.startsWith("as_of_")) then[k.slice("as_of_".length)] = v;
    else memory[k] = v;
  }
  if (then.held === null || then.held === undefined) return memory;
  for (const f of AS_OF_FIELDS) memory[f] = then[f];
  return memory;
}
