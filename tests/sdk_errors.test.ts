// The SDK's MemoryApiError carries what the server says about waiting: Retry-After, as seconds, on
// the 429s and 503s that send it (rate limits, a database away), so a caller can back off for as
// long as the server asks. The answers come from a fetch passed to the client (no server needed).
import assert from "node:assert/strict";
import { createMemoryClient, MemoryApiError } from "../sdk/mod.ts";
import { retryAfterSeconds } from "../sdk/src/errors.ts";

function clientAnswering(status: number, headers: Record<string, string>, body: unknown) {
  return createMemoryClient({
    supabaseUrl: "http://127.0.0.1:9",
    accessToken: "a-token",
    fetch: () => Promise.resolve(new Response(JSON.stringify(body), { status, headers })),
  });
}

async function errorOf(p: Promise<unknown>): Promise<MemoryApiError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof MemoryApiError, String(err));
    return err;
  }
  throw new Error("the call did not fail");
}

Deno.test("sdk errors: a 429's Retry-After is retryAfterSeconds, beside its code", async () => {
  const memory = clientAnswering(429, { "retry-after": "7", "content-type": "application/json" }, {
    error: { code: "rate_limited", message: "too many requests: 600 a minute" },
  });
  const err = await errorOf(memory.stats());
  assert.equal(err.status, 429);
  assert.equal(err.code, "rate_limited");
  assert.equal(err.retryAfterSeconds, 7);
});

Deno.test("sdk errors: a 503 that is no error body keeps Retry-After too; none sent is undefined", async () => {
  const away = clientAnswering(503, { "retry-after": "2" }, "upstream connect error");
  const err = await errorOf(away.stats());
  assert.equal(err.code, "http_error");
  assert.equal(err.retryAfterSeconds, 2);

  const plain = clientAnswering(404, { "content-type": "application/json" }, {
    error: { code: "not_found", message: "no memory 1" },
  });
  assert.equal((await errorOf(plain.stats())).retryAfterSeconds, undefined);
});

Deno.test("sdk errors: Retry-After as an HTTP date is seconds from now; garbage is undefined", () => {
  const now = Date.parse("2026-11-27T12:00:00Z");
  assert.equal(retryAfterSeconds("Fri, 27 Nov 2026 12:00:30 GMT", now), 30);
  assert.equal(retryAfterSeconds("Fri, 27 Nov 2026 11:00:00 GMT", now), 0, "a date passed: send it now");
  assert.equal(retryAfterSeconds("soon", now), undefined);
  // Neither delta-seconds nor an HTTP date, though Date.parse reads them as dates (then 0: "now").
  assert.equal(retryAfterSeconds("1.5", now), undefined);
  assert.equal(retryAfterSeconds("-1", now), undefined);
  assert.equal(retryAfterSeconds("Sunday, 27-Nov-26 12:00:10 GMT", now), 10, "the obsolete RFC 850 form");
  assert.equal(retryAfterSeconds(" 12 ", now), 12);
  assert.equal(retryAfterSeconds(null, now), undefined);
});

Deno.test("sdk errors: every HTTP-date form of Retry-After is GMT, whatever the machine's time zone", () => {
  const now = Date.parse("2026-11-27T12:00:00Z");
  const zone = Deno.env.get("TZ");
  try {
    for (const tz of ["America/New_York", "Asia/Tokyo", "UTC"]) {
      Deno.env.set("TZ", tz);
      assert.equal(retryAfterSeconds("Fri, 27 Nov 2026 12:00:30 GMT", now), 30, `IMF-fixdate in ${tz}`);
      assert.equal(retryAfterSeconds("Friday, 27-Nov-26 12:00:30 GMT", now), 30, `RFC 850 in ${tz}`);
      // asctime names no zone; a machine in New York read it 5 hours late, one in Tokyo 9 hours early (0).
      assert.equal(retryAfterSeconds("Fri Nov 27 12:00:30 2026", now), 30, `asctime in ${tz}`);
      assert.equal(retryAfterSeconds("Fri Nov  6 12:00:00 2026", Date.parse("2026-11-06T11:59:00Z")), 60);
      assert.equal(retryAfterSeconds("7", now), 7);
    }
  } finally {
    if (zone === undefined) Deno.env.delete("TZ");
    else Deno.env.set("TZ", zone);
  }
});

/** A functions server whose answers `answer` writes; `arrived` resolves when a request is in. */
function serverAnswering(answer: (req: Request) => Response | Promise<Response>) {
  let arrived!: () => void;
  const requested = new Promise<void>((resolve) => arrived = resolve);
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, (req) => {
    arrived();
    return answer(req);
  });
  return { url: `http://127.0.0.1:${server.addr.port}`, requested, close: () => server.shutdown() };
}

Deno.test("sdk errors: a 2xx whose body is not JSON (a proxy's page) is a MemoryApiError, not a SyntaxError", async () => {
  const proxied = createMemoryClient({
    supabaseUrl: "http://127.0.0.1:9",
    accessToken: "a-token",
    fetch: () => Promise.resolve(new Response("<html>sign in to the wifi</html>", { status: 200 })),
  });
  const err = await errorOf(proxied.stats());
  assert.equal(err.status, 200);
  assert.equal(err.code, "http_error");
  assert.equal(err.message, "the answer (HTTP 200) is not JSON: <html>sign in to the wifi</html>");
});

Deno.test("sdk errors: an answer whose body stalls past timeoutMs is the timeout MemoryApiError", async () => {
  const stalled = new AbortController();
  // The headers come at once, the body never ends (a server stuck mid-answer).
  const server = serverAnswering(() =>
    new Response(
      new ReadableStream({
        start(c) {
          c.enqueue(new TextEncoder().encode('{"block":'));
          stalled.signal.addEventListener("abort", () => c.close());
        },
      }),
      { headers: { "content-type": "application/json" } },
    )
  );
  try {
    const memory = createMemoryClient({ supabaseUrl: server.url, accessToken: "a-token", timeoutMs: 200 });
    const err = await errorOf(memory.retrieve({ message: "hi" }));
    assert.equal(err.status, 0);
    assert.equal(err.code, "timeout");
  } finally {
    stalled.abort();
    await server.close();
  }
});

Deno.test("sdk errors: the client's signal cancels a call under way, and the call fails as aborted", async () => {
  const held = new AbortController();
  const server = serverAnswering(() =>
    new Promise<Response>((resolve) => held.signal.addEventListener("abort", () => resolve(Response.json({}))))
  );
  try {
    const cancel = new AbortController();
    const memory = createMemoryClient({ supabaseUrl: server.url, accessToken: "a-token", signal: cancel.signal });
    const call = errorOf(memory.retrieve({ message: "hi" }));
    await server.requested;
    cancel.abort(new Error("the user pressed Esc")); // whatever reason it is given
    const err = await call;
    assert.equal(err.status, 0);
    assert.equal(err.code, "aborted");
    assert.equal((await errorOf(memory.stats())).code, "aborted", "later calls of the client too");
  } finally {
    held.abort();
    await server.close();
  }
});

Deno.test("sdk errors: a supabaseUrl that is the functions URL, or has no scheme, is refused at once, saying what to give", () => {
  for (
    const supabaseUrl of [
      "http://127.0.0.1:54321/functions/v1",
      "https://abc.supabase.co/functions/v1/",
      "127.0.0.1:54321",
    ]
  ) {
    assert.throws(
      () => createMemoryClient({ supabaseUrl, accessToken: "a-token" }),
      (err: unknown) =>
        err instanceof MemoryApiError && err.status === 0 && err.code === "client_error" &&
        err.message.includes("without /functions/v1") && err.message.includes(supabaseUrl),
      supabaseUrl,
    );
  }
  for (const supabaseUrl of ["http://127.0.0.1:54321", "https://abc.supabase.co/", "HTTPS://abc.supabase.co"]) {
    createMemoryClient({ supabaseUrl, accessToken: "a-token" });
  }
});
