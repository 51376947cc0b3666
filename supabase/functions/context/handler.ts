// The `context` function: living context for coding agents (docs/context.md). Thin routes over
// the services in _shared/context/ (what an MCP tool calls too):
//   POST /context/assemble   a tiered context of at most `budget` tokens from the coding signals
//   POST /context/predict    what a file opened, a branch checked out or an error will need; cached per session
// Supabase passes the path as /context/...; /functions/v1/context/... is accepted too.
import { Hono } from "hono";
import { authenticate, type Caller } from "../_shared/auth.ts";
import { assembleContext } from "../_shared/context/assemble.ts";
import { predictContext } from "../_shared/context/predict.ts";
import { AssembleRequest, PredictRequest } from "../_shared/context/schemas.ts";
import type { ContextDeps } from "../_shared/context/signals.ts";
import { createSql, type Sql } from "../_shared/db.ts";
import { createEmbedder, type Embedder } from "../_shared/embeddings.ts";
import { type Config, loadConfig } from "../_shared/env.ts";
import { handleErrors, HttpError, json, methodNotAllowed, parseJsonBody } from "../_shared/http.ts";
import { limitRequests } from "../_shared/rate-limit.ts";

export interface ContextHandlerDeps {
  sql: Sql;
  config: Config;
  embedder: Embedder;
  clock?: () => Date;
  defer?: (work: Promise<unknown>) => void;
}

/** Work after the answer: EdgeRuntime.waitUntil where the runtime has it, else detached (a failure is logged). */
function runAfterResponse(work: Promise<unknown>): void {
  const runtime = (globalThis as { EdgeRuntime?: { waitUntil(p: Promise<unknown>): void } }).EdgeRuntime;
  const logged = work.catch((err) => console.error(JSON.stringify({ level: "error", where: "context:after-response", error: String(err) })));
  if (runtime) runtime.waitUntil(logged);
}

export function defaultDeps(): ContextHandlerDeps {
  const config = loadConfig();
  return {
    config,
    sql: createSql(config.databaseUrl, { max: config.dbPoolMax, applicationName: "devai-memory:context", statementTimeoutMs: config.dbStatementTimeoutMs }),
    embedder: createEmbedder(config),
  };
}

const ROUTES = ["/context/assemble", "/context/predict"];

export function createHandler(deps: ContextHandlerDeps): (req: Request) => Promise<Response> {
  const services: ContextDeps = { ...deps, clock: deps.clock ?? (() => new Date()), defer: deps.defer ?? runAfterResponse };
  const app = new Hono<{ Bindings: { caller: Caller } }>({ strict: false });
  // Errors go to the outer handleErrors, the one place that shapes them (and logs 500s).
  app.onError((err) => {
    throw err;
  });
  app.notFound((c) => {
    throw new HttpError(404, "route_not_found", `no route for ${c.req.method} ${new URL(c.req.url).pathname}`);
  });
  app.post("/context/assemble", async (c) => {
    const body = await parseJsonBody(c.req.raw, AssembleRequest, deps.config.maxBodyBytes);
    return json(await assembleContext(services, c.env.caller, body));
  });
  app.post("/context/predict", async (c) => {
    const body = await parseJsonBody(c.req.raw, PredictRequest, deps.config.maxBodyBytes);
    return json(await predictContext(services, c.env.caller, body));
  });
  for (const path of ROUTES) {
    app.all(path, () => {
      throw methodNotAllowed(["POST"]);
    });
  }

  // Assembly reads (its reinforcement is retrieval's): the tenant's read bucket.
  return handleErrors(limitRequests(() => "read", async (req) => {
    const url = new URL(req.url);
    if (url.pathname.startsWith("/functions/v1/")) url.pathname = url.pathname.slice("/functions/v1".length);
    const caller = await authenticate(req, deps.config);
    return await app.fetch(new Request(url, req), { caller });
  }));
}
