// The path a function's routes see (_shared/app.ts): /<name>[/...] with or without the gateway's
// /functions/v1 in front, and the request itself handed to the routes, not a copy made to drop the
// prefix (a Request and its headers built again on every request: docs/operations.md#cpu-per-retrieval).
import assert from "node:assert/strict";
import { createFunctionApp, fetchHandler } from "../supabase/functions/_shared/app.ts";

function app() {
  const seen: { req?: Request; path?: string } = {};
  const a = createFunctionApp();
  a.post("/memory-retrieve", (c) => {
    seen.req = c.req.raw;
    seen.path = c.req.path;
    return c.json({ query: c.req.query("a") ?? null });
  });
  return { handler: fetchHandler(a), seen };
}

Deno.test("function paths: the gateway's prefix, a trailing slash and escapes reach the route; the request is not copied", async () => {
  const { handler, seen } = app();
  for (
    const path of [
      "/functions/v1/memory-retrieve",
      "/memory-retrieve",
      "/functions/v1/memory-retrieve/",
      "/memory-retrieve/",
      "/functions/v1/memory-retri%65ve",
    ]
  ) {
    const req = new Request(`http://127.0.0.1:54321${path}?a=1`, { method: "POST" });
    const res = await handler(req);
    assert.equal(res.status, 200, path);
    assert.deepEqual(await res.json(), { query: "1" }, path);
    assert.equal(seen.path, "/memory-retrieve", path);
    assert.equal(seen.req, req, `${path}: the route gets the request as sent`);
  }
});

Deno.test("function paths: anything else is no route (404), as before", async () => {
  const { handler } = app();
  for (
    const [path, named] of [
      ["/functions/v1", "/functions/v1"],
      ["/functions/v1x/memory-retrieve", "/functions/v1x/memory-retrieve"],
      ["/functions%2Fv1/memory-retrieve", "/functions%2Fv1/memory-retrieve"],
      ["/functions/v1/functions/v1/memory-retrieve", "/functions/v1/memory-retrieve"],
      ["/v1/memory-retrieve", "/v1/memory-retrieve"],
    ]
  ) {
    const res = await handler(new Request(`http://127.0.0.1:54321${path}`, { method: "POST" }));
    assert.equal(res.status, 404, path);
    const body = await res.json();
    assert.equal(body.error.code, "route_not_found", path);
    assert.equal(body.error.message, `no route for POST ${named}; this function's routes: POST /memory-retrieve`, path);
  }
});

Deno.test("function paths: a 404 names the function's routes when they are few, else where they are listed", async () => {
  const few = createFunctionApp();
  few.post("/context/assemble", (c) => c.json({}));
  few.post("/context/predict", (c) => c.json({}));
  few.all("/context/assemble", (c) => c.json({})); // a 405 answerer is no route to offer
  let res = await fetchHandler(few)(new Request("http://127.0.0.1:54321/functions/v1/context", { method: "POST" }));
  assert.equal(res.status, 404);
  assert.equal(
    (await res.json()).error.message,
    "no route for POST /context; this function's routes: POST /context/assemble, POST /context/predict",
  );
  const many = createFunctionApp();
  for (let i = 0; i < 9; i++) many.get(`/memory/r${i}`, (c) => c.json({}));
  res = await fetchHandler(many)(new Request("http://127.0.0.1:54321/functions/v1/memory/nope"));
  assert.equal(
    (await res.json()).error.message,
    "no route for GET /memory/nope; the routes are in the README's API table",
  );
});
