// A read consumed a piece at a time that must still show one instant: the export, whose pages are
// written as the client takes them. Every piece is read in ONE transaction as the tenant,
// REPEATABLE READ READ ONLY, so all of them see the database as of its first statement (pages read
// each in a transaction of its own saw the writes made between them: a forget in `history` of a
// memory `memories` showed active, 2-8 rows in five exports of 1,900 memories under four writers).
// The transaction holds its connection until the last piece is read or the reader stops; it ends
// with the reader (its `return`: a client that went away). It also ends, and the next piece fails,
// when the reader asks for nothing for SNAPSHOT_IDLE_FACTOR statement timeouts (60 s by default) or
// has held it SNAPSHOT_MAX_FACTOR statement timeouts in all (10 minutes): a client that stops
// reading without going away, or reads a page a minute, holds a connection (and the snapshot, which
// holds back vacuum for every tenant) that long, not for ever. The server ends the session a
// statement timeout after the idle bound (idle_in_transaction_session_timeout, db-reserve.ts
// watches for it), should this process not. And few are held at once (claimSnapshot): one a
// tenant, and a quarter of the pool for all tenants.
import { type Sql, type TenantContext, type Tx, withTenant } from "./db.ts";
import { timeoutMsOf } from "./db-pool.ts";
import { HttpError } from "./http.ts";

/**
 * How many of the pool's statement timeouts the transaction may wait for the reader's next ask (a
 * timer), one more before Postgres ends its session: env.ts bounds DB_STATEMENT_TIMEOUT_MS so that
 * both fit in 2^31 - 1 ms (MAX_STATEMENT_TIMEOUT_MS).
 */
const SNAPSHOT_IDLE_FACTOR = 4;
/** How many of the pool's statement timeouts the transaction may be held in all. */
const SNAPSHOT_MAX_FACTOR = 40;

/** How long a snapshot may wait for its reader's next ask, and be held in all (ms). */
export interface SnapshotBounds {
  idleMs: number;
  maxMs: number;
}

function snapshotBounds(sql: Sql): SnapshotBounds {
  const timeout = timeoutMsOf(sql);
  return { idleMs: SNAPSHOT_IDLE_FACTOR * timeout, maxMs: SNAPSHOT_MAX_FACTOR * timeout };
}

/** The snapshot's reader was too slow: the pieces after this are not read. */
export class SnapshotEndedError extends Error {
  override name = "SnapshotEndedError";
}

const holding = new WeakMap<Sql, Promise<boolean>>();

/**
 * Whether a snapshot held while a client reads leaves the database to the other requests: a pool
 * of more than one connection (the embedded server's has one, DB_POOL_MAX=1), on a server that
 * runs transactions side by side (PGlite runs one at a time: docs/pglite.md). Asked once a pool.
 */
export function holdsSnapshots(sql: Sql): Promise<boolean> {
  let answer = holding.get(sql);
  if (!answer) {
    answer = sql.options.max < 2
      ? Promise.resolve(false)
      : sql<{ pglite: boolean }[]>`select version() like '%(PGlite %' as pglite`.then(([row]) => !row!.pglite);
    // A failure (the database away) is not remembered: the next export asks again.
    answer.catch(() => holding.delete(sql));
    holding.set(sql, answer);
  }
  return answer;
}

/** Seconds a refused reader is told to wait: an export of a few thousand memories takes about that. */
const SNAPSHOT_RETRY_AFTER_SECONDS = 5;
/** The tenants holding a snapshot now, per pool. */
const held = new WeakMap<Sql, Set<string>>();

/**
 * A held snapshot keeps a pool connection while its reader reads, up to the idle bound: a tenant
 * starting nine exports and reading none could hold nine of the ten connections for a minute (admission
 * leaves one to the others, tenant-share.ts), and every other tenant's request queued for that
 * one. So a tenant holds one at a time (429), and all tenants together a quarter of the pool's
 * connections, at least one (503): the rest stay with the requests that take milliseconds.
 * Returns the release, which runs when the snapshot's transaction ends.
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

/** The reader's next ask; a SnapshotEndedError (the transaction ends) when it is idle or late. */
async function nextAsk<T>(box: Mailbox<T>, heldUntil: number, bounds: SnapshotBounds): Promise<Letter<T>> {
  const left = heldUntil - Date.now();
  const why = left <= bounds.idleMs
    ? `held ${bounds.maxMs} ms, the longest a snapshot is held`
    : `no piece asked for ${bounds.idleMs} ms`;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new SnapshotEndedError(`the snapshot ended: ${why}`)),
      Math.max(0, Math.min(bounds.idleMs, left)),
    );
  });
  try {
    return await Promise.race([box.promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** One piece asked of the transaction (null: the reader stopped), and where the next ask will be. */
interface Letter<T> {
  ask: PromiseWithResolvers<IteratorResult<T>> | null;
  next: Mailbox<T>;
}
type Mailbox<T> = PromiseWithResolvers<Letter<T>>;

/**
 * The pieces `read(tx)` yields, each read when the caller asks for it, all in one snapshot
 * (withTenant's `snapshot`). A failure to begin (rate limit, no connection) is the first piece's.
 */
export async function* inOneSnapshot<T>(
  sql: Sql,
  who: TenantContext,
  read: (tx: Tx) => AsyncIterable<T>,
  bounds: SnapshotBounds = snapshotBounds(sql),
): AsyncGenerator<T> {
  const release = claimSnapshot(sql, who.tenantId);
  // The reader posts one ask at a time, each letter naming the mailbox of the next: the
  // transaction reads them in order, however far ahead of it the reader is (the first ask is
  // posted before the transaction has begun).
  let outbox: Mailbox<T> = Promise.withResolvers();
  const inbox = outbox;
  const post = (ask: Letter<T>["ask"]) => {
    const next: Mailbox<T> = Promise.withResolvers();
    outbox.resolve({ ask, next });
    outbox = next;
  };
  const transaction = withTenant(sql, who, async (tx) => {
    const heldUntil = Date.now() + bounds.maxMs;
    const idle = `${bounds.idleMs + timeoutMsOf(sql)}ms`;
    await tx`select set_config('idle_in_transaction_session_timeout', ${idle}, true)`;
    const pieces = read(tx)[Symbol.asyncIterator]();
    try {
      for (let box = inbox;;) {
        const { ask, next } = await nextAsk(box, heldUntil, bounds);
        box = next;
        if (!ask) return;
        const piece = await pieces.next().catch((err) => {
          ask.reject(err);
          throw err;
        });
        ask.resolve(piece);
        if (piece.done) return;
      }
    } finally {
      await pieces.return?.();
    }
  }, { snapshot: true });
  transaction.then(release, release);
  // Ended without answering an ask: only when it failed (BEGIN, the rate limit), which this rethrows.
  const ended = transaction.then(() => {
    throw new Error("the snapshot's transaction ended before its last piece");
  });
  ended.catch(() => {});
  let done = false;
  try {
    for (;;) {
      const ask = Promise.withResolvers<IteratorResult<T>>();
      post(ask);
      const piece = await Promise.race([ask.promise, ended]);
      if (piece.done) break;
      yield piece.value;
    }
    done = true;
    await transaction; // its COMMIT
  } finally {
    if (!done) {
      post(null);
      await transaction.catch(() => {});
    }
  }
}
