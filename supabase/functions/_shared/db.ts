// Database access with postgres.js. Every tenant request runs in ONE transaction that switches to
// role `authenticated` and sets the tenant's JWT claims, so row level security (not WHERE clauses)
// keeps tenants apart: a query bug cannot cross tenants. prepare:false keeps it working behind
// Supabase's transaction pooler (SUPABASE_DB_URL).
import postgres from "postgres";

export type Sql = postgres.Sql;
export type Tx = postgres.TransactionSql;

export interface SqlOptions {
  max?: number;
  /** Used in pg_stat_activity, to tell functions and workers apart. */
  applicationName?: string;
}

export function createSql(url: string, opts: SqlOptions = {}): Sql {
  return postgres(url, {
    max: opts.max ?? 10,
    prepare: false,
    idle_timeout: 20,
    connect_timeout: 10,
    onnotice: () => {},
    connection: { application_name: opts.applicationName ?? "devai-memory" },
  });
}

export interface TenantContext {
  tenantId: string;
  actor: string;
}

export interface TenantTxOptions {
  /** Revision thread the change log bumps (delta header); default 'default'. */
  threadId?: string;
  /** Refines the history event the triggers infer (DECAY, TTL, MERGE; CONFIRM for a pin the user confirms). */
  event?: "DECAY" | "TTL" | "MERGE" | "CONFIRM";
}

/** Runs fn in one transaction as the tenant (role authenticated + claims), committing on success. */
export async function withTenant<T>(sql: Sql, who: TenantContext, fn: (tx: Tx) => Promise<T>, opts: TenantTxOptions = {}): Promise<T> {
  const claims = JSON.stringify({ sub: who.tenantId, role: "authenticated" });
  const result = await sql.begin(async (tx) => {
    await tx`select set_config('role', 'authenticated', true),
                    set_config('request.jwt.claims', ${claims}, true),
                    set_config('memory.actor', ${who.actor}, true),
                    set_config('memory.thread_id', ${opts.threadId ?? "default"}, true),
                    set_config('memory.event', ${opts.event ?? ""}, true)`;
    return await fn(tx);
  });
  return result as T;
}

/**
 * Runs fn in one transaction as a caller that is no tenant: deployment-wide configuration (memory
 * categories, agent allowlists), read as `authenticated` and changed as `service_role`, with the
 * privileges and policies of that role rather than the connection's own.
 */
export async function withRole<T>(sql: Sql, role: "authenticated" | "service_role", actor: string, fn: (tx: Tx) => Promise<T>): Promise<T> {
  const result = await sql.begin(async (tx) => {
    await tx`select set_config('role', ${role}, true),
                    set_config('request.jwt.claims', ${JSON.stringify({ role })}, true),
                    set_config('memory.actor', ${actor}, true)`;
    return await fn(tx);
  });
  return result as T;
}

/** pgvector's text form, sent as a parameter and cast with ::extensions.vector in SQL. */
export function toVectorLiteral(v: readonly number[]): string {
  return `[${v.join(",")}]`;
}
