// The `memory` function: what a person or the agent calls to manage memories.
// Routes (Supabase passes the path as /memory/...; /functions/v1/memory/... is accepted too):
//   POST /memory/remember            user-stated fact: priority highest, never decays; exact duplicate → 200, no write
//   GET  /memory                     list with filters, keyset pagination (created_at desc, id desc)
//   GET  /memory/weak                what will decay soon (seed 003 weak_facts)
//   GET  /memory/stats               counts by type/namespace/state/validity/pinned, relations, history
//   GET  /memory/export              ?format=json|markdown, soft-deleted memories included and flagged
//   GET  /memory/{id}                one memory
//   GET  /memory/{id}/history        its audit rows, newest first
//   GET  /memory/{id}/explain        supersede chain, typed edges, source episodes, entities, history, decay outlook
//   POST /memory/{id}/correct        new memory supersedes it (+ 'supersedes' relation); 409 if already replaced
//   POST /memory/{id}/forget         soft delete; purged after the grace period
//   POST /memory/{id}/restore        undo forget (or an invalidation that was not a supersede)
//   POST /memory/{id}/pin|confirm    protected from decay (strength 1.0); /unpin undoes it
//   POST /memory/usage               which injected memories an agent used (usage-routes.ts)
//   GET|PUT /memory/categories[/{name}], /memory/agents[/{agent}]   configuration (config-routes.ts)
//   POST /memory/episodes, POST /memory/sessions/{id}/end, GET /memory/entities[/{id}]: graph-routes.ts
// GET /memory and GET /memory/{id} take as_of: what was held at that instant (as-of.ts).
// Every request is one or two tenant transactions (withTenant → RLS): another tenant's id is
// simply not found, a 404 like an unknown id, so ids cannot be probed. History is written by the
// database triggers, never here.
import { Hono } from "hono";
import { authenticate, authenticateConfigCaller } from "../_shared/auth.ts";
import { createSql } from "../_shared/db.ts";
import { drainQueue } from "../_shared/drain-queue.ts";
import { createEmbedder } from "../_shared/embeddings.ts";
import { loadConfig } from "../_shared/env.ts";
import { createLlm } from "../_shared/llm.ts";
import { registerGraphRoutes } from "./graph-routes.ts";
import { handleErrors, HttpError, methodNotAllowed } from "../_shared/http.ts";
import { limitRequests } from "../_shared/rate-limit.ts";
import { CONFIG_PATH, createConfigApp } from "./config-routes.ts";
import { registerLifecycleRoutes } from "./lifecycle-routes.ts";
import { registerCollectionRoutes, registerMemoryReadRoutes } from "./read-routes.ts";
import type { Env, MemoryDeps, RouteDeps } from "./routing.ts";
import { registerUsageRoutes } from "./usage-routes.ts";
import { registerWriteRoutes } from "./write-routes.ts";

export type { MemoryDeps };

/** Production dependencies from the environment (index.ts; the local functions server may reuse it). */
export function defaultDeps(): MemoryDeps {
  const config = loadConfig();
  const deps: MemoryDeps = {
    config,
    sql: createSql(config.databaseUrl, { max: config.dbPoolMax, applicationName: "devai-memory:memory", statementTimeoutMs: config.dbStatementTimeoutMs }),
    embedder: createEmbedder(config),
    llm: createLlm(config),
  };
  deps.kickWorker = () => drainQueue(deps, { maxJobs: 10 });
  return deps;
}

const FIXED_PATHS: [string, string[]][] = [
  ["/memory/remember", ["POST"]],
  ["/memory/weak", ["GET"]],
  ["/memory/stats", ["GET"]],
  ["/memory/export", ["GET"]],
  ["/memory/usage", ["POST"]],
];

export function createHandler(deps: MemoryDeps): (req: Request) => Promise<Response> {
  const routeDeps: RouteDeps = { ...deps, clock: deps.clock ?? (() => new Date()) };
  const app = new Hono<Env>({ strict: false });
  // Errors go to the outer handleErrors, the one place that shapes them (and logs 500s).
  app.onError((err) => {
    throw err;
  });
  app.notFound((c) => {
    throw new HttpError(404, "route_not_found", `no route for ${c.req.method} ${new URL(c.req.url).pathname}`);
  });
  // Fixed paths first: /memory/stats must never be read as the id "stats". Episodes, sessions and
  // entities (graph-routes.ts) too: /memory/:id would take their paths.
  registerGraphRoutes(app, routeDeps);
  registerWriteRoutes(app, routeDeps);
  registerUsageRoutes(app, routeDeps);
  registerCollectionRoutes(app, routeDeps);
  // A fixed path with another method is a 405 naming the right one, never read as a memory id.
  for (const [path, allowed] of FIXED_PATHS) {
    app.all(path, () => {
      throw methodNotAllowed(allowed);
    });
  }
  registerMemoryReadRoutes(app, routeDeps);
  registerLifecycleRoutes(app, routeDeps);
  const configApp = createConfigApp(routeDeps);

  // Rate limits: reads and writes are charged to the tenant's own buckets (rate-limit.ts).
  return handleErrors(limitRequests((req) => (req.method === "GET" ? "read" : "write"), async (req) => {
    const routed = normalizePath(req);
    if (CONFIG_PATH.test(new URL(routed.url).pathname)) {
      return await configApp.fetch(routed, { admin: await authenticateConfigCaller(req, deps.config) });
    }
    const caller = await authenticate(req, deps.config);
    return await app.fetch(routed, { caller });
  }));
}

/** The local server and some proxies keep the gateway prefix; route on /memory/... either way. */
function normalizePath(req: Request): Request {
  const url = new URL(req.url);
  if (!url.pathname.startsWith("/functions/v1/")) return req;
  url.pathname = url.pathname.slice("/functions/v1".length);
  return new Request(url, req);
}
