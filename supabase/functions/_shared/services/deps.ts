// What the operations of the memory API take besides their typed input and the tenant: the
// dependencies the function (HTTP or MCP) was built with. Handlers take their dependencies, so
// tests build these from plain objects.
import type { Sql } from "../db.ts";
import type { Embedder } from "../embeddings.ts";
import type { Config } from "../env.ts";
import type { Llm } from "../llm.ts";
import { kickDrain } from "../drain-kick.ts";
import type { DrainClock } from "../drain-deadline.ts";

export interface MemoryDeps {
  /** The primary: every write, and every read that must see the request's own writes. */
  sql: Sql;
  /** A read replica's pool (SUPABASE_DB_READ_URL, createReadSql): reads that may lag the primary. */
  readSql?: Sql;
  config: Config;
  embedder: Embedder;
  /** Consolidation's model, for the in-process drain kickWorker starts (none: rules only). */
  llm?: Llm;
  /** "Now" for decay predictions, purge dates and episode times; tests freeze it. */
  clock?: () => Date;
  /** The clock of `POST memory/consolidate`'s deadline (drain-deadline.ts; real time unless given): tests move it by hand. */
  deadlineClock?: DrainClock;
  /** Starts draining the queue after an operation queued work (episodes' embeddings, consolidation); none: the worker's own schedule. */
  kickWorker?: () => Promise<unknown>;
}

/** What the operations get: the dependencies, with the clock always set. */
export type ServiceDeps = MemoryDeps & { clock: () => Date };

/** The clock an operation reads: the real one unless the caller froze it. */
export function clockOf(deps: { clock?: () => Date }): () => Date {
  return deps.clock ?? (() => new Date());
}

/** The dependencies with the clock set (clockOf). */
export function withClock(deps: MemoryDeps): ServiceDeps {
  return { ...deps, clock: clockOf(deps) };
}

/** What the searches (retrieve, memory.query) need: no model, no worker. */
export type SearchDeps = Pick<MemoryDeps, "sql" | "readSql" | "config" | "embedder" | "clock">;

/** Where reads that may lag the primary go: the replica when there is one, else the primary. */
export function readPoolOf(deps: Pick<MemoryDeps, "sql" | "readSql">): Sql {
  return deps.readSql ?? deps.sql;
}

/** An operation's result and how long its parts took, in ms (the HTTP adapters send it as Server-Timing). */
export interface Timed<T> {
  result: T;
  timing: Record<string, number>;
}

/**
 * A read that may go to the replica, except that what the replica does not have yet (a memory the
 * caller has just written) is looked for on the primary before the answer is "not found".
 */
export async function readOwnWrite<T>(
  deps: Pick<MemoryDeps, "sql" | "readSql">,
  read: (sql: Sql) => Promise<T | undefined>,
): Promise<T | undefined> {
  const found = await read(readPoolOf(deps));
  return found !== undefined || readPoolOf(deps) === deps.sql ? found : await read(deps.sql);
}

/** Starts draining the queue after an operation queued work, outside the request, within the instance's bound (drain-kick.ts). */
export function kickWorker(deps: Pick<MemoryDeps, "kickWorker" | "config">, why = "memory worker kick"): void {
  if (deps.kickWorker) kickDrain(deps.kickWorker, why, deps.config.workerKickedDrains);
}
