// POST /memory/usage: which of the memories an agent was given it used (docs/context.md#usage-feedback).
// A thin route over _shared/context/usage.ts, the one implementation an MCP tool calls too.
import { UsageRequest } from "../_shared/context/schemas.ts";
import { reportUsage } from "../_shared/context/usage.ts";
import { json, parseJsonBody } from "../_shared/http.ts";
import type { MemoryApp, RouteDeps } from "./routing.ts";

export function registerUsageRoutes(app: MemoryApp, deps: RouteDeps): void {
  app.post("/memory/usage", async (c) => {
    const body = await parseJsonBody(c.req.raw, UsageRequest, deps.config.maxBodyBytes);
    return json(await reportUsage(deps, c.env.caller, body));
  });
}
