// What a search writes, written behind its answer
// (docs/operations.md#write-behind-reinforcement-and-search-events): the reinforcement
// of the memories it used and its memory_events row. A search answers from one read
// statement; its writes wait here, per pool, and go to the database in batches: when
// RETRIEVAL_WRITE_BEHIND_MS (200 ms) has passed since the first one waiting, when
// MAX_WAITING_SEARCHES are waiting, and when the pool is ended (a server shutting down writes what
// it holds). A batch is one statement per tenant (public.record_retrievals, as the tenant: RLS
// limits it to the tenant's own memories), all pipelined on one connection of the primary, each
// committed without waiting for the WAL flush.
//
// What a crash can lose: the searches not yet written, and a batch committed in the last moments
// before the crash: their reinforcements (access_count, last_accessed_at, strength) and their
// search events. Never a memory, never a write of any other kind: those commit before their
// request answers. While the database answers, that is the last 200 ms of searches or
// MAX_WAITING_SEARCHES, plus the batch being written. While it does not (down, or a batch waiting
// on a lock up to the pool's statement timeout), searches keep coming and wait: never more than
// MAX_RETAINED_SEARCHES, the oldest dropped (and logged) past that, so a long outage costs bounded
// memory and a crash then loses at most that many. Nothing is written twice: a batch sent again
// after its commit's reply was lost finds its searches' events (each search has an id) and
// applies none of them again.
import { isDatabaseUnavailable } from "../database-errors.ts";
import { type Sql, type TenantContext, tenantItem, timeoutOf } from "../db.ts";
import { handBack, reserveConnection, type Reserved } from "../db-reserve.ts";

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
  /**
   * The search's id, given when it is queued: its event's id, by which public.record_retrievals
   * applies it once though a batch whose commit's reply was lost is sent again.
   */
  id?: string;
}

export const DEFAULT_WRITE_BEHIND_MS = 200;
export const MAX_WAITING_SEARCHES = 100;
/** Past this many searches not yet written (database down or slow), the oldest are dropped. */
export const MAX_RETAINED_SEARCHES = 10_000;
/** The longest a server's shutdown waits for the last batch. */
export const SHUTDOWN_FLUSH_MS = 10_000;

type Entry = { who: TenantContext; items: SearchWrite[] };

interface EdgeRuntimeLike {
  waitUntil(p: Promise<unknown>): void;
}

class WriteBehind {
  #waiting = new Map<string, Entry>();
  #count = 0;
  /** Batches flushed but not yet written, oldest first (the one being written is not here). */
  #queued: Entry[][] = [];
  /** Searches waiting or queued: what a crash would lose, bounded by MAX_RETAINED_SEARCHES. */
  #held = 0;
  #dropped = 0;
  #droppedLoggedAt = 0;
  /** After a batch the database could not take, the next waits for the timer (no back-to-back retries). */
  #retryAfter = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** Resolves the promise the Edge Runtime waits on for the batch now scheduled. */
  #scheduled: ((written: Promise<void>) => void) | undefined;
  #flushing: Promise<void> = Promise.resolve();

  constructor(readonly sql: Sql, readonly delayMs: number) {}

  get held(): number {
    return this.#held;
  }

  add(who: TenantContext, item: SearchWrite): void {
    const key = `${who.tenantId}\u0000${who.actor}`;
    const entry = this.#waiting.get(key) ?? { who, items: [] };
    entry.items.push({ ...item, id: item.id ?? crypto.randomUUID() });
    this.#waiting.set(key, entry);
    this.#waited(1);
  }

  /** Counts n more waiting searches: drops the oldest past the bound, flushes by count or timer. */
  #waited(n: number): void {
    this.#count += n;
    this.#held += n;
    if (this.#held > MAX_RETAINED_SEARCHES) this.#dropOldest(this.#held - MAX_RETAINED_SEARCHES);
    // After a batch the database could not take, the next one waits for the timer: a database
    // that is down is not asked again back to back.
    if (this.#count >= MAX_WAITING_SEARCHES && Date.now() >= this.#retryAfter) void this.flush();
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
    // In batches of at most MAX_WAITING_SEARCHES searches (what waited through an outage is
    // written a batch at a time, and stays droppable while it waits).
    let batch: Entry[] = [], size = 0;
    const queue = () => {
      this.#queued.push(batch);
      this.#flushing = this.#flushing.then(() => this.#writeNext());
      batch = [];
      size = 0;
    };
    for (const entry of this.#waiting.values()) {
      for (let from = 0; from < entry.items.length;) {
        const items = entry.items.slice(from, from + MAX_WAITING_SEARCHES - size);
        batch.push({ who: entry.who, items });
        size += items.length;
        from += items.length;
        if (size >= MAX_WAITING_SEARCHES) queue();
      }
    }
    if (size > 0) queue();
    this.#waiting = new Map();
    this.#count = 0;
    this.#scheduled?.(this.#flushing);
    this.#scheduled = undefined;
    return this.#flushing;
  }

  /** Drops the n oldest searches not yet written: queued batches first, then the waiting ones. */
  #dropOldest(n: number): void {
    let dropped = 0;
    const from = (entries: Entry[]) => {
      for (const entry of entries) {
        const k = Math.min(n - dropped, entry.items.length);
        entry.items.splice(0, k);
        dropped += k;
        if (dropped === n) return;
      }
    };
    for (const batch of this.#queued) if (dropped < n) from(batch);
    if (dropped < n) from([...this.#waiting.values()]);
    this.#count = [...this.#waiting.values()].reduce((sum, e) => sum + e.items.length, 0);
    this.#held -= dropped;
    // One line per second at most: past the bound, every new search drops one.
    this.#dropped += dropped;
    if (Date.now() - this.#droppedLoggedAt >= 1000) {
      console.error(
        `write-behind: ${this.#dropped} search write(s) dropped, oldest first: more than ${MAX_RETAINED_SEARCHES} not yet written`,
      );
      this.#dropped = 0;
      this.#droppedLoggedAt = Date.now();
    }
  }

  async #writeNext(): Promise<void> {
    const batch = this.#queued.shift()?.filter((entry) => entry.items.length > 0) ?? [];
    const size = batch.reduce((sum, e) => sum + e.items.length, 0);
    if (size === 0) return;
    const failures: [Entry, unknown][] = [];
    let conn: Reserved | undefined;
    try {
      conn = await reserveConnection(this.sql);
      const q = conn;
      // Bounded like any request's statement: a batch stuck behind a lock fails at the pool's
      // timeout and waits for the next batch, instead of holding every later one. The timeout is
      // set before the statement it bounds (inside it, it would come after its timer started):
      // each tenant's statement is a transaction of its own, all pipelined on the connection.
      // With no parameter: postgres.js holds a statement with parameters back until the server has
      // described them, and sends what follows first. (timeoutOf is the pool's integer setting.)
      const timeout = `set local statement_timeout = '${timeoutOf(this.sql)}'`;
      const results = await Promise.allSettled(batch.map(async ({ who, items }) => {
        const steps = await Promise.allSettled([
          q`begin`.execute(),
          q.unsafe(timeout).execute(),
          q`
            select public.record_retrievals(${q.json(items as never)}::jsonb)
              from ${tenantItem(q, who.tenantId, { "memory.actor": who.actor, synchronous_commit: "off" })}`
            .execute(),
          q`commit`.execute(),
        ]);
        const failed = steps.find((r) => r.status === "rejected") as PromiseRejectedResult | undefined;
        if (failed) throw failed.reason;
      }));
      results.forEach((r, i) => {
        if (r.status === "rejected") failures.push([batch[i]!, r.reason]);
      });
    } catch (err) {
      for (const entry of batch) failures.push([entry, err]);
    } finally {
      if (conn) handBack(this.sql, conn, failures.map(([, err]) => err));
    }
    // Held until written or given up (the batch being written counts toward the bound too); what
    // is kept for the next batch is counted again as it goes back.
    this.#held -= size;
    for (const [entry, err] of failures) this.#failed(entry, err);
  }

  /**
   * A tenant's writes that could not be written wait for the next batch when the database was
   * unavailable, unless too much is waiting already. Any other failure would fail again (and take
   * the tenant's later searches down with it, one statement per tenant): they are dropped.
   */
  #failed(entry: Entry, err: unknown): void {
    const code = (err as { code?: string }).code;
    if (code === "CONNECTION_ENDED" || !isDatabaseUnavailable(err)) {
      console.error(`write-behind: ${entry.items.length} search write(s) of a tenant dropped: ${String(err)}`);
      return;
    }
    console.error(`write-behind: ${entry.items.length} search write(s) kept for the next batch: ${String(err)}`);
    this.#retryAfter = Date.now() + this.delayMs;
    // Back at the front: they are older than anything waiting, and dropped first past the bound.
    const key = `${entry.who.tenantId}\u0000${entry.who.actor}`;
    const waiting = this.#waiting.get(key);
    const rest = [...this.#waiting].filter(([k]) => k !== key);
    this.#waiting = new Map([[key, { who: entry.who, items: [...entry.items, ...(waiting?.items ?? [])] }], ...rest]);
    this.#waited(entry.items.length);
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
      // At most SHUTDOWN_FLUSH_MS: a database that does not answer does not hold the shutdown.
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        flushing.flush(),
        new Promise<void>((resolve) => (timer = setTimeout(resolve, SHUTDOWN_FLUSH_MS))),
      ]);
      clearTimeout(timer);
      return await end(opts);
    }) as typeof sql.end;
  }
  return queue;
}

/** Queues a search's writes on the pool that writes (the primary). */
export function writeBehind(sql: Sql, who: TenantContext, item: SearchWrite, delayMs = DEFAULT_WRITE_BEHIND_MS): void {
  queueOf(sql, delayMs).add(who, item);
}

/** Searches of this pool not yet written (waiting or queued behind the batch being written). */
export function heldSearchWrites(sql: Sql): number {
  return queues.get(sql)?.held ?? 0;
}

/** Writes every search waiting on this pool now (tests, a server's shutdown). */
export async function flushSearchWrites(sql: Sql): Promise<void> {
  await queues.get(sql)?.flush();
}
