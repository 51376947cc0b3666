// memory-retrieve. Two modes, chosen by path (the schemas: _shared/retrieval/schemas.ts):
//
// POST /memory-retrieve         retrieval before a turn: the `## Relevant Memories` block
// POST /memory-retrieve/query   memory.query: agent-scoped, category allowlists
//
// Both are adapters over _shared/services/ (retrieval.ts, memory-query.ts), which the MCP server
// shares. Everything a request writes happens in its one tenant transaction, after validation, so
// a 4xx writes nothing.
import type { Context } from "hono";
import { setMetric } from "hono/timing";
import { createFunctionApp, fetchHandler, type FunctionEnv } from "../_shared/app.ts";
import { type Caller, requireCaller } from "../_shared/auth.ts";
import { poolsFor } from "../_shared/db.ts";
import { createEmbedder } from "../_shared/embeddings.ts";
import { loadConfig } from "../_shared/env.ts";
import { json, methodNotAllowed, parseJsonBody } from "../_shared/http.ts";
import { rateLimit } from "../_shared/rate-limit.ts";
import { QueryRequest, RetrieveRequest } from "../_shared/retrieval/schemas.ts";
import type { SearchDeps, Timed } from "../_shared/services/deps.ts";
import { queryMemories } from "../_shared/services/memory-query.ts";
import { retrieve } from "../_shared/services/retrieval.ts";

export type RetrieveDeps = SearchDeps;
type Env = FunctionEnv<{ caller: Caller }>;

export function defaultDeps(): RetrieveDeps {
  const config = loadConfig();
  return {
    config,
    ...poolsFor(config, "memory-retrieve"),
    embedder: createEmbedder(config),
  };
}

/** The operation's result as JSON, its parts' durations as Server-Timing. */
function timed<T>(c: Context<Env>, { result, timing }: Timed<T>): Response {
  for (const [name, ms] of Object.entries(timing)) setMetric(c, name, ms);
  return json(result);
}

export function createHandler(deps: RetrieveDeps): (req: Request) => Promise<Response> {
  const app = createFunctionApp<{ caller: Caller }>();
  app.use(rateLimit(() => "read"));
  const caller = requireCaller(deps.config, deps.sql);
  const max = deps.config.maxBodyBytes;
  app.post(
    "/memory-retrieve",
    caller,
    async (c) => timed(c, await retrieve(deps, c.get("caller"), await parseJsonBody(c.req.raw, RetrieveRequest, max))),
  );
  app.post(
    "/memory-retrieve/query",
    caller,
    async (c) =>
      timed(c, await queryMemories(deps, c.get("caller"), await parseJsonBody(c.req.raw, QueryRequest, max))),
  );
  for (const path of ["/memory-retrieve", "/memory-retrieve/query"]) {
    app.all(path, () => {
      throw methodNotAllowed(["POST"]);
    });
  }
  return fetchHandler(app);
}
