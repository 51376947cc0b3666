// Every function is a Hono app built the same way: CORS and a request id as middleware, the one
// error responder as app.onError (http.ts), and a 404 for any path that is no route of the
// function: never a fall-through to a default route (POST memory-retrieve/queryx once ran a
// retrieval). Server-Timing comes from hono/timing (the total; routes add their parts with setMetric).
import { Hono } from "hono";
import { cors } from "hono/cors";
import { requestId, type RequestIdVariables } from "hono/request-id";
import { timing, type TimingVariables } from "hono/timing";
import { getPath } from "hono/utils/url";
import { CORS_ALLOW_HEADERS, CORS_ALLOW_METHODS, CORS_EXPOSE_HEADERS } from "./cors.ts";
import { errorResponse, HttpError, respondToError } from "./http.ts";

/** What every function's context holds, plus the function's own variables (its caller, …). */
export type FunctionEnv<V extends object = Record<never, never>> = {
  Variables: V & RequestIdVariables & TimingVariables;
};

const GATEWAY_PREFIX = "/functions/v1";

export function createFunctionApp<V extends object = Record<never, never>>(): Hono<FunctionEnv<V>> {
  const app = new Hono<FunctionEnv<V>>({ getPath: functionPath });
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
  app.notFound((c) => errorResponse(noRoute(app, c.req.method, c.req.path), c.get("requestId")));
  return app;
}

/** The 404 of a path no route answers, with what it offers instead (routes a wildcard catches use it too). */
export function noRoute(app: { routes: { method: string; path: string }[] }, method: string, path: string): HttpError {
  return new HttpError(404, "route_not_found", `no route for ${method} ${path}; ${routesOf(app)}`);
}

/**
 * What a 404 offers instead: the function's routes when they are few (`POST /context` named none of
 * `context/assemble`, `context/predict`), else where they are listed (the memory function has dozens).
 */
function routesOf(app: { routes: { method: string; path: string }[] }): string {
  const routes = new Set(
    app.routes.filter((r) => r.method !== "ALL" && !r.path.includes("*")).map((r) => `${r.method} ${r.path}`),
  );
  return routes.size > 0 && routes.size <= 8
    ? `this function's routes: ${[...routes].join(", ")}`
    : "the routes are in the README's API table";
}

/**
 * The path the routes see. Supabase hands a function the path /<name>[/...]; the local server and
 * some proxies keep the gateway's /functions/v1 in front: routes see /<name>[/...] either way,
 * without a trailing slash (as Hono's `strict: false`). Read from the URL as sent: the request was
 * copied to a new URL without the prefix, a Request and its headers built again on every request
 * (4% of a retrieval's Deno CPU: docs/operations.md#cpu-per-retrieval).
 */
function functionPath(req: Request): string {
  const url = req.url;
  const start = url.indexOf("/", url.indexOf(":") + 4);
  const path = url.startsWith(`${GATEWAY_PREFIX}/`, start)
    ? getPath({ url: url.slice(0, start) + url.slice(start + GATEWAY_PREFIX.length) } as Request)
    : getPath(req);
  return path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
}

/** The app as the fetch handler Deno.serve takes: the request goes to the routes as it came. */
export function fetchHandler(
  app: { fetch(req: Request): Response | Promise<Response> },
): (req: Request) => Promise<Response> {
  return async (req) => await app.fetch(req);
}
