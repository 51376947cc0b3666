// What a search writes, written behind its answer (docs/operations.md#write-behind): the
// reinforcement of the memories it used and its memory_events row. A search answers from one read
// statement; its writes wait here, per pool, and go to the database in batches: when
// RETRIEVAL_WRITE_BEHIND_MS (200 ms) has passed since the first one waiting, when
// MAX_WAITING_SEARCHES are waiting, and when the pool is ended (a server shutting down writes what
// it holds). A batch is one statement per tenant (public.record_retrievals, as the tenant: RLS
// limits it to the tenant's own memories), all pipelined on one connection of the primary, each
// committed without waiting for the WAL flush.
//
// What a crash can lose: the searches still waiting (at most the last 200 ms of them, or
// MAX_WAITING_SEARCHES), and a batch committed in the last moments before the crash: their
// reinforcements (access_count, last_accessed_at, strength) and their search events. Never a
// memory, never a write of any other kind: those commit before their request answers. While the
// database is unavailable, batches wait for the next one (up to MAX_RETAINED_SEARCHES).
import { isDatabaseUnavailable } from "../database-errors.ts";
import { type Sql, type TenantContext, tenantItem } from "../db.ts";

/** One search's writes: the memories it used (reinforced at `at`) and its event. */
export interface SearchWrite {
  /** The database's clock at the search: reinforcement decays and restores strength as of it. */
  at: string;
  /** Memories to reinforce (empty: nothing, e.g. an as-of search). */
  ids: string[];
  thread_id: string | null;
  category: string | null;
  /** Best similarity among the search's candidates. */
  sim: number | null;
  meta: Record<string, unknown>;
}

export const DEFAULT_WRITE_BEHIND_MS = 200;
export const MAX_WAITING_SEARCHES = 100;
/** Past this many, searches that could not be written (database down) are dropped, oldest first. */
const MAX_RETAINED_SEARCHES = 10_000;

interface EdgeRuntimeLike {
  waitUntil(p: Promise<unknown>): void;
}

class WriteBehind {
  #waiting = new Map<string, { who: TenantContext; items: SearchWrite[] }>();
  #count = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** Resolves the promise the Edge Runtime waits on for the batch now scheduled. */
  #scheduled: ((written: Promise<void>) => void) | undefined;
  #flushing: Promise<void> = Promise.resolve();

  constructor(readonly sql: Sql, readonly delayMs: number) {}

  add(who: TenantContext, item: SearchWrite): void {
    const key = `${who.tenantId}\u0000${who.actor}`;
    const entry = this.#waiting.get(key) ?? { who, items: [] };
    entry.items.push(item);
    this.#waiting.set(key, entry);
    this.#count++;
    if (this.#count >= MAX_WAITING_SEARCHES) void this.flush();
    else if (this.#timer === undefined) {
      this.#timer = setTimeout(() => void this.flush(), this.delayMs);
      // On Supabase's Edge Runtime, the worker is kept alive until the batch is written.
      const runtime = (globalThis as { EdgeRuntime?: EdgeRuntimeLike }).EdgeRuntime;
      if (runtime) runtime.waitUntil(new Promise<void>((resolve) => (this.#scheduled = (w) => resolve(w))));
    }
  }

  /** Writes everything waiting now; resolves when it (and any batch before it) is written. */
  flush(): Promise<void> {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    const batch = [...this.#waiting.values()];
    this.#waiting = new Map();
    this.#count = 0;
    this.#flushing = this.#flushing.then(() => batch.length > 0 ? this.#write(batch) : undefined);
    this.#scheduled?.(this.#flushing);
    this.#scheduled = undefined;
    return this.#flushing;
  }

  async #write(batch: { who: TenantContext; items: SearchWrite[] }[]): Promise<void> {
    let conn: Sql | undefined;
    try {
      conn = await this.sql.reserve();
      const q = conn;
      const results = await Promise.allSettled(batch.map(({ who, items }) =>
        q`
        select public.record_retrievals(${q.json(items as never)}::jsonb)
          from ${tenantItem(q, who.tenantId, { "memory.actor": who.actor, synchronous_commit: "off" })}`
      ));
      results.forEach((r, i) => {
        if (r.status === "rejected") this.#failed(batch[i]!, r.reason);
      });
    } catch (err) {
      for (const entry of batch) this.#failed(entry, err);
    } finally {
      (conn as (Sql & { release?: () => void }) | undefined)?.release?.();
    }
  }

  /**
   * A tenant's writes that could not be written wait for the next batch when the database was
   * unavailable, unless too much is waiting already. Any other failure would fail again (and take
   * the tenant's later searches down with it, one statement per tenant): they are dropped.
   */
  #failed(entry: { who: TenantContext; items: SearchWrite[] }, err: unknown): void {
    const code = (err as { code?: string }).code;
    if (
      code === "CONNECTION_ENDED" || !isDatabaseUnavailable(err) ||
      this.#count + entry.items.length > MAX_RETAINED_SEARCHES
    ) {
      console.error(`write-behind: ${entry.items.length} search write(s) of a tenant dropped: ${String(err)}`);
      return;
    }
    console.error(`write-behind: ${entry.items.length} search write(s) kept for the next batch: ${String(err)}`);
    for (const item of entry.items) this.add(entry.who, item);
  }
}

const queues = new WeakMap<Sql, WriteBehind>();

function queueOf(sql: Sql, delayMs: number): WriteBehind {
  let queue = queues.get(sql);
  if (!queue) {
    queue = new WriteBehind(sql, delayMs);
    queues.set(sql, queue);
    // Ending the pool writes what is waiting first (a server shutting down).
    const end = sql.end.bind(sql);
    const flushing = queue;
    sql.end = (async (opts?: { timeout?: number }) => {
      await flushing.flush();
      return await end(opts);
    }) as typeof sql.end;
  }
  return queue;
}

/** Queues a search's writes on the pool that writes (the primary). */
export function writeBehind(sql: Sql, who: TenantContext, item: SearchWrite, delayMs = DEFAULT_WRITE_BEHIND_MS): void {
  queueOf(sql, delayMs).add(who, item);
}

/** Writes every search waiting on this pool now (tests, a server's shutdown). */
export async function flushSearchWrites(sql: Sql): Promise<void> {
  await queues.get(sql)?.flush();
}
