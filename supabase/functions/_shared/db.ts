// Database access with postgres.js. Every tenant request runs in ONE transaction that switches to
// role `authenticated` and sets the tenant's JWT claims, so row level security (not WHERE clauses)
// keeps tenants apart: a query bug cannot cross tenants. prepare:false keeps it working behind
// Supabase's transaction pooler (SUPABASE_DB_URL).
//
// Time is bounded: a connection attempt gives up after CONNECT_TIMEOUT_SECONDS, every statement of
// a tenant transaction after the pool's statement timeout (set per transaction, so it holds behind
// the pooler too), and a connection that failed is retried after at most half a second (postgres.js
// backs off up to 20 s, which kept requests waiting long after the database was back). What the
// caller gets then is a 503 with Retry-After (database-errors.ts).
import postgres from "postgres";
import { isDatabaseUnavailable } from "./database-errors.ts";
import { rateLimited, takeRequestCharge } from "./rate-limit.ts";

export type Sql = postgres.Sql;
export type Tx = postgres.TransactionSql;

export interface SqlOptions {
  max?: number;
  /** Used in pg_stat_activity, to tell functions and workers apart. */
  applicationName?: string;
  /** Longest a statement of a tenant transaction may run (default 15 s; DB_STATEMENT_TIMEOUT_MS). */
  statementTimeoutMs?: number;
}

export const CONNECT_TIMEOUT_SECONDS = 5;
export const DEFAULT_STATEMENT_TIMEOUT_MS = 15_000;
export const RECONNECT_DELAY_MAX_SECONDS = 0.5;

/** Seconds postgres.js waits before reconnecting after `failures` failed connections in a row. */
export function reconnectDelaySeconds(failures: number): number {
  return Math.min(0.05 * 2 ** failures, RECONNECT_DELAY_MAX_SECONDS);
}
const statementTimeouts = new WeakMap<Sql, number>();

export function createSql(url: string, opts: SqlOptions = {}): Sql {
  const sql = postgres(url, {
    max: opts.max ?? 10,
    prepare: false,
    idle_timeout: 20,
    connect_timeout: CONNECT_TIMEOUT_SECONDS,
    backoff: reconnectDelaySeconds,
    onnotice: () => {},
    connection: { application_name: opts.applicationName ?? "devai-memory" },
  });
  statementTimeouts.set(sql, opts.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS);
  return sql;
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

/**
 * Runs fn in one transaction as the tenant (role authenticated + claims), committing on success.
 * A pooled connection that died with the database (a restart) fails at the transaction's first
 * statement, before fn ran: that transaction is tried once more, on a fresh connection.
 */
export async function withTenant<T>(sql: Sql, who: TenantContext, fn: (tx: Tx) => Promise<T>, opts: TenantTxOptions = {}): Promise<T> {
  const claims = JSON.stringify({ sub: who.tenantId, role: "authenticated" });
  const timeout = `${statementTimeouts.get(sql) ?? DEFAULT_STATEMENT_TIMEOUT_MS}ms`;
  // A request's first tenant transaction also takes the request's rate-limit token (rate-limit.ts),
  // in the same statement, after the claims are set (the subquery, fenced by offset 0, runs first).
  const routeClass = who.actor.startsWith("worker") ? undefined : takeRequestCharge();
  for (let attempt = 1;; attempt++) {
    let started = false;
    try {
      const result = await sql.begin(async (tx) => {
        const [first] = await tx<{ retry_after: number | null }[]>`
          select ${routeClass ? tx`public.take_rate_limit_token(${routeClass}, ${who.actor === "service_role"})` : tx`null::float8`} as retry_after
            from (select set_config('role', 'authenticated', true),
                         set_config('request.jwt.claims', ${claims}, true),
                         set_config('memory.actor', ${who.actor}, true),
                         set_config('memory.thread_id', ${opts.threadId ?? "default"}, true),
                         set_config('memory.event', ${opts.event ?? ""}, true),
                         set_config('statement_timeout', ${timeout}, true)
                  offset 0) tenant`;
        started = true;
        if (routeClass && (first?.retry_after ?? 0) > 0) throw rateLimited(routeClass, first!.retry_after!);
        return await fn(tx);
      });
      return result as T;
    } catch (err) {
      if (started || attempt > 1 || !isDatabaseUnavailable(err)) throw err;
    }
  }
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
