// One tenant's share of a pool. postgres.js serves waiting queries in one queue, first come first
// served: a tenant sending many costly reads at once (each within its rate limit) took every
// connection, and another tenant's cheap read waited behind all of them, seconds under a burst of
// sixty. So at most half a pool's connections (at least one) work for one tenant at a time; its
// further requests wait their turn here, in order, and the rest of the pool stays free for the
// other tenants. A call made inside one that already holds the tenant's share of this pool (a read
// inside a transaction's work) goes straight through: it must not wait for its own caller.
import { AsyncLocalStorage } from "node:async_hooks";

interface Share {
  active: number;
  waiting: (() => void)[];
}

/** The (pool, tenant) shares the current async context holds. */
const held = new AsyncLocalStorage<ReadonlySet<string>>();

export class TenantShares {
  readonly #shares = new Map<string, Share>();
  readonly #key = crypto.randomUUID();

  /** At most `limit` calls of one tenant run at a time. */
  constructor(readonly limit: number) {}

  async run<T>(tenant: string, work: () => Promise<T>): Promise<T> {
    const key = `${this.#key}/${tenant}`;
    const mine = held.getStore();
    if (mine?.has(key)) return await work();
    await this.#acquire(tenant);
    try {
      return await held.run(new Set([...(mine ?? []), key]), work);
    } finally {
      this.#release(tenant);
    }
  }

  /** How many of the tenant's calls run and how many wait (for tests and diagnostics). */
  load(tenant: string): { active: number; waiting: number } {
    const share = this.#shares.get(tenant);
    return { active: share?.active ?? 0, waiting: share?.waiting.length ?? 0 };
  }

  #acquire(tenant: string): Promise<void> {
    const share = this.#shares.get(tenant) ?? { active: 0, waiting: [] };
    this.#shares.set(tenant, share);
    if (share.active < this.limit) {
      share.active++;
      return Promise.resolve();
    }
    return new Promise((resolve) => share.waiting.push(resolve));
  }

  /** Hands the slot to the tenant's next waiting call, or gives it back. */
  #release(tenant: string): void {
    const share = this.#shares.get(tenant)!;
    const next = share.waiting.shift();
    if (next) return next();
    if (--share.active === 0) this.#shares.delete(tenant);
  }
}

const byPool = new WeakMap<object, TenantShares>();

/**
 * A pool's tenant shares: half its `poolMax` connections for one tenant, at least one (createSql
 * registers each pool; a pool it did not make gets one connection per tenant).
 */
export function tenantShares(pool: object, poolMax = 1): TenantShares {
  let shares = byPool.get(pool);
  if (!shares) byPool.set(pool, shares = new TenantShares(Math.max(1, Math.floor(poolMax / 2))));
  return shares;
}
