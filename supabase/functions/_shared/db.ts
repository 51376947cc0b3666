// Database access with postgres.js. Every tenant request runs in ONE transaction that switches to
// role `authenticated` and sets the tenant's JWT claims, so row level security (not WHERE clauses)
// keeps tenants apart: a query bug cannot cross tenants. Statements are prepared (parsed once per
// connection, each later run one round trip) unless the URL leads to a transaction pooler, which
// cannot keep them (preparesStatements; DB_PREPARE).
//
// Time is bounded: a connection attempt gives up after CONNECT_TIMEOUT_SECONDS, every statement of
// a tenant transaction after the pool's statement timeout (set per transaction, so it holds behind
// the pooler too; a one-statement read is cancelled from here after it: db-read-timeout.ts), and a
// connection that failed is retried after at most half a second (postgres.js backs off up to 20 s,
// which kept requests waiting long after the database was back). What the caller gets then is a
// 503 with Retry-After (database-errors.ts). The pools themselves are made in db-pool.ts; their
// connections are shared fairly between tenants (tenant-share.ts).
import postgres from "postgres";
import { isConnectionLost, isDatabaseUnavailable, isStatementTimeout } from "./database-errors.ts";
import { readOnReplica, replicaDeadlineMs } from "./db-replica.ts";
import { handBack, reserveConnection, transactionOn } from "./db-reserve.ts";
import { cancelledAfter } from "./db-read-timeout.ts";
import { rateLimited, type RouteClass, takeRequestCharge, unlimitedRouteClasses } from "./rate-limit.ts";
import { tenantShares } from "./tenant-share.ts";
import { CONNECT_TIMEOUT_SECONDS, primaryOf, type Sql, timeoutMsOf, timeoutOf } from "./db-pool.ts";
export {
  createReadSql,
  createSql,
  poolOptions,
  poolsFor,
  RECONNECT_DELAY_MAX_SECONDS,
  reconnectDelaySeconds,
  type Sql,
  timeoutOf,
} from "./db-pool.ts";

export type Tx = postgres.TransactionSql;

export interface TenantContext {
  tenantId: string;
  actor: string;
}

export interface TenantTxOptions {
  /** Revision thread the change log bumps (delta header); default 'default'. */
  threadId?: string;
  /** Refines the history event the triggers infer (DECAY, TTL, MERGE; CONFIRM for a pin the user confirms). */
  event?: "DECAY" | "TTL" | "MERGE" | "CONFIRM";
  /** Every statement reads the snapshot of the first (an export's copy in chunks: docs/operations.md#exports). */
  repeatableRead?: boolean;
}

/**
 * Runs fn in one transaction as the tenant (role authenticated + claims), committing on success.
 * A pooled connection that died with the database (a restart) fails at the transaction's first
 * statement, before fn ran: that transaction is tried once more, on a fresh connection.
 *
 * The request's rate-limit token (rate-limit.ts) is taken by a statement of its own, committed
 * before the transaction begins, so the tenant's bucket row is locked for that statement only,
 * never across the request: a tenant's concurrent requests do not wait for each other. That
 * statement, BEGIN and the tenant's settings are sent together (pipelined on one connection): one
 * round trip, as when the token was part of the first statement.
 */
export async function withTenant<T>(
  sql: Sql,
  who: TenantContext,
  fn: (tx: Tx) => Promise<T>,
  opts: TenantTxOptions = {},
): Promise<T> {
  const routeClass = who.actor.startsWith("worker") ? undefined : takeRequestCharge();
  return await routed(sql, who, routeClass, (pool, rc) => tenantTransaction(pool, who, fn, opts, rc));
}

async function tenantTransaction<T>(
  sql: Sql,
  who: TenantContext,
  fn: (tx: Tx) => Promise<T>,
  opts: TenantTxOptions,
  routeClass: RouteClass | undefined,
): Promise<T> {
  for (let attempt = 1;; attempt++) {
    let started = false;
    let elsewhere: unknown; // the token's failure when it was taken on the primary's pool
    const conn = await reserveConnection(sql);
    try {
      return await transactionOn(
        sql,
        conn,
        async (begin) => {
          const primary = primaryOf(sql);
          const charge = routeClass ? chargeToken(sql, who, routeClass, conn) : undefined;
          // In this order on the connection: the token's own transaction, then BEGIN and the settings.
          const begun = begin(opts.repeatableRead ? "isolation level repeatable read" : undefined);
          const settings = conn`select 1 from ${tenantSettings(conn, who, opts, timeoutOf(sql))}`.execute();
          const [charged, opened, first] = await Promise.allSettled([charge ?? Promise.resolve(0), begun, settings]);
          if (opened.status === "rejected") throw opened.reason;
          if (first.status === "rejected") throw first.reason;
          started = true;
          if (charged.status === "rejected" && primary !== sql) elsewhere = charged.reason;
          if (charged.status === "rejected") throw charged.reason;
          if (routeClass && charged.value > 0) throw rateLimited(routeClass, charged.value);
        },
        (tx) => fn(tx as unknown as Tx),
        (err) => err !== elsewhere && isConnectionLost(err),
      );
    } catch (err) {
      if (started || attempt > 1 || !isDatabaseUnavailable(err)) throw err;
    }
  }
}

/**
 * Runs ONE statement as the tenant, in one round trip: `read` builds it with `tenant`, the
 * tenant's settings as a FROM item (`select … from ${tenant}`), so role and claims hold for that
 * statement alone (its own implicit transaction), in the functions it calls (tenantItem). For reads that need nothing else (retrieval:
 * public.retrieve_for_turn); the request's rate-limit token, when not yet taken, goes in the same
 * round trip (pipelined before it on the same connection, or on the primary when `sql` reads from
 * a replica). Past the pool's statement timeout the read is cancelled (db-read-timeout.ts).
 * Retried once on a fresh connection when the database was unavailable.
 */
export async function readAsTenant<T extends readonly (object | undefined)[]>(
  sql: Sql,
  who: TenantContext,
  read: (q: Sql, tenant: TenantSettings) => postgres.PendingQuery<T>,
  opts: TenantTxOptions = {},
): Promise<T> {
  const routeClass = takeRequestCharge();
  return await routed(sql, who, routeClass, (pool, rc) => tenantRead(pool, who, read, opts, rc));
}

async function tenantRead<T extends readonly (object | undefined)[]>(
  sql: Sql,
  who: TenantContext,
  read: (q: Sql, tenant: TenantSettings) => postgres.PendingQuery<T>,
  opts: TenantTxOptions,
  routeClass: RouteClass | undefined,
): Promise<T> {
  for (let attempt = 1, toCharge = routeClass;; attempt++) {
    const conn = await reserveConnection(sql);
    const failures: unknown[] = []; // of the statements on this connection (handBack)
    try {
      const primary = primaryOf(sql);
      const charge = toCharge ? chargeToken(sql, who, toCharge, conn) : undefined;
      const [charged, answer] = await Promise.allSettled([
        charge ?? Promise.resolve(0),
        cancelledAfter(read(conn, tenantSettings(conn, who, opts)), timeoutMsOf(sql)),
      ]);
      for (const r of [answer, ...(primary === sql ? [charged] : [])]) {
        if (r.status === "rejected") failures.push(r.reason);
      }
      if (charged.status === "rejected") throw charged.reason;
      if (toCharge && charged.value > 0) throw rateLimited(toCharge, charged.value);
      toCharge = undefined; // taken: a retry is not charged again
      if (answer.status === "rejected") throw answer.reason;
      return answer.value;
    } catch (err) {
      // Tried again for a connection that died with the database, not for a read past its timeout.
      if (attempt > 1 || isStatementTimeout(err) || !isDatabaseUnavailable(err)) throw err;
    } finally {
      handBack(sql, conn, failures);
    }
  }
}

/**
 * `run` on the pool it runs on, admitted by that pool's tenant shares (tenant-share.ts); on a
 * replica's pool, with the primary standing in when it cannot answer (db-replica.ts).
 */
function routed<T>(
  sql: Sql,
  who: TenantContext,
  routeClass: RouteClass | undefined,
  run: (pool: Sql, routeClass: RouteClass | undefined) => Promise<T>,
): Promise<T> {
  const admitted = (pool: Sql, work: () => Promise<T>) => tenantShares(pool).run(who.tenantId, work, timeoutMsOf(pool));
  const primary = primaryOf(sql);
  if (primary === sql) return admitted(sql, () => run(sql, routeClass));
  // Admitted on the replica before its deadline starts (a wait for admission is no fault of the
  // replica's); the primary standing in admits its read too.
  const deadline = replicaDeadlineMs(timeoutMsOf(sql), CONNECT_TIMEOUT_SECONDS);
  const onPool = (pool: Sql, rc: RouteClass | undefined) =>
    pool === sql ? run(pool, rc) : admitted(pool, () => run(pool, rc));
  return admitted(
    sql,
    () => readOnReplica(sql, primary, deadline, routeClass, (rc) => chargeToken(primary, who, rc), onPool),
  );
}

/** The tenant's settings for one statement, as a FROM item (readAsTenant). */
export type TenantSettings = postgres.PendingQuery<postgres.Row[]>;

/** The tenant's settings as a FROM item; `timeout`: a transaction's (a read is bounded by cancelledAfter). */
function tenantSettings(q: Sql, who: TenantContext, opts: TenantTxOptions, timeout?: string) {
  return tenantItem(q, who.tenantId, {
    "memory.actor": who.actor,
    "memory.thread_id": opts.threadId ?? "default",
    "memory.event": opts.event ?? "",
    ...(timeout ? { statement_timeout: timeout } : {}),
  });
}

/**
 * One statement's settings as a FROM item (`select … from ${tenantItem(q, tenant)}`): role
 * authenticated, the tenant's claims, the service's mark and `more`, each local to the statement's
 * own transaction and set before the rest of the statement runs. The one place a statement becomes
 * the tenant's: transactions (withTenant), reads (readAsTenant), the rate-limit token, the
 * write-behind batches. `memory.via = 'service'` is what lets the tenant write: RLS refuses a
 * tenant's insert, update and delete without it, as through the Data API (PostgREST), which
 * cannot set it (migration 20261128990000, docs/auth.md#data-api). The settings take hold as the
 * FROM item is read: the functions the statement calls run as the tenant, under row-level
 * security, but a table the statement names itself was planned before, as the login role, and
 * is read unguarded. Such a statement reads tables through functions only (migration 20261210700000).
 */
export function tenantItem(q: Sql, tenantId: string, more: Record<string, string> = {}) {
  const names = ["role", "request.jwt.claims", "memory.via", ...Object.keys(more)];
  const values = [
    "authenticated",
    JSON.stringify({ sub: tenantId, role: "authenticated" }),
    "service",
    ...Object.values(more),
  ];
  return q`(select count(set_config(s.name, s.value, true))
              from unnest(${names}::text[], ${values}::text[]) as s(name, value)
            offset 0) as tenant`;
}

/**
 * Takes one token of the tenant's bucket on sql's primary (on `conn` when it is the primary's) in a
 * statement and transaction of its own: the bucket row is locked only while it runs; its commit does not
 * wait for the WAL flush (a crash may forget the last tokens taken, nothing else). Not sent while the
 * class has no limit (UnlimitedRouteClasses). Resolves to 0, or the seconds to wait.
 */
function chargeToken(sql: Sql, who: TenantContext, routeClass: RouteClass, conn?: Sql): Promise<number> {
  const primary = primaryOf(sql), on = primary === sql && conn ? conn : primary;
  const serviceRole = who.actor === "service_role";
  // Sent now (execute), so it precedes what the caller sends next on the same connection.
  return unlimitedRouteClasses(primary).charge(routeClass, serviceRole, () =>
    on<{ retry_after: number | null }[]>`
      select public.take_rate_limit_token(${routeClass}, ${serviceRole}) as retry_after
        from ${tenantItem(on, who.tenantId, { synchronous_commit: "off" })}`.execute().then(([row]) =>
      row?.retry_after ?? null
    ));
}

/**
 * Charges the request to the tenant's rate limit now, before any work (a 429 when refused): for
 * requests whose heavy part (a body of megabytes, a remote embedding) comes before their first
 * tenant statement. One statement, no transaction around it; later transactions are not charged.
 */
export async function chargeRequest(sql: Sql, who: TenantContext): Promise<void> {
  const routeClass = takeRequestCharge();
  if (!routeClass) return;
  const retryAfter = await chargeToken(sql, who, routeClass);
  if (retryAfter > 0) throw rateLimited(routeClass, retryAfter);
}

/**
 * Runs fn inside a tenant transaction as the pool's own login role, then returns to the tenant's
 * role, also when fn fails and the transaction can go on; the tenant's claims stay set, so auth.uid() still names it. For the few writes
 * tenants must not be able to make themselves (through PostgREST, with their own token): queueing
 * jobs (jobs.ts enqueueJob) and ending sessions (sessions.ts) call functions in memory_private,
 * which tenants may not execute: `role` 'none' is the pool's login role (postgres, which owns
 * them; service_role holds the grant for other callers). docs/operations.md#job-queue.
 */
export async function asService<T>(tx: Tx, fn: () => Promise<T>): Promise<T> {
  // The CTE is read before the outer set_config runs: `prev` is the role before the switch.
  const [row] = await tx<{ prev: string }[]>`
    with p as materialized (select current_setting('role') as prev)
    select p.prev, set_config('role', 'none', true) from p`;
  const back = () => tx`select set_config('role', ${row!.prev}, true)`;
  let result: T;
  try {
    result = await fn();
  } catch (err) {
    // A failure that is not the server's (a payload postgres.js cannot serialize, thrown before
    // fn's statement is sent) leaves the transaction usable, as the login role: a caller that
    // caught it and went on would run without RLS. The role goes back first. Not after a server
    // error (the transaction is aborted; tenant transactions have no savepoints) nor on a lost
    // connection (nothing may be sent on it: db-reserve.ts); a restore that fails leaves the
    // transaction aborted or gone, so the caller gets fn's error either way.
    if (!(err instanceof postgres.PostgresError) && !isConnectionLost(err)) {
      try {
        await back();
      } catch { /* see above */ }
    }
    throw err;
  }
  await back();
  return result;
}

/**
 * pgvector's text form, sent as a parameter and cast with ::extensions.vector in SQL. pgvector
 * stores 4-byte floats (strtof of each element): each element is written as the float32 it
 * becomes, in 9 significant digits, which name every float32 exactly, so the stored vector is the
 * one the JavaScript number's shortest form gave, in 35% fewer characters (7.0 instead of 10.7 KB for
 * 512 dimensions) at half the CPU. A retrieval sends its query vector with every search
 * (docs/operations.md#cpu-per-retrieval).
 */
export function toVectorLiteral(v: readonly number[]): string {
  let text = "[";
  for (let i = 0; i < v.length; i++) text += (i === 0 ? "" : ",") + Math.fround(v[i]!).toPrecision(9);
  return text + "]";
}
