// A read consumed a piece at a time that must still show one instant (the export, whose pages are
// written as the client takes them), without holding a snapshot while the client reads. It is
// staged: copied by ONE REPEATABLE READ transaction as the tenant, in statements of a bounded size
// that all read the snapshot of its first (one instant, held for as long as the copy takes:
// milliseconds to a minute, however slowly the client reads), then read from the copy a piece at a
// time, each piece in a short transaction of its own (docs/operations.md#exports).
//
// Pages read each as of their own instant saw the writes made between them (a forget in `history`
// of a memory `memories` showed active, 2-8 rows in five exports of 1,900 memories under four
// writers). Pages read in one REPEATABLE READ transaction held while the client read agreed, but a
// slow client held that snapshot ten minutes, and vacuum could remove no row version any tenant
// made meanwhile: another tenant's retrieval went from 10 to 70 ms (its rate-limit buckets and
// reinforced memories piled up dead versions). A copy holds back nothing: it is rows of its own.
//
// The copy lives until the reader has read it or goes away (its `return`), or asks for nothing for
// SNAPSHOT_IDLE_FACTOR statement timeouts (60 s by default), or has read SNAPSHOT_MAX_FACTOR
// statement timeouts in all (10 minutes): then it is deleted, the reader told (Staging.abandoned)
// and the next piece fails. A copy whose server went away is deleted by pg_cron
// (devai-export-rows-prune). Few are made at once (claimSnapshot): one a tenant, and a quarter of
// the pool for all tenants.
import { type Sql, type TenantContext, type Tx, withTenant } from "./db.ts";
import { timeoutMsOf } from "./db-pool.ts";
import { HttpError } from "./http.ts";

/**
 * How many of the pool's statement timeouts the copy waits for the reader's next ask (a timer):
 * env.ts bounds DB_STATEMENT_TIMEOUT_MS so that it fits in 2^31 - 1 ms (MAX_STATEMENT_TIMEOUT_MS).
 */
const SNAPSHOT_IDLE_FACTOR = 4;
/** How many of the pool's statement timeouts the copy may be read for in all. */
const SNAPSHOT_MAX_FACTOR = 40;
/**
 * How many of the pool's statement timeouts the copy may take in all (150 s by default; its
 * transaction's snapshot is held that long at most), each of its statements one at most. The one
 * statement of four timeouts (60 s) copied a tenant of 150,000 memories (359,985 rows) in 59-80 s
 * on a busy two-core machine: a 503 at that size, or less. Checked between two statements, so the
 * copy ends within one statement timeout past it. Not a timer: any statement timeout fits.
 */
export const COPY_FACTOR = 10;

/** How long a copy may wait for its reader's next ask, and be read in all (ms). */
export interface SnapshotBounds {
  idleMs: number;
  maxMs: number;
}

function snapshotBounds(sql: Sql): SnapshotBounds {
  const timeout = timeoutMsOf(sql);
  return { idleMs: SNAPSHOT_IDLE_FACTOR * timeout, maxMs: SNAPSHOT_MAX_FACTOR * timeout };
}

/** The copy's reader was too slow, or the copy went: the pieces after this are not read. */
export class SnapshotEndedError extends Error {
  override name = "SnapshotEndedError";
}

/** Seconds a refused reader is told to wait: an export of a few thousand memories takes about that. */
export const SNAPSHOT_RETRY_AFTER_SECONDS = 5;
/** The tenants holding a snapshot now, per pool. */
const held = new WeakMap<Sql, Set<string>>();

/**
 * A copy is the tenant's whole memory once more (on disk, till its reader is done) and its
 * statement the longest an export runs: a tenant starting nine exports would copy itself nine
 * times, and nine copies at once would take nine of the ten connections for that long. So a tenant
 * has one at a time (429; the database keeps one copy a tenant, public.memory_export_begin), and
 * all tenants together a quarter of the pool's connections, at least one (503). Returns the
 * release, which runs when the copy is deleted.
 */
function claimSnapshot(sql: Sql, tenantId: string): () => void {
  let tenants = held.get(sql);
  if (!tenants) held.set(sql, tenants = new Set());
  const retry = { "retry-after": String(SNAPSHOT_RETRY_AFTER_SECONDS) };
  if (tenants.has(tenantId)) {
    throw new HttpError(
      429,
      "export_running",
      "an export of this tenant is running: retry when it has ended",
      undefined,
      retry,
    );
  }
  if (tenants.size >= Math.max(1, Math.floor(sql.options.max / 4))) {
    throw new HttpError(
      503,
      "exports_busy",
      "as many exports as this server runs at once are running: retry",
      undefined,
      retry,
    );
  }
  tenants.add(tenantId);
  return () => tenants.delete(tenantId);
}

/** How a read is staged: its copy made (what its pieces check they read), and deleted. */
export interface Staging<C> {
  /**
   * Copies what the pieces read, in ONE transaction (REPEATABLE READ: one snapshot) as the tenant,
   * in statements each bounded by the statement timeout; past `deadline` (epoch ms) it stops.
   */
  stage(tx: Tx, deadline: number): Promise<C>;
  /** Deletes the copy. */
  drop(tx: Tx): Promise<unknown>;
  /**
   * Told when the copy is deleted because the reader stopped asking (its idle or longest bound),
   * while the reader is not reading: a stream ends itself then, rather than at the next ask, which
   * may never come (services/memory-export.ts).
   */
  abandoned?(why: string): void;
}

/** Runs one page's statements in a short transaction of its own, as the tenant. */
export type PageReader = <T>(page: (tx: Tx) => Promise<T>) => Promise<T>;

/**
 * The pieces `read` yields, each read when the caller asks for it, from a copy `staging` makes
 * first (on the primary: the copy is unlogged, no replica has it). A failure to copy (rate limit,
 * no connection, a statement timeout) is the first piece's.
 */
export async function* inStagedSnapshot<C, T>(
  sql: Sql,
  who: TenantContext,
  staging: Staging<C>,
  read: (staged: C, page: PageReader) => AsyncIterable<T>,
  bounds: SnapshotBounds = snapshotBounds(sql),
): AsyncGenerator<T> {
  const release = claimSnapshot(sql, who.tenantId);
  let ended: string | undefined;
  let dropped: Promise<void> | undefined;
  // The copy is deleted and the slot given back once, by whichever comes first: the reader's end,
  // or the timer of a reader that stopped asking.
  const end = (why: string) => {
    ended ??= why;
    dropped ??= withTenant(sql, who, staging.drop).then(() => {}, (err) => {
      // Left to devai-export-rows-prune; logged, so it is not silent here.
      console.error(JSON.stringify({ level: "error", msg: "export copy not deleted", error: String(err) }));
    }).finally(release);
    return dropped;
  };
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const deadline = Date.now() + COPY_FACTOR * timeoutMsOf(sql);
    const staged = await withTenant(sql, who, (tx) => staging.stage(tx, deadline), { repeatableRead: true }).catch(
      (err) => {
        dropped = Promise.resolve(release());
        throw err;
      },
    );
    const heldUntil = Date.now() + bounds.maxMs;
    const late = () => `held ${bounds.maxMs} ms, the longest a snapshot is held`;
    const page: PageReader = (fn) => {
      if (!ended && Date.now() >= heldUntil) void end(late());
      if (ended) return Promise.reject(new SnapshotEndedError(`the snapshot ended: ${ended}`));
      return withTenant(sql, who, fn);
    };
    for await (const piece of read(staged, page)) {
      const left = heldUntil - Date.now();
      const why = left <= bounds.idleMs ? late() : `no piece asked for ${bounds.idleMs} ms`;
      timer = setTimeout(() => {
        void end(why);
        staging.abandoned?.(why);
      }, Math.max(0, Math.min(bounds.idleMs, left)));
      yield piece;
      clearTimeout(timer);
      if (ended) throw new SnapshotEndedError(`the snapshot ended: ${ended}`);
    }
  } finally {
    clearTimeout(timer);
    await end("read");
  }
}
