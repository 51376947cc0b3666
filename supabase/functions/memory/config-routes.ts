// Deployment-wide configuration routes: memory categories and memory.query agents with their
// allowlists. Any signed-in caller lists them; only a service_role caller changes them (a user
// token gets 403), and it needs no tenant header since no tenant's data is involved.
//   GET /memory/categories          every category, its context mode, cap and the agents allowed it
//   PUT /memory/categories/{name}   create it (201) or change the fields given (200)
//   GET /memory/agents              every agent and its allowlist
//   GET /memory/agents/{agent}      one agent (404 unknown)
//   PUT /memory/agents/{agent}      set its allowlist (201 new agent, 200 changed); unknown category → 400
import { chargeRequest, type Tx } from "../_shared/db.ts";
import { withRole } from "../_shared/db-role.ts";
import { HttpError, json, methodNotAllowed, parseJsonBody } from "../_shared/http.ts";
import { noRoute } from "../_shared/app.ts";
import { listAgents, listCategories, loadAllowlist, upsertAgent, upsertCategory } from "../_shared/memory-config.ts";
import { agentName, categoryName } from "../_shared/schemas.ts";
import type { ConfigCaller } from "../_shared/auth.ts";
import type { ServiceDeps } from "../_shared/services/deps.ts";
import { AgentUpsert, CategoryUpsert } from "../_shared/memories/schemas.ts";
import { type MemoryApp, noQuery, parsePathParam } from "./routing.ts";

/** The paths this module answers (the handler authenticates them without a tenant). */
export const CONFIG_PATH = /^\/memory\/(agents|categories)(\/|$)/;

function requireServiceRole(admin: ConfigCaller): void {
  if (admin.role !== "service_role") {
    throw new HttpError(
      403,
      "forbidden_role",
      "agents and categories are deployment-wide configuration: change them with the service_role key",
    );
  }
}

/** Registered before the memory routes: every CONFIG_PATH is answered here, or is a 404. */
export function registerConfigRoutes(app: MemoryApp, deps: ServiceDeps): void {
  const { sql, config } = deps;
  // A user's reads are charged to its tenant's read bucket, as every GET memory/* is
  // (docs/operations.md#rate-limits); they ran uncharged, the one unlimited read of the API.
  const read = async <T>(admin: ConfigCaller, fn: (tx: Tx) => Promise<T>) => {
    if (admin.tenantId) await chargeRequest(sql, { tenantId: admin.tenantId, actor: admin.actor });
    return await withRole(sql, admin.role, admin.actor, fn);
  };

  app.get("/memory/categories", async (c) => {
    noQuery(c);
    return json({ categories: await read(c.get("admin"), listCategories) });
  });

  app.put("/memory/categories/:name", async (c) => {
    requireServiceRole(c.get("admin"));
    const name = parsePathParam(c, "name", categoryName, "category name");
    const body = await parseJsonBody(c.req.raw, CategoryUpsert, config.maxBodyBytes);
    const result = await withRole(sql, "service_role", c.get("admin").actor, (tx) => upsertCategory(tx, name, body));
    return json(result, result.created ? 201 : 200);
  });

  app.get("/memory/agents", async (c) => {
    noQuery(c);
    return json({ agents: await read(c.get("admin"), listAgents) });
  });

  app.get("/memory/agents/:agent", async (c) => {
    const agent = parsePathParam(c, "agent", agentName, "agent name");
    noQuery(c);
    const categories = await read(c.get("admin"), (tx) => loadAllowlist(tx, agent));
    if (categories.length === 0) throw new HttpError(404, "unknown_agent", `agent '${agent}' has no memory allowlist`);
    return json({ agent, categories });
  });

  app.put("/memory/agents/:agent", async (c) => {
    requireServiceRole(c.get("admin"));
    const agent = parsePathParam(c, "agent", agentName, "agent name");
    const body = await parseJsonBody(c.req.raw, AgentUpsert, config.maxBodyBytes);
    const result = await withRole(
      sql,
      "service_role",
      c.get("admin").actor,
      (tx) => upsertAgent(tx, agent, body.categories),
    );
    return json(result, result.created ? 201 : 200);
  });

  // Another method on the lists is a 405; any other method or path under them is no route, never
  // read as a memory id.
  for (const base of ["/memory/agents", "/memory/categories"]) {
    app.all(base, () => {
      throw methodNotAllowed(["GET"]);
    });
    app.all(`${base}/*`, (c) => {
      throw noRoute(app, c.req.method, c.req.path);
    });
  }
}
