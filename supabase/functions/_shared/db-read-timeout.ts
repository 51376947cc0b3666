// The statement timeout of a one-statement read (db.ts readAsTenant). Such a read carries the
// tenant's settings inside the statement, and Postgres arms a statement's timer before it runs, so
// a statement_timeout set there bounds nothing; sent as a separate statement it would need a
// transaction around the read (two more round trips), and sent as a startup parameter it is
// refused by PgBouncer. So the pool's timeout is kept from here: past it, the read is cancelled the
// way psql's Ctrl-C cancels (a cancel request on a connection of its own), and fails as a
// statement past its timeout does (SQLSTATE 57014: database-errors.ts answers 503).
import type postgres from "postgres";

/** How long a connection whose read outran a late cancel waits for that cancel before serving others. */
export const LATE_CANCEL_GRACE_SECONDS = 0.1;

/**
 * `query`, cancelled when it has not answered within `ms`. `conn` is the connection it runs on,
 * reserved by the caller until this settles: a cancel names a server session, not a statement, so
 * one that arrives after the read ended would cancel whatever the session runs next. When the read
 * ended otherwise than by the cancel (it answered as the timer fired), the session waits a moment
 * for the cancel, here, before anything else runs on it.
 */
export async function cancelledAfter<T extends readonly (object | undefined)[]>(
  conn: postgres.Sql,
  query: postgres.PendingQuery<T>,
  ms: number,
): Promise<T> {
  let fired = false;
  const timer = setTimeout(() => {
    fired = true;
    query.cancel();
  }, ms);
  try {
    return await query;
  } catch (err) {
    if (fired && (err as { code?: unknown })?.code === "57014") fired = false; // the cancel ended it
    throw err;
  } finally {
    clearTimeout(timer);
    if (fired) await conn`select pg_sleep(${LATE_CANCEL_GRACE_SECONDS})`.catch(() => {});
  }
}
