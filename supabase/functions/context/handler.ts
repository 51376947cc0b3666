// The `context` function: living context for coding agents (docs/context.md). Thin routes over the
// operations of _shared/context/ (what an MCP tool calls too):
//   POST /context/assemble   a tiered context of at most `budget` tokens from the coding signals
//   POST /context/predict    what a file opened, a branch checked out or an error will need; cached per session
import { createFunctionApp, fetchHandler } from "../_shared/app.ts";
import { type Caller, requireCaller } from "../_shared/auth.ts";
import { assembleContext } from "../_shared/context/assemble.ts";
import { predictContext } from "../_shared/context/predict.ts";
import { AssembleRequest, PredictRequest } from "../_shared/context/schemas.ts";
import type { ContextDeps } from "../_shared/context/signals.ts";
import { createSql, poolOptions, type Sql } from "../_shared/db.ts";
import { createEmbedder, type Embedder } from "../_shared/embeddings.ts";
import { type Config, loadConfig } from "../_shared/env.ts";
import { json, methodNotAllowed, parseJsonBody } from "../_shared/http.ts";
import { runInBackground } from "../_shared/jobs.ts";
import { rateLimit } from "../_shared/rate-limit.ts";

export interface ContextHandlerDeps {
  sql: Sql;
  config: Config;
  embedder: Embedder;
  clock?: () => Date;
  /** Work after the answer (the assembly's record, a stale prediction's refresh); default runInBackground (jobs.ts). */
  defer?: (work: Promise<unknown>) => void;
}

export function defaultDeps(): ContextHandlerDeps {
  const config = loadConfig();
  return {
    config,
    sql: createSql(config.databaseUrl, poolOptions(config, "devai-memory:context")),
    embedder: createEmbedder(config),
  };
}

export function createHandler(deps: ContextHandlerDeps): (req: Request) => Promise<Response> {
  const services: ContextDeps = {
    ...deps,
    clock: deps.clock ?? (() => new Date()),
    defer: deps.defer ?? ((work) => runInBackground(() => work, "context record")),
  };
  const app = createFunctionApp<{ caller: Caller }>();
  // Assembly and prediction read (their reinforcement is retrieval's): the tenant's read bucket.
  app.use(rateLimit(() => "read"));
  const caller = requireCaller(deps.config, deps.sql);
  const max = deps.config.maxBodyBytes;
  app.post(
    "/context/assemble",
    caller,
    async (c) =>
      json(await assembleContext(services, c.get("caller"), await parseJsonBody(c.req.raw, AssembleRequest, max))),
  );
  app.post(
    "/context/predict",
    caller,
    async (c) =>
      json(await predictContext(services, c.get("caller"), await parseJsonBody(c.req.raw, PredictRequest, max))),
  );
  for (const path of ["/context/assemble", "/context/predict"]) {
    app.all(path, () => {
      throw methodNotAllowed(["POST"]);
    });
  }
  return fetchHandler(app);
}
