// The statement timeout of a one-statement read (db.ts readAsTenant). Such a read carries the
// tenant's settings inside the statement, and Postgres arms a statement's timer before it runs, so
// a statement_timeout set there bounds nothing; sent as a separate statement it would need a
// transaction around the read (two more round trips), and sent as a startup parameter it is
// refused by PgBouncer. So the pool's timeout is kept from here: past it, the read is cancelled the
// way psql's Ctrl-C cancels (a cancel request on a connection of its own), and fails as a
// statement past its timeout does (SQLSTATE 57014: database-errors.ts answers 503).
import type postgres from "postgres";

/** Between two cancel requests for a read still running: one may land while the session waits. */
export const RECANCEL_MS = 1_000;
/** The longest the session waits for a cancel request to be done (one that cannot connect). */
export const CANCEL_WAIT_MS = 5_000;

/**
 * `query`, cancelled when it has not answered within `ms`. `conn` is the connection it runs on,
 * reserved by the caller until this settles. A cancel names a server session, not a statement:
 * one still on its way when the read ends would cancel whatever the session runs next, so this
 * settles only once every cancel request sent is done (Postgres has then signalled the session,
 * and a session waiting for its next statement ignores the signal). A cancel that lands between two
 * messages of the read (a statement not prepared is parsed and described first, then run; a pooler
 * may still be waiting for a server) is ignored too, so one is sent again each RECANCEL_MS while
 * the read runs.
 */
export async function cancelledAfter<T extends readonly (object | undefined)[]>(
  query: postgres.PendingQuery<T>,
  ms: number,
): Promise<T> {
  let settled = false;
  const sent: Promise<void>[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  const cancel = () => {
    const request = cancelRequest(query);
    sent.push(request);
    void request.then(() => {
      if (!settled) timer = setTimeout(cancel, RECANCEL_MS);
    });
  };
  timer = setTimeout(cancel, ms);
  try {
    return await query;
  } finally {
    settled = true;
    clearTimeout(timer);
    if (sent.length > 0) await withinMs(Promise.all(sent), CANCEL_WAIT_MS);
  }
}

/**
 * Sends a cancel request for `query`; resolves when it is done, whatever came of it. postgres.js's
 * query.cancel() discards the promise of the request it sends (it returns null), and that promise
 * rejects when the request cannot connect: unhandled, the rejection would end the process. The
 * pool's canceller, which query.cancel() calls, is called here instead, and hands it over.
 */
function cancelRequest(query: object): Promise<void> {
  const canceller = (query as unknown as { canceller?: (q: unknown) => Promise<void> }).canceller;
  if (typeof canceller !== "function") return Promise.resolve();
  return canceller(query).then(() => {}, () => {});
}

function withinMs(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([work, new Promise((resolve) => (timer = setTimeout(resolve, ms)))])
    .then(() => clearTimeout(timer));
}
