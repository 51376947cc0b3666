// The `memory` function: what a person or the agent calls to manage memories.
// Routes (Supabase passes the path as /memory/...; /functions/v1/memory/... is accepted too):
//   POST /memory/remember            user-stated fact: priority highest, never decays; a duplicate (case, spacing aside) → 200, held as it is
//   GET  /memory                     list with filters, keyset pagination (created_at desc, id desc)
//   GET  /memory/weak                what will decay soon (weak_facts)
//   GET  /memory/stats               counts by type/namespace/state/validity/pinned, relations, history
//   GET  /memory/export              ?format=json|markdown, soft-deleted memories included and flagged
//   GET  /memory/{id}                one memory
//   GET  /memory/{id}/history        its audit rows, newest first
//   GET  /memory/{id}/explain        supersede chain, typed edges, source episodes, entities, history, decay outlook
//   POST /memory/{id}/correct        new memory supersedes it (+ 'supersedes' relation); 409 if already replaced
//   POST /memory/{id}/forget         soft delete; purged after the grace period
//   POST /memory/{id}/restore        undo forget (or an invalidation that was not a supersede)
//   POST /memory/{id}/pin|confirm    protected from decay (strength 1.0); /unpin undoes it
//   POST /memory/usage               which of the memories it was given an agent used (docs/context.md#usage-feedback)
//   GET|PUT /memory/categories[/{name}], /memory/agents[/{agent}]   configuration (config-routes.ts)
//   POST /memory/episodes, POST /memory/sessions/{id}/end, GET /memory/entities[/{id}]: graph memory
//   POST /memory/consolidate|reindex, /memory/contradictions[/{id}/resolve], /memory/proposals[/{id}[/accept|reject]],
//   PUT|GET /memory/checkpoints/{thread_id}: the background work (background-routes.ts, docs/consolidation.md)
//   POST|GET /memory/agent-tokens, POST /memory/agent-tokens/{id}/revoke: agents' credentials
// GET /memory and GET /memory/{id} take as_of: what was held at that instant.
// The routes (routes.ts) are adapters over _shared/services/, which the MCP server (memory-mcp)
// shares. Every request is one or two tenant transactions (withTenant → RLS): another tenant's id
// is simply not found, a 404 like an unknown id, so ids cannot be probed. History is written by
// the database triggers, never here.
import { createFunctionApp, fetchHandler } from "../_shared/app.ts";
import { authenticate, authenticateConfigCaller } from "../_shared/auth.ts";
import { rateLimit } from "../_shared/rate-limit.ts";
import { type MemoryDeps, withClock } from "../_shared/services/deps.ts";
import { registerBackgroundRoutes } from "./background-routes.ts";
import { memoryDepsFromEnv } from "../_shared/worker-deps.ts";
import { CONFIG_PATH, registerConfigRoutes } from "./config-routes.ts";
import { registerMemoryRoutes } from "./routes.ts";
import type { Env } from "./routing.ts";

export type { MemoryDeps };

/** Production dependencies from the environment (index.ts; the local functions server brings its own). */
export const defaultDeps = (): MemoryDeps => memoryDepsFromEnv("devai-memory:memory");

export function createHandler(deps: MemoryDeps): (req: Request) => Promise<Response> {
  const app = createFunctionApp<Env["Variables"]>();
  // Rate limits: reads and writes are charged to the tenant's own buckets (rate-limit.ts); a
  // consolidation run on demand (model calls, a search per memory of its pool) is a heavy one.
  app.use(
    rateLimit((req, path) =>
      req.method === "GET" ? "read" : /\/memory\/consolidate\/?$/.test(path) ? "heavy" : "write"
    ),
  );
  // Configuration is deployment-wide (no tenant); everything else acts for the caller's tenant.
  app.use(async (c, next) => {
    if (CONFIG_PATH.test(c.req.path)) c.set("admin", await authenticateConfigCaller(c.req.raw, deps.config, deps.sql));
    else c.set("caller", await authenticate(c.req.raw, deps.config, deps.sql));
    await next();
  });
  const services = withClock(deps);
  registerConfigRoutes(app, services);
  // Before the memory routes: /memory/{id} would take their fixed paths.
  registerBackgroundRoutes(app, services);
  registerMemoryRoutes(app, services);
  return fetchHandler(app);
}
