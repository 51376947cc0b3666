// The graph routes of the `memory` function (docs/graph.md), thin adapters over _shared/ services:
//   POST /memory/episodes                       store a batch of messages as episodes (no LLM)
//   POST /memory/sessions/{session_id}/end      end a session: its consolidation is queued, once
//   GET  /memory/entities                       ?q=&type=&limit= the tenant's entities
//   GET  /memory/entities/{id}                  profile, facts newest first, timeline of episodes
// Registered by handler.ts before /memory/{id}. Every request runs as the tenant (RLS).
import type { Hono } from "hono";
import type { Sql } from "../_shared/db.ts";
import { withTenant } from "../_shared/db.ts";
import type { Embedder } from "../_shared/embeddings.ts";
import { assertNotInFuture, EpisodeBatchRequest, ingestEpisodes } from "../_shared/episodes.ts";
import type { Config } from "../_shared/env.ts";
import { HttpError, json, parseJsonBody, validate } from "../_shared/http.ts";
import { getJob, runInBackground } from "../_shared/jobs.ts";
import { sessionId } from "../_shared/schemas.ts";
import { endSessions } from "../_shared/sessions.ts";
import { entityProfile, listEntities } from "./entities.ts";
import { type Env, optionalBody, parseQuery, parseUuidParam, who } from "./routing.ts";
import { EndSessionRequest, EntityListQuery } from "./schemas.ts";

export interface GraphRouteDeps {
  sql: Sql;
  config: Config;
  embedder: Embedder;
  clock: () => Date;
  kickWorker?: () => Promise<unknown>;
}

export function registerGraphRoutes(app: Hono<Env>, deps: GraphRouteDeps): void {
  const { sql, config, embedder } = deps;
  const kick = () => {
    if (deps.kickWorker) runInBackground(deps.kickWorker, "memory worker kick");
  };

  app.post("/memory/episodes", async (c) => {
    const batch = await parseJsonBody(c.req.raw, EpisodeBatchRequest, config.maxBodyBytes);
    assertNotInFuture(batch, deps.clock());
    const tenant = who(c);
    // The local embedder costs microseconds: embed now. A remote one is a queued job, off this path.
    const result = await withTenant(sql, tenant, (tx) =>
      ingestEpisodes(tx, { tenantId: tenant.tenantId, root: config.namespaceRoot, batch, embedder: embedder.provider === "local" ? embedder : undefined }),
      { threadId: batch.thread_id });
    if (result.embed_job_id || result.ended_sessions.length > 0) kick();
    return json(result, result.stored > 0 ? 201 : 200);
  });

  app.post("/memory/sessions/:session_id/end", async (c) => {
    const id = validate(sessionId, c.req.param("session_id"), "session id");
    await optionalBody(c.req.raw, EndSessionRequest, config.maxBodyBytes);
    const result = await withTenant(sql, who(c), async (tx) => {
      const [session] = await tx<{ id: string }[]>`select id from public.memory_sessions where session_id = ${id}`;
      if (!session) throw new HttpError(404, "not_found", `no episodes were stored for session ${id}`);
      const [ended] = await endSessions(tx, [session.id], "explicit");
      const job = ended?.job_id ? await getJob(tx, ended.job_id) : undefined;
      return {
        session_id: id,
        ended_now: ended?.ended_now ?? false,
        job_id: job?.id ?? null,
        job_status: job?.status ?? null,
        deduplicated: !(ended?.ended_now ?? false),
      };
    });
    if (result.ended_now) kick();
    return json(result, 202);
  });

  app.get("/memory/entities", async (c) => {
    const q = parseQuery(c, EntityListQuery);
    const entities = await withTenant(sql, who(c), (tx) => listEntities(tx, q));
    return json({ entities });
  });

  app.get("/memory/entities/:id", async (c) => {
    const id = parseUuidParam(c, "id", "entity id");
    const profile = await withTenant(sql, who(c), (tx) => entityProfile(tx, id));
    if (!profile) throw new HttpError(404, "not_found", `entity ${id} not found`);
    return json(profile);
  });
}
