// Every function is a Hono app built the same way: CORS and a request id as middleware, the one
// error responder as app.onError (http.ts), and a 404 for any path that is no route of the
// function: never a fall-through to a default route (POST memory-retrieve/queryx once ran a
// retrieval). Server-Timing comes from hono/timing (the total; routes add their parts with setMetric).
import { Hono } from "hono";
import { cors } from "hono/cors";
import { requestId, type RequestIdVariables } from "hono/request-id";
import { timing, type TimingVariables } from "hono/timing";
import { CORS_ALLOW_HEADERS, CORS_ALLOW_METHODS, CORS_EXPOSE_HEADERS } from "./cors.ts";
import { errorResponse, HttpError, respondToError } from "./http.ts";

/** What every function's context holds, plus the function's own variables (its caller, …). */
export type FunctionEnv<V extends object = Record<never, never>> = {
  Variables: V & RequestIdVariables & TimingVariables;
};

const GATEWAY_PREFIX = "/functions/v1";

export function createFunctionApp<V extends object = Record<never, never>>(): Hono<FunctionEnv<V>> {
  const app = new Hono<FunctionEnv<V>>({ strict: false });
  // Browser clients (Studio, dashboards) call the functions cross-origin; a preflight carries no token.
  app.use(cors({
    origin: "*",
    allowHeaders: CORS_ALLOW_HEADERS,
    allowMethods: CORS_ALLOW_METHODS,
    exposeHeaders: CORS_EXPOSE_HEADERS,
  }));
  app.use(requestId({ headerName: "x-request-id" }));
  app.use(timing());
  app.onError((err, c) => respondToError(err, c.get("requestId")));
  app.notFound((c) =>
    errorResponse(
      new HttpError(404, "route_not_found", `no route for ${c.req.method} ${c.req.path}`),
      c.get("requestId"),
    )
  );
  return app;
}

/**
 * The app as the fetch handler Deno.serve takes. Supabase hands a function the path /<name>[/...];
 * the local server and some proxies keep the gateway's /functions/v1 in front: routes see
 * /<name>[/...] either way.
 */
export function fetchHandler(
  app: { fetch(req: Request): Response | Promise<Response> },
): (req: Request) => Promise<Response> {
  return async (req) => {
    const url = new URL(req.url);
    if (!url.pathname.startsWith(`${GATEWAY_PREFIX}/`)) return await app.fetch(req);
    url.pathname = url.pathname.slice(GATEWAY_PREFIX.length);
    return await app.fetch(new Request(url, req));
  };
}
