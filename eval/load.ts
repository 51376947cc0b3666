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
  /** Each memory as loaded and backdated, by uuid (restoreLoaded puts it back). */
  loadedState?: Map<string, LoadedRow>;
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
 * method, because retrieval reinforces what it injects: it moves last_accessed_at to the wall
 * clock and raises strength and access_count, which are put back to what the load left.
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
  // Retrieval reinforces what it injects (strength, access count, last access at the wall clock):
  // each method starts from the state the load left, so no method's figures depend on the
  // methods asked before it (restoreLoaded).
  if (!loaded.loadedState) {
    const rows = await sql<LoadedRow[]>`
      select id::text, strength, base_strength, access_count, last_accessed_at::text
        from public.devai_memories where id = any(${ids}::uuid[])`;
    loaded.loadedState = new Map(rows.map((r) => [r.id, r]));
  } else {
    await restoreLoaded(sql, loaded, ids);
  }
  return result.count;
}

interface LoadedRow {
  id: string;
  strength: number;
  base_strength: number;
  access_count: number;
  last_accessed_at: string;
}

/**
 * Puts memories back as the load (and backdate) left them: strength, base strength, access count
 * and last access. The eval asks every question of the memory as loaded: the reinforcement a
 * question's retrieval writes (at the wall clock, so two runs would differ) is undone before the
 * next one. Ids the load did not make (the branch notes) are left alone.
 */
export async function restoreLoaded(sql: Sql, loaded: LoadedDataset, uuids: readonly string[]): Promise<void> {
  const rows = uuids.map((u) => loaded.loadedState?.get(u)).filter((r): r is LoadedRow => r !== undefined);
  if (rows.length === 0) return;
  await sql`
    update public.devai_memories m
       set strength = d.strength, base_strength = d.base_strength, access_count = d.access_count,
           last_accessed_at = d.last_accessed_at
      from unnest(${rows.map((r) => r.id)}::uuid[], ${rows.map((r) => r.strength)}::float8[],
                  ${rows.map((r) => r.base_strength)}::float8[], ${rows.map((r) => r.access_count)}::int[],
                  ${rows.map((r) => r.last_accessed_at)}::timestamptz[])
           as d(id, strength, base_strength, access_count, last_accessed_at)
     where m.id = d.id`;
}
