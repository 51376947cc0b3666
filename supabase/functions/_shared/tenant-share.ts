// A pool's connections, shared fairly between tenants. postgres.js serves waiting queries from one
// queue, first come first served: a tenant sending many costly reads at once (each within its rate
// limit) took every connection, and another tenant's cheap read waited behind the whole burst,
// 0.7 s behind sixty. So the tenant work a pool runs is admitted here first:
// * at most `capacity` calls at once (the pool's connections), and at most `capacity - 1` of one
//   tenant (at least one): a connection is always left for another tenant's request;
// * when a call ends and calls are waiting, the next admitted is the waiting call of the tenant
//   with the fewest calls running (ties: the tenant that has waited longest), not the oldest call:
//   a burst waits behind itself, never in front of the others.
// Nothing is held back while there is room, so one tenant alone (a self-hosted install) still has
// all but one connection. A call made inside one already admitted for the same tenant and pool (a
// read inside a transaction's work) goes straight through: it must not wait for its own caller.
// (It still needs a connection of its own: were every connection held by a transaction waiting for
// such a read, the pool would wait forever, with or without admission. No service nests so.)
// A call waits at most `maxWaitMs` (the pool's statement timeout): then it leaves the queue and
// fails as AdmissionTimeout, a 503 like a statement past its timeout (database-errors.ts), so a
// client that gave up does not leave its request to run long after. A call may also wait only until
// a signal (the queue worker's pass: until its drain's cut, heavy-turns.ts), then fails the same way.
import { AsyncLocalStorage } from "node:async_hooks";

interface Tenant {
  active: number;
  waiting: (() => void)[];
}

/** A call that waited its pool's statement timeout without being admitted. */
export class AdmissionTimeout extends Error {
  constructor(readonly waitedMs: number) {
    super(`waited ${waitedMs} ms for a database connection behind this tenant's other requests`);
    this.name = "AdmissionTimeout";
  }
}

/** The (pool, tenant) admissions the current async context holds. */
const held = new AsyncLocalStorage<ReadonlySet<string>>();

export class TenantShares {
  readonly perTenant: number;
  readonly #tenants = new Map<string, Tenant>();
  /** Tenants with waiting calls, longest waiting first. */
  readonly #turns: string[] = [];
  readonly #key = crypto.randomUUID();
  #active = 0;

  constructor(readonly capacity: number) {
    this.perTenant = Math.max(1, capacity - 1);
  }

  async run<T>(tenant: string, work: () => Promise<T>, maxWaitMs = Infinity, until?: AbortSignal): Promise<T> {
    const key = `${this.#key}/${tenant}`;
    const mine = held.getStore();
    if (mine?.has(key)) return await work();
    await this.#admit(tenant, maxWaitMs, until);
    try {
      return await held.run(new Set([...(mine ?? []), key]), work);
    } finally {
      this.#release(tenant);
    }
  }

  /** How many of the tenant's calls run and how many wait (for tests and diagnostics). */
  load(tenant: string): { active: number; waiting: number } {
    const t = this.#tenants.get(tenant);
    return { active: t?.active ?? 0, waiting: t?.waiting.length ?? 0 };
  }

  #admit(tenant: string, maxWaitMs: number, until?: AbortSignal): Promise<void> {
    let t = this.#tenants.get(tenant);
    if (!t) this.#tenants.set(tenant, t = { active: 0, waiting: [] });
    if (t.waiting.length === 0 && this.#active < this.capacity && t.active < this.perTenant) {
      t.active++;
      this.#active++;
      return Promise.resolve();
    }
    if (until?.aborted) {
      if (t.active === 0 && t.waiting.length === 0) this.#tenants.delete(tenant);
      return Promise.reject(new AdmissionTimeout(0));
    }
    if (t.waiting.length === 0) this.#turns.push(tenant);
    const queue = t;
    const since = performance.now();
    return new Promise((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const giveUp = (waitedMs: number) => {
        clearTimeout(timer);
        until?.removeEventListener("abort", onAbort);
        queue.waiting.splice(queue.waiting.indexOf(admitted), 1);
        if (queue.waiting.length === 0) {
          this.#turns.splice(this.#turns.indexOf(tenant), 1);
          if (queue.active === 0) this.#tenants.delete(tenant);
        }
        reject(new AdmissionTimeout(waitedMs));
      };
      const onAbort = () => giveUp(Math.round(performance.now() - since));
      const admitted = () => {
        clearTimeout(timer);
        until?.removeEventListener("abort", onAbort);
        resolve();
      };
      queue.waiting.push(admitted);
      if (Number.isFinite(maxWaitMs)) timer = setTimeout(() => giveUp(maxWaitMs), maxWaitMs);
      until?.addEventListener("abort", onAbort, { once: true });
    });
  }

  #release(tenant: string): void {
    const t = this.#tenants.get(tenant)!;
    t.active--;
    this.#active--;
    this.#dispatch();
    if (t.active === 0 && t.waiting.length === 0) this.#tenants.delete(tenant);
  }

  /** Admits waiting calls while there is room: each time the tenant with the fewest running. */
  #dispatch(): void {
    while (this.#active < this.capacity) {
      let pick = -1;
      for (let i = 0; i < this.#turns.length; i++) {
        const t = this.#tenants.get(this.#turns[i]!)!;
        if (t.active < this.perTenant && (pick < 0 || t.active < this.#tenants.get(this.#turns[pick]!)!.active)) {
          pick = i;
        }
      }
      if (pick < 0) return;
      const name = this.#turns[pick]!;
      const t = this.#tenants.get(name)!;
      const next = t.waiting.shift()!;
      if (t.waiting.length === 0) this.#turns.splice(pick, 1);
      t.active++;
      this.#active++;
      next();
    }
  }
}

const byPool = new WeakMap<object, TenantShares>();

/** A pool's tenant shares, for a pool of `poolMax` connections (createSql registers each pool). */
export function tenantShares(pool: object, poolMax = 1): TenantShares {
  let shares = byPool.get(pool);
  if (!shares) byPool.set(pool, shares = new TenantShares(poolMax));
  return shares;
}

/** Runs work outside every admission (background work started inside a call must take its own). */
export function outsideShares<T>(work: () => T): T {
  return held.exit(work);
}
