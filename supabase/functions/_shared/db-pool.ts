// The pools: a pool per database URL, with the options every connection needs (connect timeout,
// reconnect backoff, prepared statements or not, the statement timeout its tenant work is held
// to) and, for a read replica's pool, the primary its writes go to. db.ts runs tenant work on them.
import postgres from "postgres";
import { isConnectionLost } from "./database-errors.ts";
import { type PrepareSetting, preparesStatements } from "./db-prepare.ts";
import { tenantShares } from "./tenant-share.ts";

export type Sql = postgres.Sql;

export interface SqlOptions {
  max?: number;
  /** Used in pg_stat_activity, to tell functions and workers apart. */
  applicationName?: string;
  /** Longest a statement of a tenant transaction may run (default 15 s; DB_STATEMENT_TIMEOUT_MS). */
  statementTimeoutMs?: number;
  /** Whether statements are prepared (DB_PREPARE; default auto: preparesStatements). */
  prepare?: PrepareSetting;
}

export const CONNECT_TIMEOUT_SECONDS = 5;
export const DEFAULT_STATEMENT_TIMEOUT_MS = 15_000;
export const RECONNECT_DELAY_MAX_SECONDS = 0.5;
/**
 * How long a pool keeps a connection no statement uses. A new server session pays, at its first
 * retrieval, what a warm one has cached: public.retrieve_for_turn's plans, the catalog entries and
 * index metadata its search reads (150-200 ms, against 8-20 ms warm, at each search mode's first
 * call). postgres.js's usual 20 s closed every connection between two turns of one agent, so each
 * turn after a pause longer than that was served on a new session (3 of 3 turns 21 s apart, none
 * now): docs/operations.md#a-pools-connections. A pool never holds more than its
 * `max` connections either way (the database's connection limit must hold `DB_POOL_MAX` per
 * instance, as before); kept longer are only those a busier moment opened, a few MB of server memory
 * each.
 */
export const IDLE_TIMEOUT_SECONDS = 600;

/**
 * How long a pool keeps a connection in use before replacing it: 6 to 12 hours, drawn per
 * connection slot, so that the connections a burst opened together are not replaced together.
 * postgres.js's 30-60 minutes made each of a busy pool's connections pay a new session's first
 * retrieval again (231 plans and 14,900 buffers, against 13 and 3,400 warm) about once every 45
 * minutes. Warming a replacement does not help here: postgres.js opens it with the request that
 * needs it, and a warm-up run first costs what it saves (docs/operations.md#a-pools-connections).
 */
export function connectionLifetimeSeconds(): number {
  return 3600 * (6 + Math.random() * 6);
}

/** Seconds postgres.js waits before reconnecting after `failures` failed connections in a row. */
export function reconnectDelaySeconds(failures: number): number {
  return Math.min(0.05 * 2 ** failures, RECONNECT_DELAY_MAX_SECONDS);
}
const statementTimeouts = new WeakMap<Sql, number>();

/** The statement postgres.js fetches the server's array types with (its connection.js, fetchArrayTypes). */
const TYPES_FETCH = /select b\.oid, b\.typarray\s+from pg_catalog\.pg_type/;

/**
 * Whether `reason` is the failure of postgres.js's fetch of the server's array types, made right
 * after each connection's handshake from a promise it keeps nowhere. A connection lost at that
 * moment (the database going away just after a connect, or refusing the reconnect that follows)
 * rejects that promise unhandled, which ends a Deno process: the local server's, at a database
 * outage. The statements waiting on that connection fail with the same error, answered as usual
 * (503), and the pool reconnects when next needed: that rejection says nothing more.
 */
export function isLostTypesFetch(reason: unknown): boolean {
  const statement = (reason as { query?: unknown } | null)?.query;
  return isConnectionLost(reason) && typeof statement === "string" && TYPES_FETCH.test(statement);
}

let typesFetchesWatched = false;

/** Once per process, before the first pool: a lost types fetch (isLostTypesFetch) does not end it. */
function watchTypesFetches(): void {
  if (typesFetchesWatched) return;
  typesFetchesWatched = true;
  globalThis.addEventListener("unhandledrejection", (e) => {
    if (isLostTypesFetch(e.reason)) e.preventDefault();
  });
}

export function createSql(url: string, opts: SqlOptions = {}): Sql {
  watchTypesFetches();
  const max = opts.max ?? 10;
  const sql = postgres(url, {
    max,
    prepare: preparesStatements(url, opts.prepare),
    idle_timeout: IDLE_TIMEOUT_SECONDS,
    // A function, as postgres.js's own default is: each connection slot draws its lifetime once
    // (its connection.js timer()); its types say number. Were that to change, a NaN lifetime is none.
    max_lifetime: connectionLifetimeSeconds as unknown as number,
    connect_timeout: CONNECT_TIMEOUT_SECONDS,
    backoff: reconnectDelaySeconds,
    onnotice: () => {},
    connection: { application_name: opts.applicationName ?? "devai-memory" },
  });
  statementTimeouts.set(sql, opts.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS);
  tenantShares(sql, max);
  return sql;
}

/**
 * A pool on a read replica of `primary` (SUPABASE_DB_READ_URL): reads that may lag the primary by
 * the replication delay (docs/operations.md#read-replicas). Whatever writes, the rate-limit token
 * included, goes to the primary.
 */
export function createReadSql(url: string, primary: Sql, opts: SqlOptions = {}): Sql {
  const replica = createSql(url, { ...opts, applicationName: `${opts.applicationName ?? "devai-memory"}-read` });
  primaries.set(replica, primary);
  return replica;
}

const primaries = new WeakMap<Sql, Sql>();

/** What poolsFor reads from the function's configuration (env.ts's Config). */
export interface PoolConfig {
  databaseUrl: string;
  databaseReadUrl?: string;
  dbPoolMax: number;
  dbStatementTimeoutMs: number;
  dbPrepare?: PrepareSetting;
}

/** A pool's options from the function's configuration. */
export function poolOptions(config: PoolConfig, applicationName: string): SqlOptions {
  return {
    max: config.dbPoolMax,
    applicationName,
    statementTimeoutMs: config.dbStatementTimeoutMs,
    prepare: config.dbPrepare,
  };
}

/** A function's pools: the primary, and a read replica's when SUPABASE_DB_READ_URL is set. */
export function poolsFor(config: PoolConfig, applicationName: string): { sql: Sql; readSql?: Sql } {
  const opts = poolOptions(config, applicationName);
  const sql = createSql(config.databaseUrl, opts);
  return { sql, readSql: config.databaseReadUrl ? createReadSql(config.databaseReadUrl, sql, opts) : undefined };
}

/** The pool writes go to: `sql` itself, or the primary of a read replica's pool. */
export function primaryOf(sql: Sql): Sql {
  return primaries.get(sql) ?? sql;
}

/** The pool's statement timeout, as Postgres reads it ("15000ms"). */
export function timeoutOf(sql: Sql): string {
  return `${timeoutMsOf(sql)}ms`;
}

export function timeoutMsOf(sql: Sql): number {
  return statementTimeouts.get(sql) ?? DEFAULT_STATEMENT_TIMEOUT_MS;
}
