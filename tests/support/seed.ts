// Seeding for handler tests: fresh tenants (random uuids) and memories embedded with the local
// embedder, inserted as the database owner (RLS bypassed on purpose: seeding is not under test).
// The history/change-log triggers still run, so seeded rows appear in memory_change_log.
import { createSql, type Sql, toVectorLiteral } from "../../supabase/functions/_shared/db.ts";
import { embedLocally } from "../../supabase/functions/_shared/embeddings.ts";
import { LOCAL_EMBEDDING_MODEL } from "../../supabase/functions/_shared/env.ts";
import { flushSearchWrites } from "../../supabase/functions/_shared/retrieval/write-behind.ts";
import { testDatabaseUrl } from "./config.ts";
import { runningServerPools } from "./server_pools.ts";

export function newTenant(): string {
  return crypto.randomUUID();
}

/** One pool per test file; close it in the last test or with `await sql.end()`. */
export function testSql(max = 4): Sql {
  return createSql(testDatabaseUrl(), { max, applicationName: "devai-memory-tests" });
}

export interface SeedMemory {
  /** Defaults to a random uuid; a chosen one places the memory in id order (lock-order tests). */
  id?: string;
  content: string;
  namespace: string;
  memory_type?: "semantic" | "episodic" | "procedural";
  priority?: "highest" | "high" | "medium" | "low";
  source?: string | null;
  strength?: number;
  importance?: number;
  pinned?: boolean;
  is_valid?: boolean;
  state?: "active" | "soft_deleted";
  metadata?: Record<string, unknown>;
  session_id?: string | null;
  access_count?: number;
  last_accessed_at?: Date;
  updated_at?: Date;
  /** Defaults to the local embedding of content; pass a vector to control similarity exactly. */
  embedding?: number[] | null;
  embedding_model?: string;
}

export interface SeededMemory extends SeedMemory {
  id: string;
}

/** Inserts memories for a tenant; `threadId` is the revision thread the change log records. */
export async function seedMemories(
  sql: Sql,
  tenantId: string,
  rows: SeedMemory[],
  threadId = "default",
): Promise<SeededMemory[]> {
  const out: SeededMemory[] = [];
  await sql.begin(async (tx) => {
    await tx`select set_config('memory.actor', 'test:seed', true), set_config('memory.thread_id', ${threadId}, true)`;
    for (const m of rows) {
      const embedding = m.embedding === undefined ? embedLocally(m.content) : m.embedding;
      const state = m.state ?? "active";
      const [row] = await tx<{ id: string }[]>`
        insert into public.devai_memories
          (id, owner_id, content, embedding, embedding_model, memory_type, namespace, priority, source, strength,
           base_strength, importance, pinned, is_valid, state, purge_at, metadata, session_id, access_count,
           last_accessed_at, updated_at)
        values
          (coalesce(${m.id ?? null}::uuid, gen_random_uuid()), ${tenantId}, ${m.content},
           ${embedding ? toVectorLiteral(embedding) : null}::extensions.vector,
           ${embedding ? (m.embedding_model ?? LOCAL_EMBEDDING_MODEL) : null},
           ${m.memory_type ?? "semantic"}, ${m.namespace}, ${m.priority ?? "medium"}, ${m.source ?? null},
           ${m.strength ?? 1}, ${m.strength ?? 1}, ${m.importance ?? 3}, ${m.pinned ?? false}, ${m.is_valid ?? true},
           ${state}, ${state === "soft_deleted" ? new Date(Date.now() + 30 * 86400_000) : null},
           ${tx.json((m.metadata ?? {}) as never)}, ${m.session_id ?? null}, ${m.access_count ?? 0},
           ${m.last_accessed_at ?? new Date()}, ${m.updated_at ?? new Date()})
        returning id`;
      out.push({ ...m, id: row!.id });
    }
  });
  return out;
}

export async function seedMemory(
  sql: Sql,
  tenantId: string,
  row: SeedMemory,
  threadId = "default",
): Promise<SeededMemory> {
  return (await seedMemories(sql, tenantId, [row], threadId))[0]!;
}

/** Links two memories of a tenant (memory_relations), e.g. for the relation boost. */
export async function seedRelation(
  sql: Sql,
  tenantId: string,
  fromId: string,
  toId: string,
  strength: number,
  relationType = "related_to",
): Promise<void> {
  await sql`insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength)
            values (${tenantId}, ${fromId}, ${toId}, ${relationType}, ${strength})`;
}

/** Counts of what a request may have written for a tenant: to assert "nothing written". */
export interface TenantWrites {
  events: number;
  accessTotal: number;
  history: number;
  memories: number;
}

export async function tenantWrites(sql: Sql, tenantId: string): Promise<TenantWrites> {
  // Searches' writes wait behind their answers (docs/operations.md#write-behind-reinforcement-and-search-events),
  // on this pool or a test server's: count them too.
  for (const pool of [sql, ...runningServerPools]) await flushSearchWrites(pool);
  const [row] = await sql<{ events: number; access_total: number; history: number; memories: number }[]>`
    select (select count(*)::int from public.memory_events where owner_id = ${tenantId}) as events,
           (select coalesce(sum(access_count), 0)::int from public.devai_memories where owner_id = ${tenantId}) as access_total,
           (select count(*)::int from public.memory_history where owner_id = ${tenantId}) as history,
           (select count(*)::int from public.devai_memories where owner_id = ${tenantId}) as memories`;
  return { events: row!.events, accessTotal: row!.access_total, history: row!.history, memories: row!.memories };
}
