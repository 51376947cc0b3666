// Transactions of a caller that is no tenant: deployment-wide configuration (memory categories,
// agent allowlists; memory/config-routes.ts).
import { isConnectionLost } from "./database-errors.ts";
import type { Sql, Tx } from "./db.ts";
import { noteConnectionLost, reserveConnection, watchedTransaction } from "./db-reserve.ts";

/**
 * Runs fn in one transaction as a caller that is no tenant: deployment-wide configuration (memory
 * categories, agent allowlists), read as `authenticated` and changed as `service_role`, with the
 * privileges and policies of that role rather than the connection's own.
 *
 * On a reserved connection, as the tenants' transactions (db.ts): a connection whose session ended
 * (the database restarted) is neither rolled back nor handed back to the pool, where the next
 * statement sent on it would never be answered or would end the process (porsager/postgres#1208,
 * which the driver's own sql.begin runs into: its rollback goes to the dead connection).
 */
export async function withRole<T>(
  sql: Sql,
  role: "authenticated" | "service_role",
  actor: string,
  fn: (tx: Tx) => Promise<T>,
): Promise<T> {
  const conn = await reserveConnection(sql);
  const session = watchedTransaction(conn);
  let open = false;
  let lost = false;
  try {
    const begin = session.begin().then(() => (open = true));
    const settings = conn`select set_config('role', ${role}, true),
                                 set_config('request.jwt.claims', ${JSON.stringify({ role })}, true),
                                 set_config('memory.actor', ${actor}, true)`.execute();
    await Promise.all([begin, settings]);
    const result = await fn(session.tx as unknown as Tx);
    await session.tx`commit`;
    open = false;
    return result;
  } catch (err) {
    lost = session.ended() || isConnectionLost(err);
    if (lost) noteConnectionLost(sql, err);
    else if (open) await conn`rollback`.catch(() => {});
    throw err;
  } finally {
    session.unwatch();
    if (!lost) conn.release();
  }
}
