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
import { mayHaveLostConnections } from "./database-errors.ts";
import { CONNECT_TIMEOUT_SECONDS, type Sql, timeoutMsOf } from "./db-pool.ts";

/** A reserved connection (postgres.js's ReservedSql). */
export type Reserved = Awaited<ReturnType<Sql["reserve"]>>;

const unsure = new WeakSet<Sql>();

/** A statement on `sql` found its connection gone: the next reservation checks the database first. */
export function noteConnectionLost(sql: Sql, err: unknown): void {
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
    return await Promise.race([pending, givenUp]);
  } catch (err) {
    pending.then((late) => late.release(), () => {});
    noteConnectionLost(sql, err);
    throw err;
  } finally {
    clearTimeout(timer);
  }
}
