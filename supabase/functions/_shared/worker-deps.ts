// The process-wide dependencies of the functions that write memories (memory-extract,
// memory-dedup, memory-compact, memory-worker), built once from the environment in each index.ts.
import { createSql } from "./db.ts";
import { createEmbedder } from "./embeddings.ts";
import { loadConfig } from "./env.ts";
import { createLlm } from "./llm.ts";
import type { WorkerDeps } from "./drain-queue.ts";

/** `applicationName` names the function's connections in pg_stat_activity. */
export function workerDepsFromEnv(applicationName: string): WorkerDeps {
  const config = loadConfig();
  return {
    sql: createSql(config.databaseUrl, { max: config.dbPoolMax, applicationName, statementTimeoutMs: config.dbStatementTimeoutMs }),
    config,
    embedder: createEmbedder(config),
    llm: createLlm(config),
  };
}
