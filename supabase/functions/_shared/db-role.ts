// Transactions of a caller that is no tenant: deployment-wide configuration (memory categories,
// agent allowlists; memory/config-routes.ts).
import type { Sql, Tx } from "./db.ts";

/**
 * Runs fn in one transaction as a caller that is no tenant: deployment-wide configuration (memory
 * categories, agent allowlists), read as `authenticated` and changed as `service_role`, with the
 * privileges and policies of that role rather than the connection's own.
 */
export async function withRole<T>(
  sql: Sql,
  role: "authenticated" | "service_role",
  actor: string,
  fn: (tx: Tx) => Promise<T>,
): Promise<T> {
  const result = await sql.begin(async (tx) => {
    await tx`select set_config('role', ${role}, true),
                    set_config('request.jwt.claims', ${JSON.stringify({ role })}, true),
                    set_config('memory.actor', ${actor}, true)`;
    return await fn(tx);
  });
  return result as T;
}
