// One page of the tenant's memories, newest first (keyset pagination: created_at desc, id desc),
// read in the order of the (owner_id, created_at desc, id desc) index and stopping at the limit.
//
// Under RLS the planner cannot see the tenant and plans for the average one. Where most tenants are
// small that is a few dozen memories, and the page was planned as a bitmap scan of all the
// tenant's memories and a sort: for a tenant of 20,000 among 2,000 tenants of 40, 20,000 rows read
// (36 ms) for a page of 50. Bitmap scans and sorts are switched off for the page's statement (for
// its transaction, which holds nothing else), so the index's order is the plan whatever the tenant's
// size: a page reads its rows, plus those its filters skip (tests/memory_list_page.test.ts).
//
// With as_of, whether a memory was held is known only row by row (public.memory_at, a history
// lookup each): where few memories were held then, a page called it on every memory of the tenant
// recorded by then (20,000 calls, 0.2 s, for an empty page). A page examines at most
// AS_OF_ROWS_PER_PAGE memories: when that stops it, it may hold fewer than `limit` and its cursor
// continues after the last memory examined (docs/graph.md#as-of).
import type { Tx } from "../db.ts";
import { projectScope } from "../schemas.ts";
import { asOfColumns, asOfValue, recordedBy } from "./as-of.ts";
import { cursorAfter, type CursorKey, cursorText, fromCursor, type ListCursor } from "./cursor.ts";
import { memoryColumns } from "./memory-row.ts";
import type { ListQuery } from "./schemas.ts";

/** With as_of, a page calls memory_at on at most this many memories (more than a page's limit). */
export const AS_OF_ROWS_PER_PAGE = 1000;

const KEY: CursorKey = { ts: "m.created_at", id: "m.id" };

export interface ListPage {
  /** limit + 1 rows at most (so the caller knows whether there is a next page), with `cursor_ts`. */
  rows: Record<string, unknown>[];
  /** With as_of, when the page stopped at AS_OF_ROWS_PER_PAGE: the last memory it examined. */
  examinedTo?: ListCursor;
}

/** One page: the memories after `after`, newest first, that pass q's filters (held at q.as_of). */
export async function listPage(
  tx: Tx,
  namespaceRoot: string,
  q: ListQuery,
  after: ListCursor | undefined,
): Promise<ListPage> {
  const inOrder = inIndexOrder(tx);
  const at = asOfValue(tx, q.as_of);
  // The filters on what no API write changes in place (when it was recorded, its scope, its type),
  // and the cursor: on the row, as of any instant.
  const fixed = tx`
           ${q.as_of ? tx`and m.created_at <= ${at}` : tx``}
           ${q.namespace_prefix ? tx`and (m.namespace || '/') ^@ ${q.namespace_prefix + "/"}` : tx``}
           ${q.project ? tx`and (m.namespace || '/') ^@ ${projectScope(namespaceRoot, q.project) + "/"}` : tx``}
           ${q.memory_type ? tx`and m.memory_type = ${q.memory_type}` : tx``}
           ${after ? tx`and ${fromCursor(tx, KEY, after)}` : tx``}`;
  // The filters on what pin, unpin, confirm, a duplicate made user-stated and a category carried
  // over change in place: with as_of, on the values held then (memory_at's `a`), not today's
  // (a memory pinned then and unpinned since was missing from as_of=<then>&pinned=true).
  const f = (column: string) => tx.unsafe(`${q.as_of ? "a" : "m"}.${column}`);
  const changing = tx`
           ${q.state !== "all" && !q.as_of ? tx`and m.state = ${q.state}` : tx``}
           ${q.is_valid !== undefined ? tx`and m.is_valid = ${q.is_valid}` : tx``}
           ${q.pinned !== undefined ? tx`and ${f("pinned")} = ${q.pinned}` : tx``}
           ${q.importance_min !== undefined ? tx`and ${f("importance")} >= ${q.importance_min}` : tx``}
           ${q.priority ? tx`and ${f("priority")} = ${q.priority}` : tx``}
           ${q.source ? tx`and ${f("source")} = ${q.source}` : tx``}
           ${q.category ? tx`and ${f("metadata")} ->> 'category' = ${q.category}` : tx``}`;
  // With as_of: the last memory this page may examine, read in index order without memory_at (so
  // on the fixed filters only).
  const bound = q.as_of
    ? (await tx<{ cursor_ts: string; id: string }[]>`
        select ${cursorText(tx, KEY)}, m.id
          from public.devai_memories m
         where true ${fixed}
         order by m.created_at desc, m.id desc
         offset ${AS_OF_ROWS_PER_PAGE - 1} limit 1`)[0]
    : undefined;
  // With as_of: the memories held at that instant, as they were then (as-of.ts).
  const rows = await tx`
        select ${memoryColumns(tx, "m")}, ${asOfColumns(tx, q.as_of)}, ${cursorText(tx, KEY)}
          from public.devai_memories m
          ${recordedBy(tx, q.as_of)}
         where true ${fixed} ${changing}
           ${bound ? tx`and ${fromCursor(tx, KEY, { ts: bound.cursor_ts, id: bound.id }, ">=")}` : tx``}
         order by m.created_at desc, m.id desc
         limit ${q.limit + 1}`;
  await inOrder;
  return { rows, ...(bound ? { examinedTo: { ts: bound.cursor_ts, id: bound.id } } : {}) };
}

/**
 * The cursor after a page: after its last row when there is a next page, else after the last
 * memory an as-of page examined, else none.
 */
export function nextCursor(page: ListPage, limit: number): ListCursor | null {
  return cursorAfter(page.rows, limit) ?? page.examinedTo ?? null;
}

/**
 * A page read in the order of the tenant's index, never a sort of all its rows (list pages, the
 * export's pages). Sent before the page's statement, on the same connection and without waiting
 * for its answer: in effect when the page is planned, at no round trip of its own. Postgres 17
 * switches a plan node off by adding a huge cost to it; were a sort ever planned anyway, that cost
 * would also trigger JIT compilation (100+ ms), so JIT is off for the page too.
 */
export function inIndexOrder(tx: Tx): Promise<unknown> {
  return tx`
    select set_config('enable_bitmapscan', 'off', true), set_config('enable_sort', 'off', true),
           set_config('jit', 'off', true)`.execute();
}
