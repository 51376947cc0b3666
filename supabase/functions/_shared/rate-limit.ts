// Per-tenant rate limits (docs/operations.md#rate-limits). The limits and buckets live in the
// database (public.take_rate_limit_token, settings in public.memory_settings), so every function
// instance shares them. A request is charged once, with its first tenant statement: rateLimit
// marks the request with its route class, and withTenant and readAsTenant (db.ts) send the token's
// statement pipelined before it, so the check costs no extra round trip. Over the limit, the
// request is a 429 rate_limited with Retry-After and its transaction writes nothing. A class
// without a limit is asked once a second per pool, not every request (UnlimitedRouteClasses).
import { AsyncLocalStorage } from "node:async_hooks";
import type { MiddlewareHandler } from "hono";
import { HttpError } from "./http.ts";

export type RouteClass = "read" | "write" | "heavy";

interface PendingCharge {
  routeClass: RouteClass;
  charged: boolean;
}

const requestCharge = new AsyncLocalStorage<PendingCharge>();

/**
 * Middleware: each request it serves is charged to its tenant's bucket of its route class. The
 * class is decided on the path the router matches (percent-decoded, c.req.path), never the raw
 * URL: `/memory/consolid%61te` reaches the consolidate route, and was charged as a write.
 */
export function rateLimit(routeClassOf: (req: Request, path: string) => RouteClass | undefined): MiddlewareHandler {
  return (c, next) => {
    const routeClass = routeClassOf(c.req.raw, c.req.path);
    return routeClass ? chargedAs(routeClass, next) : next();
  };
}

/** Runs a request's work charged to the route class (for a class known only once the body is read). */
export function chargedAs<T>(routeClass: RouteClass, work: () => T): T {
  return requestCharge.run({ routeClass, charged: false }, work);
}

/** The route class to charge in this transaction, once per request (undefined: nothing to charge). */
export function takeRequestCharge(): RouteClass | undefined {
  const pending = requestCharge.getStore();
  if (!pending || pending.charged) return undefined;
  pending.charged = true;
  return pending.routeClass;
}

/** Whether this runs for a tenant's request (a route the rate limits cover), not the worker's own work. */
export function inRequest(): boolean {
  return requestCharge.getStore() !== undefined;
}

/** Runs work (a background drain after a 202) outside the request: it is never charged. */
export function outsideRequest<T>(work: () => T): T {
  return requestCharge.exit(work);
}

/** How long a pool keeps a class's "no limit" answer: a change of the rate-limit settings applies within it. */
export const UNLIMITED_ANSWER_KEPT_MS = 1000;

/**
 * The route classes a pool's database answered as having no limit (public.take_rate_limit_token's
 * NULL: its rate is 0, or a service_role caller while rate_limit_service_role is 0), per caller
 * kind. Such an answer changes only when an operator changes public.memory_settings, which holds
 * no per-tenant limits: for UNLIMITED_ANSWER_KEPT_MS after the statement that got it was sent, the
 * pool's requests of that class and caller kind send no token statement (a remote embedder's
 * retrieval saves its round trip before the embedding: docs/operations.md#rate-limits). A class
 * with a limit is asked every request, as before. `now`: the clock, in ms (tests move their own).
 */
export class UnlimitedRouteClasses {
  private readonly sentAt = new Map<string, number>();

  constructor(public now: () => number = () => performance.now()) {}

  /** Whether a statement sent less than UNLIMITED_ANSWER_KEPT_MS ago answered that there is no limit. */
  has(routeClass: RouteClass, serviceRole: boolean): boolean {
    const sentAt = this.sentAt.get(`${routeClass}:${serviceRole}`);
    if (sentAt === undefined) return false;
    const age = this.now() - sentAt;
    return age >= 0 && age < UNLIMITED_ANSWER_KEPT_MS;
  }

  /**
   * The token statement's answer, `send` called now, or 0 without sending while the class has no
   * limit (has). Resolves to 0, or the seconds to wait. A NULL answer (no limit) is kept from the
   * moment the statement was sent; any other answer forgets it.
   */
  charge(routeClass: RouteClass, serviceRole: boolean, send: () => Promise<number | null>): Promise<number> {
    if (this.has(routeClass, serviceRole)) return Promise.resolve(0);
    const key = `${routeClass}:${serviceRole}`, sentAt = this.now();
    return send().then((retryAfter) => {
      if (retryAfter === null) this.sentAt.set(key, Math.max(sentAt, this.sentAt.get(key) ?? sentAt));
      else this.sentAt.delete(key);
      return retryAfter ?? 0;
    });
  }
}

const unlimitedOfPool = new WeakMap<object, UnlimitedRouteClasses>();

/** The pool's UnlimitedRouteClasses (the primary's: the settings and buckets live there). */
export function unlimitedRouteClasses(pool: object): UnlimitedRouteClasses {
  let classes = unlimitedOfPool.get(pool);
  if (!classes) unlimitedOfPool.set(pool, classes = new UnlimitedRouteClasses());
  return classes;
}

export function rateLimited(routeClass: RouteClass, retryAfterSeconds: number): HttpError {
  const seconds = Math.max(1, Math.ceil(retryAfterSeconds));
  return new HttpError(
    429,
    "rate_limited",
    `too many ${routeClass} requests for this tenant; retry after ${seconds} s`,
    undefined,
    {
      "retry-after": String(seconds),
    },
  );
}
