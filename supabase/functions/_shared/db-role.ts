// Transactions of a caller that is no tenant: deployment-wide configuration (memory categories,
// agent allowlists; memory/config-routes.ts).
import type { Sql, Tx } from "./db.ts";
import { reserveConnection, transactionOn } from "./db-reserve.ts";

/**
 * Runs fn in one transaction as a caller that is no tenant: deployment-wide configuration (memory
 * categories, agent allowlists), read as `authenticated` and changed as `service_role`, with the
 * privileges and policies of that role rather than the connection's own.
 *
 * Run by transactionOn, as the tenants' transactions (db.ts), not by the driver's sql.begin, whose
 * rollback goes to a connection whose session ended and ends the process (porsager/postgres#1208).
 */
export async function withRole<T>(
  sql: Sql,
  role: "authenticated" | "service_role",
  actor: string,
  fn: (tx: Tx) => Promise<T>,
): Promise<T> {
  const conn = await reserveConnection(sql);
  return await transactionOn(
    sql,
    conn,
    async (begin) => {
      await Promise.all([
        begin(),
        conn`select set_config('role', ${role}, true),
                    set_config('request.jwt.claims', ${JSON.stringify({ role })}, true),
                    set_config('memory.actor', ${actor}, true)`.execute(),
      ]);
    },
    (tx) => fn(tx as unknown as Tx),
  );
}
