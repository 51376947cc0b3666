// Whether a pool prepares its statements (DB_PREPARE). Prepared, a statement is parsed once per
// connection and each later run is one round trip (bind and execute); unnamed, postgres.js sends
// parse and describe, waits for the parameter types, then binds and executes: two round trips and a
// parse for every statement. On the bench's 100k handler suite that was about 1 ms of a small
// tenant's 5.5 ms retrieval (docs/operations.md#prepared-statements).

/** DB_PREPARE: `on`, `off`, or `auto` (by the URL: preparesStatements). */
export type PrepareSetting = "auto" | "on" | "off";

/** Ports of transaction poolers: Supabase's Supavisor in transaction mode, PgBouncer's default. */
const TRANSACTION_POOLER_PORTS = new Set(["6543", "6432"]);

/**
 * Whether a pool on `url` prepares its statements. A prepared statement lives in one server
 * connection, and a transaction pooler hands each transaction whichever connection is free, so
 * behind one postgres.js must send every statement unnamed: parse, describe, then bind and execute,
 * two round trips each (Supabase's documentation: direct connections and Supavisor's session mode
 * support prepared statements, its transaction mode does not). `auto` prepares on a direct
 * connection or session-mode pooler (port 5432) and on a database on this machine, and not on a
 * transaction pooler's port (6543, 6432) or any other port, where being wrong would fail
 * requests (DB_PREPARE=on says so for those; DB_PREPARE=off for a pooler on this machine on another
 * port).
 */
export function preparesStatements(url: string, setting: PrepareSetting = "auto"): boolean {
  if (setting !== "auto") return setting === "on";
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  const port = parsed.port || "5432";
  if (TRANSACTION_POOLER_PORTS.has(port)) return false;
  const host = parsed.hostname.replace(/^\[|\]$/g, "");
  return port === "5432" || host === "localhost" || host === "::1" || host.startsWith("127.");
}
