// Living-context test helpers: the `context` and `memory` handlers on the test database with a
// controllable clock and captured after-response work, and seeding that links entities the way
// the write path does (rules over the content, metadata.files as file entities).
import { createHandler as createContextHandler } from "../../supabase/functions/context/handler.ts";
import { createHandler as createMemoryHandler } from "../../supabase/functions/memory/handler.ts";
import { createHandler as createRetrieveHandler } from "../../supabase/functions/memory-retrieve/handler.ts";
import { citedFileLinks, filesOf } from "../../supabase/functions/_shared/context/lineage.ts";
import { type Sql, withTenant } from "../../supabase/functions/_shared/db.ts";
import { localEmbedder } from "../../supabase/functions/_shared/embeddings.ts";
import { linkEntities, linkEntitiesByRules } from "../../supabase/functions/_shared/entities.ts";
import { userHeaders } from "./auth.ts";
import { testConfig } from "./config.ts";
import { callJson } from "./http.ts";
import { type SeededMemory, seedMemories, type SeedMemory } from "./seed.ts";

export const CONTEXT_URL = "http://localhost/functions/v1/context";
export const MEMORY_URL = "http://localhost/functions/v1/memory";

/** A clock the test moves by hand. */
export function manualClock(start = new Date("2026-11-24T10:00:00Z")) {
  let now = start.getTime();
  return {
    now: () => new Date(now),
    advance(seconds: number) {
      now += seconds * 1000;
    },
  };
}

// deno-lint-ignore no-explicit-any -- tests read answers of many shapes; each asserts what it reads
type Answer = { status: number; body: any };

export interface ContextApi {
  assemble(tenant: string, body: Record<string, unknown>): Promise<Answer>;
  predict(tenant: string, body: Record<string, unknown>): Promise<Answer>;
  usage(tenant: string, body: Record<string, unknown>): Promise<Answer>;
  stats(tenant: string): Promise<Answer>;
  retrieve(tenant: string, body: Record<string, unknown>): Promise<Answer>;
  /** Work the handler started after answering (the assembly's record, a stale prefetch's refresh): awaited, counted, emptied. */
  settle(): Promise<number>;
}

export function contextApi(sql: Sql, clock: () => Date = () => new Date()): ContextApi {
  const config = testConfig();
  const embedder = localEmbedder();
  // Work the handler runs after answering; a failure is kept for settle() to throw (never unhandled).
  const deferred: Promise<unknown>[] = [];
  const failures: unknown[] = [];
  const defer = (p: Promise<unknown>) => void deferred.push(p.catch((err) => failures.push(err)));
  const context = createContextHandler({ sql, config, embedder, clock, defer });
  const memory = createMemoryHandler({ sql, config, embedder, clock });
  const retrieve = createRetrieveHandler({ sql, config, embedder, clock });
  const post = (handler: typeof context, url: string) => async (tenant: string, body: Record<string, unknown>) =>
    await callJson(handler, url, { headers: await userHeaders(tenant), body });
  return {
    assemble: post(context, `${CONTEXT_URL}/assemble`),
    predict: post(context, `${CONTEXT_URL}/predict`),
    usage: post(memory, `${MEMORY_URL}/usage`),
    retrieve: post(retrieve, "http://localhost/functions/v1/memory-retrieve"),
    stats: async (tenant) =>
      await callJson(memory, `${MEMORY_URL}/stats`, { method: "GET", headers: await userHeaders(tenant) }),
    async settle() {
      const n = deferred.length;
      await Promise.all(deferred.splice(0));
      if (failures.length > 0) throw failures.splice(0)[0];
      return n;
    },
  };
}

/**
 * Seeds memories (as the database owner, like seed.ts) and links their entities as the write path
 * does: the rules over the content and metadata.files as file entities.
 */
export async function seedLinked(sql: Sql, tenant: string, rows: SeedMemory[]): Promise<SeededMemory[]> {
  const seeded = await seedMemories(sql, tenant, rows);
  await withTenant(sql, { tenantId: tenant, actor: "test:seed" }, async (tx) => {
    await linkEntitiesByRules(tx, seeded);
    await linkEntities(tx, seeded.flatMap((m) => citedFileLinks(m.id, filesOf(m.metadata))));
  });
  return seeded;
}

/** The project scope's namespace for test memories. */
export const ns = (project: string, topic = "notes") => `devai/project/${project}/${topic}`;
