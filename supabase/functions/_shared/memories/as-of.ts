// as_of for GET /memory and GET /memory/{id}: what the tenant's memory held at an instant, by the
// one as-of rule, public.memory_at (recorded by then, validity not closed, valid and active after
// its last change then; content, validity and supersede as they were then, from the history).
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

/** The as-of columns a query selects beside memoryColumns (null without as_of). */
export function asOfColumns(tx: Tx, asOf: string | undefined) {
  return asOf
    ? tx`a.held as as_of_held, a.content as as_of_content, a.is_valid as as_of_is_valid, a.state as as_of_state,
         a.superseded_by as as_of_superseded_by`
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
  const { as_of_held, as_of_content, as_of_is_valid, as_of_state, as_of_superseded_by, ...memory } = row;
  if (as_of_held === null || as_of_held === undefined) return memory;
  return {
    ...memory,
    content: as_of_content,
    is_valid: as_of_is_valid,
    state: as_of_state,
    superseded_by: as_of_superseded_by,
  };
}
