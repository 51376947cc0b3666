// Reserving one connection of a pool for a tenant's transaction or read (db.ts), around two faults of
// postgres.js 3.4.9's pool that a database outage sets off (docs/operations.md#database-outages):
//
// - A reserve() that waits while a connection closes (the database going away, or one reaching its
//   lifetime while every other is taken) is given that connection's reconnection, which opens the
//   connection for the next caller and never answers the reserve(): it waited forever, holding the
//   tenant's share of the pool (tenant-share.ts), until the tenant's requests all waited for nothing.
//   A reserve() not answered within a connection's time to open plus a statement's is given up
//   (503, nothing written); should it be answered later, the connection is handed back at once.
// - A reserve() whose own connection attempt fails (the database down) stays queued, and a
//   connection that opens later can be handed to it, to nobody, and lost to the pool for good. So
//   once a statement found the database gone, the pool's next reservation waits for a plain
//   statement (`select 1`, which the pool queues without that fault) to answer first: during an
//   outage requests fail at that statement, and no reserve() is left queued.
// - A statement sent on a reserved connection while the connection waits for the server (behind a
//   statement with parameters, which is described before it is sent) waits in the reservation's
//   own queue, which the pool drops when the connection closes: neither sent nor failed, it is
//   never answered. So once a statement of a reservation fails with its connection lost, every
//   statement of it still unanswered fails too (failingTogether).
import { isConnectionLost, mayHaveLostConnections } from "./database-errors.ts";
import { CONNECT_TIMEOUT_SECONDS, type Sql, timeoutMsOf } from "./db-pool.ts";

/** A reserved connection (postgres.js's ReservedSql). */
export type Reserved = Awaited<ReturnType<Sql["reserve"]>>;

const unsure = new WeakSet<Sql>();

/** A statement on `sql` found its connection gone: the next reservation checks the database first. */
function noteConnectionLost(sql: Sql, err: unknown): void {
  if (mayHaveLostConnections(err)) unsure.add(sql);
}

/** The error of a reserve() given up: a connection timeout (503 database_unavailable, http.ts). */
function notReserved(ms: number): Error {
  return Object.assign(new Error(`no connection of the pool was handed over within ${ms} ms`), {
    code: "CONNECT_TIMEOUT",
  });
}

/** sql.reserve(), given up after a connection's time to open plus a statement's (see above). */
export async function reserveConnection(sql: Sql): Promise<Reserved> {
  if (unsure.has(sql)) {
    try {
      await sql`select 1`;
    } catch (err) {
      noteConnectionLost(sql, err);
      throw err;
    }
    unsure.delete(sql);
  }
  const ms = CONNECT_TIMEOUT_SECONDS * 1000 + timeoutMsOf(sql);
  const pending = sql.reserve();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const givenUp = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(notReserved(ms)), ms);
  });
  try {
    return failingTogether(await Promise.race([pending, givenUp]));
  } catch (err) {
    pending.then((late) => late.release(), () => {});
    noteConnectionLost(sql, err);
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/** What postgres.js's statements (its Query, a Promise) are, for failingTogether. */
interface Statement {
  executed: boolean;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

function isStatement(x: unknown): x is Statement {
  return x instanceof Promise && typeof (x as Partial<Statement>).reject === "function";
}

/** The error of a statement left unsent on a connection that closed: a lost connection (503). */
function closedBeforeSent(): Error {
  return Object.assign(new Error("the connection closed before this statement was sent"), {
    code: "CONNECTION_CLOSED",
  });
}

/**
 * `conn`, whose statements fail together once one fails with the connection lost (see above): those
 * postgres.js holds in the reservation's queue would otherwise never be answered. Before, a search's
 * write-behind batch (begin, its statement with parameters, commit, pipelined) whose connection a
 * database restart closed while that statement was described waited forever on its commit, and
 * with it every later batch and the local server's close() (tests/db_outage.test.ts).
 */
function failingTogether(conn: Reserved): Reserved {
  // Each statement made on the reservation and not yet answered, with its own reject. Fragments
  // (conn`...` inside another statement) are never run, so never failed here.
  const unanswered = new Map<Statement, (err: unknown) => void>();
  const failUnanswered = () => {
    for (const [statement, reject] of unanswered) {
      if (!statement.executed) continue;
      unanswered.delete(statement);
      reject(closedBeforeSent());
    }
  };
  const track = <T>(made: T): T => {
    if (!isStatement(made)) return made;
    const { resolve, reject } = made;
    unanswered.set(made, reject);
    made.resolve = (value) => {
      unanswered.delete(made);
      resolve(value);
    };
    made.reject = (err) => {
      unanswered.delete(made);
      reject(err);
      // After the pool has failed what it sent on the connection (each with its own error).
      if (isConnectionLost(err)) queueMicrotask(failUnanswered);
    };
    return made;
  };
  return new Proxy(conn, {
    apply: (target, self, args) => track(Reflect.apply(target, self, args)),
    get: (target, prop) =>
      prop === "unsafe"
        ? (...args: Parameters<Reserved["unsafe"]>) => track(target.unsafe(...args))
        : Reflect.get(target, prop, target),
  });
}

/**
 * Hands `conn` back to the pool, unless a failure of its statements says its session ended
 * (isConnectionLost): a statement sent on it next would never be answered or would end the process
 * (porsager/postgres#1208). The pool reconnects it by itself; its next reservation checks the
 * database first.
 */
export function handBack(sql: Sql, conn: Reserved, failures: readonly unknown[]): void {
  const lost = failures.find((err) => isConnectionLost(err));
  if (lost === undefined) conn.release();
  else noteConnectionLost(sql, lost);
}

/** The error of a statement refused because its session has ended: a lost connection (503). */
function sessionEnded(): Error {
  return Object.assign(new Error("the database ended this transaction's session"), { code: "CONNECTION_CLOSED" });
}

/** What a transaction may be begun with (code, never input). */
export type TransactionModes = "isolation level repeatable read";

/**
 * A transaction on a reserved connection whose session is watched from its BEGIN on, for the
 * session the server ends while the transaction sends nothing (idle in transaction: a restart
 * between two statements, pg_terminate_backend, idle_in_transaction_session_timeout). No statement
 * fails then; the next one was sent on the closed connection (ending the process:
 * porsager/postgres#1208) or, when the pool had reconnected it for a waiting query meanwhile, ran
 * on that new session: outside the transaction, as the pool's own login role (no tenant role, no
 * claims, no RLS), and the request was answered as committed. postgres.js tells a connection's
 * close to the `onclose` of the connection object it hands a query's `onexecute` (as for its own
 * sql.begin): from then on `tx` refuses every statement, unsent, as a lost connection (503).
 */
function watchedTransaction(conn: Reserved) {
  let ended = false;
  let watched: { onclose?: unknown } | undefined;
  const onexecute = (c: { onclose?: unknown }) => {
    watched = c;
    c.onclose = () => (ended = true);
    return true; // the connection takes the next statement at once (pipelined after BEGIN)
  };
  const guard = <F extends (...args: never[]) => unknown>(f: F) =>
    ((...args: Parameters<F>) => {
      if (ended) throw sessionEnded();
      return f(...args);
    }) as F;
  const tx = new Proxy(conn, {
    apply: (target, self, args) => {
      if (ended) throw sessionEnded();
      return Reflect.apply(target, self, args);
    },
    get: (target, prop) => prop === "unsafe" ? guard(target.unsafe) : Reflect.get(target, prop, target),
  });
  return {
    /** BEGIN (with its transaction modes), sent now; the session is watched once it is on its way. */
    begin: (modes?: TransactionModes) =>
      conn.unsafe(modes ? `begin ${modes}` : "begin", [], { onexecute } as never).execute(),
    tx,
    /** Whether the session ended since BEGIN. */
    ended: () => ended,
    /** Stops watching (before the connection is handed back). */
    unwatch: () => {
      if (watched && !ended) watched.onclose = undefined;
    },
  };
}

/**
 * fn in one transaction on `conn` (reserved by the caller, handed back here), the session watched
 * from BEGIN on (watchedTransaction): `start` sends BEGIN (calling `begin`) and the transaction's
 * settings, pipelined, and settles once they have; COMMIT follows fn. On a failure, a connection
 * whose session ended is neither rolled back (the server did) nor handed back to the pool, where
 * the next statement sent on it would never be answered or would end the process
 * (porsager/postgres#1208); any other is rolled back and handed back. `lostWith` says which
 * failures mean this connection is gone (the tenant's token taken on another pool's does not).
 * The one implementation of tenant transactions (db.ts) and configuration ones (db-role.ts).
 */
export async function transactionOn<T>(
  sql: Sql,
  conn: Reserved,
  start: (begin: (modes?: TransactionModes) => Promise<unknown>) => Promise<void>,
  fn: (tx: Reserved) => Promise<T>,
  lostWith: (err: unknown) => boolean = isConnectionLost,
): Promise<T> {
  const session = watchedTransaction(conn);
  let open = false;
  let lost = false;
  try {
    await start((modes) => session.begin(modes).then(() => (open = true)));
    const result = await fn(session.tx);
    await session.tx`commit`;
    open = false;
    return result;
  } catch (err) {
    lost = session.ended() || lostWith(err);
    if (lost) noteConnectionLost(sql, err);
    else if (open) await conn`rollback`.catch(() => {});
    throw err;
  } finally {
    session.unwatch();
    if (!lost) conn.release();
  }
}
