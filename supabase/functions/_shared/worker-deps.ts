// The process-wide dependencies of the functions, built once from the environment in each
// index.ts: those that write memories (memory-extract, memory-dedup, memory-compact,
// memory-worker), and the memory API's (memory, memory-mcp), which also drain the queue after
// they queued work.
import { createSql, poolOptions, poolsFor } from "./db.ts";
import { createEmbedder } from "./embeddings.ts";
import { loadConfig } from "./env.ts";
import { createLlm } from "./llm.ts";
import { drainQueue, type WorkerDeps } from "./drain-queue.ts";
import { KICK_MAX_JOBS } from "./drain-kick.ts";
import type { MemoryDeps } from "./services/deps.ts";

/** `applicationName` names the function's connections in pg_stat_activity. */
export function workerDepsFromEnv(applicationName: string): WorkerDeps {
  const config = loadConfig();
  return {
    sql: createSql(config.databaseUrl, poolOptions(config, applicationName)),
    config,
    embedder: createEmbedder(config),
    llm: createLlm(config),
  };
}

/**
 * The memory API's dependencies: the above, a read replica's pool when SUPABASE_DB_READ_URL is set
 * (its reads go there, docs/operations.md#read-replicas), and a drain of the queue after an
 * operation queued work (on the primary).
 */
export function memoryDepsFromEnv(applicationName: string): MemoryDeps {
  const config = loadConfig();
  const deps: MemoryDeps = {
    config,
    ...poolsFor(config, applicationName),
    embedder: createEmbedder(config),
    llm: createLlm(config),
  };
  deps.kickWorker = () => drainQueue(deps, { maxJobs: KICK_MAX_JOBS });
  return deps;
}
