// The graph operations of the memory API (docs/graph.md): store a batch of messages as episodes (no
// LLM), end a session (its consolidation is queued, once), list the tenant's entities and one
// entity's profile. Every operation runs as the tenant (RLS).
import { type TenantContext, withTenant } from "../db.ts";
import { assertNotInFuture, type EpisodeBatchRequest, type EpisodeBatchResult, ingestEpisodes } from "../episodes.ts";
import { HttpError } from "../http.ts";
import { getJob } from "../jobs.ts";
import { type EntityListPage, type EntityProfile, entityProfile, listEntities } from "../memories/entities.ts";
import type { EntityListQuery } from "../memories/schemas.ts";
import { endSessions } from "../sessions.ts";
import { kickWorker, type ServiceDeps } from "./deps.ts";

/** Stores messages as episodes; embeddings inline (local embedder) or as a queued job. */
export async function storeEpisodes(
  deps: ServiceDeps,
  tenant: TenantContext,
  batch: EpisodeBatchRequest,
): Promise<EpisodeBatchResult> {
  const { sql, config, embedder } = deps;
  assertNotInFuture(batch, deps.clock());
  // The local embedder costs microseconds: embed in the request. A remote one is a queued job, off this path.
  const result = await withTenant(
    sql,
    tenant,
    (tx) =>
      ingestEpisodes(tx, {
        tenantId: tenant.tenantId,
        root: config.namespaceRoot,
        batch,
        embedder: embedder.provider === "local" ? embedder : undefined,
      }),
    { threadId: batch.thread_id },
  );
  if (result.embed_job_id || result.ended_sessions.length > 0) kickWorker(deps);
  return result;
}

export interface EndedSession {
  session_id: string;
  ended_now: boolean;
  job_id: string | null;
  job_status: string | null;
  deduplicated: boolean;
}

/** Ends a session: its one consolidation job is queued (again: the same job, deduplicated). */
export async function endSession(deps: ServiceDeps, tenant: TenantContext, id: string): Promise<EndedSession> {
  const result = await withTenant(deps.sql, tenant, async (tx) => {
    const [session] = await tx<{ id: string }[]>`select id from public.memory_sessions where session_id = ${id}`;
    if (!session) {
      // Sessions exist through their episodes: say how one comes to be (memory-extract alone makes none).
      throw new HttpError(
        404,
        "not_found",
        `no episodes were stored for session ${id}: store its messages with POST memory/episodes first`,
      );
    }
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
  if (result.ended_now) kickWorker(deps);
  return result;
}

/** A page of the tenant's entities by mentions, or those matching q (plain text, never a pattern). */
export async function entities(
  deps: ServiceDeps,
  tenant: TenantContext,
  q: EntityListQuery,
): Promise<EntityListPage> {
  return await withTenant(deps.sql, tenant, (tx) => listEntities(tx, q));
}

/** One entity: what it is, the facts that mention it (newest first), the episodes that named it. */
export async function entityInfo(deps: ServiceDeps, tenant: TenantContext, id: string): Promise<EntityProfile> {
  const profile = await withTenant(deps.sql, tenant, (tx) => entityProfile(tx, id));
  if (!profile) throw new HttpError(404, "not_found", `entity ${id} not found`);
  return profile;
}
