// One page of the tenant's memories, newest first (keyset pagination: created_at desc, id desc),
// read in the order of the (owner_id, created_at desc, id desc) index and stopping at the limit.
//
// Under RLS the planner cannot see the tenant and plans for the average one. Where most tenants are
// small that is a few dozen memories, and the page was planned as a bitmap scan of all the
// tenant's memories and a sort: for a tenant of 20,000 among 2,000 tenants of 40, 20,000 rows read
// (36 ms) for a page of 50. Bitmap scans and sorts are switched off for the page's statement (for
// its transaction, which holds nothing else), so the index's order is the plan whatever the tenant's
// size: a page reads its rows, plus those its filters skip (tests/memory_list_page.test.ts).
import type { Tx } from "../db.ts";
import { projectScope } from "../schemas.ts";
import { asOfColumns, recordedBy } from "./as-of.ts";
import type { ListCursor } from "./cursor.ts";
import { memoryColumns } from "./memory-row.ts";
import type { ListQuery } from "./schemas.ts";

/** The page's rows (limit + 1, so the caller knows whether there is a next page), with `cursor_ts`. */
export async function listPage(
  tx: Tx,
  namespaceRoot: string,
  q: ListQuery,
  after: ListCursor | undefined,
): Promise<Record<string, unknown>[]> {
  const inOrder = inIndexOrder(tx);
  // The cursor's timestamp is bound as text: bound as a timestamp, postgres.js would pass it
  // through a JS Date and drop the microseconds that order rows of the same millisecond.
  // With as_of: the memories held at that instant, as they were then (as-of.ts).
  const rows = tx`
        select ${memoryColumns(tx, "m")}, ${asOfColumns(tx, q.as_of)},
               to_char(m.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') as cursor_ts
          from public.devai_memories m
          ${recordedBy(tx, q.as_of)}
         where true
           ${q.namespace_prefix ? tx`and (m.namespace || '/') ^@ ${q.namespace_prefix + "/"}` : tx``}
           ${q.project ? tx`and (m.namespace || '/') ^@ ${projectScope(namespaceRoot, q.project) + "/"}` : tx``}
           ${q.memory_type ? tx`and m.memory_type = ${q.memory_type}` : tx``}
           ${q.state !== "all" && !q.as_of ? tx`and m.state = ${q.state}` : tx``}
           ${q.is_valid !== undefined ? tx`and m.is_valid = ${q.is_valid}` : tx``}
           ${q.pinned !== undefined ? tx`and m.pinned = ${q.pinned}` : tx``}
           ${q.importance_min !== undefined ? tx`and m.importance >= ${q.importance_min}` : tx``}
           ${q.priority ? tx`and m.priority = ${q.priority}` : tx``}
           ${q.source ? tx`and m.source = ${q.source}` : tx``}
           ${q.category ? tx`and m.metadata ->> 'category' = ${q.category}` : tx``}
           ${
    after ? tx`and (m.created_at, m.id) < (${after.ts}::text::timestamp at time zone 'UTC', ${after.id}::uuid)` : tx``
  }
         order by m.created_at desc, m.id desc
         limit ${q.limit + 1}`.execute();
  await inOrder;
  return await rows;
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
