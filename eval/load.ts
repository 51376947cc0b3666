// Puts the dev set into the eval database the way an agent would: every memory through the
// public memory API (POST memory/remember; POST memory/{id}/correct for a memory that replaces
// another, so the supersede chain, its history and its relation are real), oldest first, one
// request at a time so the load order, and with it the database, is the same on every run.
import type { Sql } from "../supabase/functions/_shared/db.ts";
import { type EvalDataset, type EvalMemory, namespaceOf } from "./dataset.ts";
import { callFunction, type EvalContext } from "./methods/method.ts";

interface MemoryBody {
  created?: boolean;
  memory: { id: string };
}

export interface LoadedDataset {
  /** dataset id → the memory's uuid */
  uuidOf: Map<string, string>;
  /** uuid → dataset id */
  idOf: Map<string, string>;
  seconds: number;
}

/** Oldest first; on the same day, in file order. A correction is always younger than what it replaces. */
export function loadOrder(memories: readonly EvalMemory[]): EvalMemory[] {
  return memories.map((m, i) => ({ m, i }))
    .sort((a, b) => b.m.created_days_ago - a.m.created_days_ago || a.i - b.i)
    .map(({ m }) => m);
}

export async function loadThroughApi(
  ds: EvalDataset,
  ctx: EvalContext,
  progress: (done: number) => void,
): Promise<LoadedDataset> {
  const started = performance.now();
  const uuidOf = new Map<string, string>();
  let done = 0;
  for (const m of loadOrder(ds.memories)) {
    let uuid: string;
    if (m.replaces) {
      const old = uuidOf.get(m.replaces);
      if (!old) throw new Error(`${m.id} replaces ${m.replaces}, which is not loaded`);
      const res = await callFunction<MemoryBody>(ctx, m.tenant, `memory/${old}/correct`, {
        content: m.content,
        reason: `replaces ${m.replaces}`,
      });
      uuid = res.memory.id;
    } else {
      const res = await callFunction<MemoryBody>(ctx, m.tenant, "memory/remember", {
        content: m.content,
        namespace: namespaceOf(ctx.root, m.scope),
        memory_type: m.memory_type,
        metadata: { category: m.category },
      });
      if (res.created !== true) throw new Error(`${m.id}: remember did not create a memory (an exact duplicate?)`);
      uuid = res.memory.id;
    }
    uuidOf.set(m.id, uuid);
    if (++done % 250 === 0) progress(done);
  }
  return {
    uuidOf,
    idOf: new Map([...uuidOf].map(([id, uuid]) => [uuid, id])),
    seconds: (performance.now() - started) / 1000,
  };
}

/**
 * The eval's one direct write (the API cannot backdate): created_at = now − created_days_ago
 * (plus the memory's position in the load order in seconds, so no two share an instant);
 * last_accessed_at the same; updated_at the time of the correction that replaced it, if any.
 * These columns fire neither the history nor the updated_at trigger. Run again before each
 * method, because retrieval reinforces what it injects and so moves last_accessed_at to the
 * wall clock.
 */
export async function backdate(sql: Sql, ds: EvalDataset, loaded: LoadedDataset): Promise<number> {
  const now = Date.parse(ds.now);
  const at = new Map<string, Date>();
  loadOrder(ds.memories).forEach((m, i) => at.set(m.id, new Date(now - m.created_days_ago * 86_400_000 + i * 1000)));
  const replacedAt = new Map(ds.memories.filter((m) => m.replaces).map((m) => [m.replaces!, at.get(m.id)!]));
  const ids: string[] = [];
  const created: string[] = [];
  const updated: string[] = [];
  for (const m of ds.memories) {
    ids.push(loaded.uuidOf.get(m.id)!);
    created.push(at.get(m.id)!.toISOString());
    updated.push((replacedAt.get(m.id) ?? at.get(m.id)!).toISOString());
  }
  const result = await sql`
    update public.devai_memories m
       set created_at = d.created_at, last_accessed_at = d.created_at, updated_at = d.updated_at
      from unnest(${ids}::uuid[], ${created}::timestamptz[], ${updated}::timestamptz[]) as d(id, created_at, updated_at)
     where m.id = d.id`;
  return result.count;
}
