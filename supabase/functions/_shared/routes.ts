// Which route of a function a request asks for. Supabase hands a function the path /<name>[/...];
// the local server and some proxies keep the gateway's /functions/v1 in front. A path that names
// no route of the function is a 404: never a fall-through to its default route (POST
// memory-retrieve/queryx used to run a retrieval).
import { HttpError } from "./http.ts";

const GATEWAY_PREFIX = "/functions/v1";

/** The route ("" for the function's own path, or one of `routes`) the request's path names; else 404. */
export function routeOf<R extends string>(req: Request, name: string, routes: readonly R[]): R {
  let path = new URL(req.url).pathname;
  if (path.startsWith(`${GATEWAY_PREFIX}/`)) path = path.slice(GATEWAY_PREFIX.length);
  const rest = path === `/${name}` || path === `/${name}/` ? "" : path.startsWith(`/${name}/`) ? path.slice(name.length + 2).replace(/\/$/, "") : undefined;
  const route = routes.find((r) => r === rest);
  if (route === undefined) throw new HttpError(404, "route_not_found", `no route for ${req.method} ${new URL(req.url).pathname}`);
  return route;
}
