// What a database error means for the caller, for the one error path (http.ts respondToError):
//
// - The database cannot be reached or stopped answering (connection refused or reset, the pool's
//   connect timeout, Postgres shutting down, starting up or crashed, out of connections, a
//   statement past its timeout): 503 database_unavailable with Retry-After. The request wrote
//   nothing (its transaction did not commit) and can be sent again as it is.
// - The input broke a rule the database checks (constraints, values out of range, text it cannot
//   store): a 4xx, never a 500. Data exceptions (SQLSTATE class 22: a timestamp past year 294276,
//   a malformed value) are 400; constraint violations 409 / 422 / 404. The message says what is
//   wrong in the API's words (database-error-messages.ts), never the database's: that names our
//   tables, constraints and functions, and is logged with the request id instead (http.ts).
// Anything else is not mapped here, and becomes the logged 500.
import { AdmissionTimeout } from "./tenant-share.ts";
import { HttpError } from "./http.ts";
import { type DatabaseErrorFields, databaseRuleMessage } from "./database-error-messages.ts";

/** What a 503 asks the client to wait: Postgres restarts in about that time. */
export const DATABASE_RETRY_AFTER_SECONDS = 2;

// Connection-level failures reported by the socket (Node's codes) or by postgres.js.
const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "CONNECT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_DESTROYED",
  "CONNECTION_ENDED",
]);
// SQLSTATEs of a server that is going away, coming up, full or too slow for our timeout; 40001 is
// also how a read replica cancels a read that conflicts with what it replays (ours never run
// serializable transactions, where it would mean something else).
const UNAVAILABLE_STATES = new Set(["57P01", "57P02", "57P03", "53300", "57014", "25P03", "40001"]);

function codeOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown })?.code;
  return typeof code === "string" ? code : undefined;
}

// SQLSTATEs the server sends as FATAL, ending the session, and class 08: a sign the database may be
// going away (db-reserve.ts checks it before the pool's next reservation), never proof that the
// connection a statement ran on is gone. The same codes come as a plain ERROR on a session that
// lives on: 57P01 when a parallel worker of the statement is terminated (pg_terminate_backend of
// the worker), class 08 from dblink or postgres_fdw, any of them from RAISE.
const SESSION_ENDED_STATES = new Set(["57P01", "57P02", "57P03", "53300", "25P03"]);

/**
 * True when err is the failure of a statement whose connection is gone: the socket failed or closed
 * under it (a restart, a crash, pg_terminate_backend, an idle transaction's timeout). postgres.js
 * reports that with the socket's or its own connection codes: a session the server ends with a
 * FATAL fails its statement as CONNECTION_CLOSED once the socket closes. Never a SQLSTATE (see
 * above): a connection whose statement failed with one is alive, and one not handed back would be
 * held for good, idle in its aborted transaction. Not for a statement timeout either. postgres.js
 * has put a lost connection back among its closed ones already, and reconnects it when it is next
 * needed; a statement sent on it meanwhile is never answered (or, sent a tick later, ends the
 * process: porsager/postgres#1208), so it is neither rolled back nor handed back (db.ts).
 */
export function isConnectionLost(err: unknown): boolean {
  const code = codeOf(err);
  return code !== undefined && CONNECTION_CODES.has(code);
}

/** True when err may mean the database went away: a lost connection, or a session-ending SQLSTATE. */
export function mayHaveLostConnections(err: unknown): boolean {
  const code = codeOf(err);
  if (!code) return false;
  return CONNECTION_CODES.has(code) || SESSION_ENDED_STATES.has(code) || /^08[0-9A-Z]{3}$/.test(code);
}

/** True when err means "no database right now" rather than anything about the request. */
export function isDatabaseUnavailable(err: unknown): boolean {
  const code = codeOf(err);
  if (!code) return false;
  return CONNECTION_CODES.has(code) || UNAVAILABLE_STATES.has(code) || /^08[0-9A-Z]{3}$/.test(code);
}

/** True when a statement ran past its timeout (the server is there, the work was too slow). */
export function isStatementTimeout(err: unknown): boolean {
  const code = codeOf(err);
  return code === "57014" || code === "25P03";
}

export function mapDatabaseError(err: unknown): HttpError | undefined {
  if (err instanceof AdmissionTimeout) {
    return new HttpError(
      503,
      "database_unavailable",
      "too many of this tenant's requests are waiting for the database; nothing was written, try again",
      undefined,
      { "retry-after": String(DATABASE_RETRY_AFTER_SECONDS) },
    );
  }
  if (isDatabaseUnavailable(err)) {
    const timedOut = isStatementTimeout(err) || codeOf(err) === "CONNECT_TIMEOUT";
    return new HttpError(
      503,
      "database_unavailable",
      timedOut
        ? "the database did not answer in time; nothing was written, try again"
        : "the database is unavailable; nothing was written, try again",
      undefined,
      { "retry-after": String(DATABASE_RETRY_AFTER_SECONDS) },
    );
  }
  const code = codeOf(err);
  if (!code || !/^[0-9A-Z]{5}$/.test(code)) return undefined;
  // Text Postgres cannot store (U+0000, invalid escapes): the caller's input, never a 500.
  if (code === "22P05" || code === "22021") {
    return new HttpError(400, "invalid_request", "the request contains characters that cannot be stored");
  }
  const fields = err as DatabaseErrorFields;
  if (code.startsWith("22")) return new HttpError(400, "invalid_request", databaseRuleMessage(fields));
  if (code === "23514" || code === "23502") return new HttpError(422, "unprocessable", databaseRuleMessage(fields));
  if (code === "23505") return new HttpError(409, "conflict", databaseRuleMessage(fields));
  // A deadlock with a concurrent transaction on the same rows: Postgres rolled this request's
  // transaction back whole; the same request again goes through once the other has committed.
  // Writers lock in one order (memory rows, then the thread's revision row at commit:
  // docs/operations.md#lock-order), so only what that order leaves gets here (the dedup worker's
  // neighbours, locked candidate by candidate; a decay or TTL step locking memories in heap order
  // against a request locking two in id order).
  if (code === "40P01") {
    return new HttpError(
      409,
      "conflict",
      "a concurrent change to the same memories got in the way; nothing was written, try again",
      undefined,
      { "retry-after": "1" },
    );
  }
  if (code === "23503") return new HttpError(404, "not_found", "referenced memory not found");
  if (code === "42501") return new HttpError(403, "forbidden", "not allowed");
  return undefined;
}

/**
 * The database's own words for a request it refused (a 4xx above), for operators: one JSON line on
 * stderr with the request id the answer carries, the SQLSTATE, the message and the names it is
 * about. Not the error's `detail`: that quotes the refused row, the caller's content.
 */
export function logDatabaseRefusal(err: unknown, requestId: string): void {
  const e = err as Partial<
    Record<"code" | "message" | "schema_name" | "table_name" | "column_name" | "constraint_name", string>
  >;
  console.error(JSON.stringify({
    level: "warn",
    msg: "the database refused the request",
    request_id: requestId,
    sqlstate: e.code,
    error: e.message,
    schema: e.schema_name,
    table: e.table_name,
    column: e.column_name,
    constraint: e.constraint_name,
  }));
}
