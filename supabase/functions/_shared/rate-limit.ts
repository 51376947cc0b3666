// Per-tenant rate limits (docs/operations.md#rate-limits). The limits and buckets live in the
// database (public.take_rate_limit_token, settings in public.memory_settings), so every function
// instance shares them. A request is charged once, in its first tenant transaction: rateLimit
// marks the request with its route class, and withTenant (db.ts) folds the token call into that
// transaction's first statement, so the check costs no extra round trip. Over the limit, the
// request is a 429 rate_limited with Retry-After and its transaction writes nothing.
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
