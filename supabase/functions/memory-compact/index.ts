// Wires the handler to Deno.serve with the process-wide dependencies (see handler.ts).
import { createSql } from "../_shared/db.ts";
import { createEmbedder } from "../_shared/embeddings.ts";
import { loadConfig } from "../_shared/env.ts";
import { createLlm } from "../_shared/llm.ts";
import { createHandler } from "./handler.ts";

const config = loadConfig();
Deno.serve(createHandler({
  sql: createSql(config.databaseUrl, { max: config.dbPoolMax, applicationName: "memory-compact" }),
  config,
  embedder: createEmbedder(config),
  llm: createLlm(config),
}));
