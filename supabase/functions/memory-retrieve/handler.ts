// memory-retrieve. Two modes, chosen by path (documented in schemas.ts):
//
// POST /memory-retrieve         retrieval before a turn: the `## Relevant Memories` block (retrieve.ts)
// POST /memory-retrieve/query   memory.query: agent-scoped, category allowlists (query.ts)
//
// Everything a request writes happens in its one tenant transaction, after validation, so a 4xx
// writes nothing.
import { authenticate } from "../_shared/auth.ts";
import { createSql, type Sql } from "../_shared/db.ts";
import { createEmbedder, type Embedder } from "../_shared/embeddings.ts";
import { type Config, loadConfig } from "../_shared/env.ts";
import { handleErrors, methodNotAllowed } from "../_shared/http.ts";
import { routeOf } from "../_shared/routes.ts";
import { limitRequests } from "../_shared/rate-limit.ts";
import { runQuery } from "./query.ts";
import { runRetrieve } from "./retrieve.ts";

export interface RetrieveDeps {
  sql: Sql;
  config: Config;
  embedder: Embedder;
  /** Accepted for the handlers' common dependency shape; retrieval reads time from the database. */
  clock?: () => Date;
}

export function defaultDeps(): RetrieveDeps {
  const config = loadConfig();
  return {
    config,
    sql: createSql(config.databaseUrl, { max: config.dbPoolMax, applicationName: "memory-retrieve", statementTimeoutMs: config.dbStatementTimeoutMs }),
    embedder: createEmbedder(config),
  };
}


export function createHandler(deps: RetrieveDeps): (req: Request) => Promise<Response> {
  return handleErrors(limitRequests(() => "read", async (req) => {
    const route = routeOf(req, "memory-retrieve", ["", "query"]);
    if (req.method !== "POST") throw methodNotAllowed(["POST"]);
    const caller = await authenticate(req, deps.config);
    return route === "query" ? await runQuery(deps, caller, req) : await runRetrieve(deps, caller, req);
  }));
}
