// What the operations of the memory API take besides their typed input and the tenant: the
// dependencies the function (HTTP or MCP) was built with. Handlers take their dependencies, so
// tests build these from plain objects.
import type { Sql } from "../db.ts";
import type { Embedder } from "../embeddings.ts";
import type { Config } from "../env.ts";
import type { Llm } from "../llm.ts";

export interface MemoryDeps {
  sql: Sql;
  config: Config;
  embedder: Embedder;
  /** Consolidation's model, for the in-process drain kickWorker starts (none: rules only). */
  llm?: Llm;
  /** "Now" for decay predictions, purge dates and episode times; tests freeze it. */
  clock?: () => Date;
  /** Starts draining the queue after an operation queued work (episodes' embeddings, consolidation); none: the worker's own schedule. */
  kickWorker?: () => Promise<unknown>;
}

/** What the operations get: the dependencies, with the clock always set. */
export type ServiceDeps = MemoryDeps & { clock: () => Date };

/** The dependencies with the clock set (the real one unless the caller froze it). */
export function withClock(deps: MemoryDeps): ServiceDeps {
  return { ...deps, clock: deps.clock ?? (() => new Date()) };
}

/** What the searches (retrieve, memory.query) need: no model, no worker. */
export type SearchDeps = Pick<MemoryDeps, "sql" | "config" | "embedder" | "clock">;

/** An operation's result and how long its parts took, in ms (the HTTP adapters send it as Server-Timing). */
export interface Timed<T> {
  result: T;
  timing: Record<string, number>;
}
