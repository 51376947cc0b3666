// The memory routes: thin adapters that read the request (path, query, body: validated here) and
// answer what the operation in _shared/services/ returns. Registered in this order on purpose:
// fixed paths (/memory/stats, /memory/episodes, …) before /memory/{id}, which would take them.
import { EpisodeBatchRequest } from "../_shared/episodes.ts";
import { HttpError, json, methodNotAllowed, parseJsonBody } from "../_shared/http.ts";
import {
  AgentTokenRequest,
  CorrectRequest,
  EndSessionRequest,
  EntityListQuery,
  ExportQuery,
  ForgetRequest,
  HistoryQuery,
  LifecycleRequest,
  ListQuery,
  MemoryQuery,
  RememberRequest,
  StatsQuery,
  WeakQuery,
} from "../_shared/memories/schemas.ts";
import { sessionId } from "../_shared/schemas.ts";
import { UsageRequest } from "../_shared/context/schemas.ts";
import { reportUsage } from "../_shared/context/usage.ts";
import type { ServiceDeps } from "../_shared/services/deps.ts";
import { issueToken, listTokens, revokeToken } from "../_shared/services/agent-tokens.ts";
import { endSession, entities, entityInfo, storeEpisodes } from "../_shared/services/graph.ts";
import { confirm, forget, pin, restore, unpin } from "../_shared/services/memory-lifecycle.ts";
import {
  explainFact,
  getMemory,
  listMemories,
  memoryHistory,
  stats,
  weakFacts,
} from "../_shared/services/memory-reads.ts";
import { correct, remember } from "../_shared/services/memory-writes.ts";
import { exportResponse } from "../_shared/services/memory-export.ts";
import {
  type MemoryApp,
  noQuery,
  optionalBody,
  parseId,
  parsePathParam,
  parseQuery,
  parseUuidParam,
  who,
} from "./routing.ts";

/** Paths with one method: another method is a 405 naming it, never read as a memory id. */
const FIXED_PATHS: [string, string[]][] = [
  ["/memory", ["GET"]],
  ["/memory/entities", ["GET"]],
  ["/memory/remember", ["POST"]],
  ["/memory/weak", ["GET"]],
  ["/memory/stats", ["GET"]],
  ["/memory/export", ["GET"]],
  ["/memory/agent-tokens", ["GET", "POST"]],
  ["/memory/usage", ["POST"]],
  ["/memory/episodes", ["POST"]],
];

export function registerMemoryRoutes(app: MemoryApp, deps: ServiceDeps): void {
  const max = deps.config.maxBodyBytes;

  // Graph (docs/graph.md): episodes, sessions, entities.
  app.post("/memory/episodes", async (c) => {
    const result = await storeEpisodes(deps, who(c), await parseJsonBody(c.req.raw, EpisodeBatchRequest, max));
    return json(result, result.stored > 0 ? 201 : 200);
  });
  app.post("/memory/sessions/:session_id/end", async (c) => {
    const id = parsePathParam(c, "session_id", sessionId, "session id");
    await optionalBody(c.req.raw, EndSessionRequest, max);
    return json(await endSession(deps, who(c), id), 202);
  });
  app.get("/memory/entities", async (c) => json(await entities(deps, who(c), parseQuery(c, EntityListQuery))));
  app.get(
    "/memory/entities/:id",
    async (c) => {
      const id = parseUuidParam(c, "id", "entity id");
      noQuery(c);
      return json(await entityInfo(deps, who(c), id));
    },
  );

  // Agent tokens (docs/auth.md#agent-tokens).
  app.post("/memory/agent-tokens", async (c) => {
    return json(await issueToken(deps, c.get("caller"), await parseJsonBody(c.req.raw, AgentTokenRequest, max)), 201);
  });
  app.get("/memory/agent-tokens", async (c) => {
    noQuery(c);
    return json({ tokens: await listTokens(deps, c.get("caller")) });
  });
  app.post("/memory/agent-tokens/:id/revoke", async (c) => {
    const id = parseUuidParam(c, "id", "agent token id");
    await optionalBody(c.req.raw, EndSessionRequest, max);
    return json(await revokeToken(deps, c.get("caller"), id));
  });

  // What the user states.
  app.post("/memory/remember", async (c) => {
    const result = await remember(deps, who(c), await parseJsonBody(c.req.raw, RememberRequest, max));
    return json(result, result.created ? 201 : 200);
  });
  app.post("/memory/:id/correct", async (c) => {
    const id = parseId(c);
    const result = await correct(deps, who(c), id, await parseJsonBody(c.req.raw, CorrectRequest, max));
    return json(result, result.created ? 201 : 200);
  });

  // What the agent used of what it was given (living context).
  app.post(
    "/memory/usage",
    async (c) => json(await reportUsage(deps, c.get("caller"), await parseJsonBody(c.req.raw, UsageRequest, max))),
  );

  // The tenant's memories as a whole.
  app.get("/memory", async (c) => json(await listMemories(deps, who(c), parseQuery(c, ListQuery))));
  app.get("/memory/weak", async (c) => json(await weakFacts(deps, who(c), parseQuery(c, WeakQuery))));
  app.get("/memory/stats", async (c) => json(await stats(deps, who(c), parseQuery(c, StatsQuery))));
  app.get("/memory/export", async (c) => {
    const q = parseQuery(c, ExportQuery);
    // The files themselves when the client asks for an archive (`curl … | tar -x`); else JSON.
    const accept = c.req.header("accept") ?? "";
    const wantsTar = /\bapplication\/(x-)?tar\b/i.test(accept);
    // An archive asked for without format=markdown was answered JSON, which tar -x cannot read.
    if (wantsTar && q.format !== "markdown" && !/\bapplication\/json\b|\*\/\*|\bapplication\/\*/i.test(accept)) {
      throw new HttpError(400, "invalid_request", "a tar archive holds the Markdown export: add format=markdown", [
        { path: ["format"], message: "Accept: application/x-tar needs format=markdown" },
      ]);
    }
    return await exportResponse(deps, who(c), q, wantsTar);
  });
  for (const [path, allowed] of FIXED_PATHS) {
    app.all(path, () => {
      throw methodNotAllowed(allowed);
    });
  }

  // One memory.
  app.get("/memory/:id", async (c) => {
    const id = parseId(c);
    return json(await getMemory(deps, who(c), id, parseQuery(c, MemoryQuery)));
  });
  app.get("/memory/:id/history", async (c) => {
    const id = parseId(c);
    return json(await memoryHistory(deps, who(c), id, parseQuery(c, HistoryQuery)));
  });
  app.get("/memory/:id/explain", async (c) => {
    const id = parseId(c);
    noQuery(c);
    return json(await explainFact(deps, who(c), id));
  });
  app.post("/memory/:id/forget", async (c) => {
    const id = parseId(c);
    return json(await forget(deps, who(c), id, await optionalBody(c.req.raw, ForgetRequest, max)));
  });
  for (
    const [action, operation] of [["restore", restore], ["pin", pin], ["confirm", confirm], ["unpin", unpin]] as const
  ) {
    app.post(`/memory/:id/${action}`, async (c) => {
      const id = parseId(c);
      return json(await operation(deps, who(c), id, await optionalBody(c.req.raw, LifecycleRequest, max)));
    });
  }
}
