// The local server bounds the request bodies it is receiving (scripts/serve/request-bodies.ts,
// docs/operations.md#pending-request-bodies): a client that sends half a body and then nothing is
// answered 408 request_timeout once BODY_IDLE_TIMEOUT_MS passes with nothing arriving (set small
// here: the test waits for the answer, not for a time), and with MAX_OPEN_BODIES requests with a
// body in the server, the next one is a 503 server_busy at once, while requests without a body are
// served. Nothing is written either way.
import assert from "node:assert/strict";
import { userHeaders } from "./support/auth.ts";
import { functionJson, type RunningServer, startTestServer } from "./support/http_server.ts";
import { newTenant, testSql } from "./support/seed.ts";
import { waitUntil } from "./support/wait.ts";

/** A raw connection that sends a remember's headers and the first 10 bytes of its 1,000-byte body, then nothing. */
async function halfSentRemember(server: RunningServer, tenant: string) {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
  const headers = Object.entries({ ...await userHeaders(tenant), "content-type": "application/json" })
    .map(([k, v]) => `${k}: ${v}\r\n`).join("");
  await conn.write(new TextEncoder().encode(
    `POST /functions/v1/memory/remember HTTP/1.1\r\nhost: 127.0.0.1\r\n${headers}content-length: 1000\r\n\r\n{"content"`,
  ));
  return {
    /** The answer's status line and body (the server's answer arrives while the body is still unsent). */
    async answer(): Promise<{ status: string; body: string }> {
      const buf = new Uint8Array(4096);
      let text = "";
      // A deadline, not a measure: an answer that never comes fails the test instead of hanging it.
      let timer: ReturnType<typeof setTimeout> | undefined;
      const never = new Promise<null>((
        _,
        reject,
      ) => (timer = setTimeout(() => reject(new Error("no answer")), 30_000)));
      try {
        while (!text.includes("}}")) {
          const n = await Promise.race([conn.read(buf), never]);
          if (n === null) break;
          text += new TextDecoder().decode(buf.subarray(0, n));
        }
      } finally {
        clearTimeout(timer);
      }
      return { status: text.split("\r\n")[0]!, body: text.slice(text.indexOf("\r\n\r\n") + 4) };
    },
    close() {
      try {
        conn.close();
      } catch { /* closed already */ }
    },
  };
}

const memoriesOf = async (sql: ReturnType<typeof testSql>, tenant: string) =>
  (await sql<{ n: number }[]>`select count(*)::int as n from public.devai_memories where owner_id = ${tenant}`)[0]!.n;

Deno.test("request bodies: a client that sends half a body and then nothing is answered 408 request_timeout, nothing written", async () => {
  const server = await startTestServer({ worker: false, bodyIdleTimeoutMs: 50 });
  const sql = testSql(1);
  const a = newTenant();
  const client = await halfSentRemember(server, a);
  try {
    const { status, body } = await client.answer();
    assert.equal(status, "HTTP/1.1 408 Request Timeout");
    assert.equal(JSON.parse(body.slice(body.indexOf("{"))).error.code, "request_timeout");
    assert.equal(await memoriesOf(sql, a), 0);
    const after = await functionJson(server, "memory/remember", await userHeaders(a), {
      content: "We deploy on fridays.",
    });
    assert.equal(after.status, 201, "the tenant's next request is served");
  } finally {
    client.close();
    await sql.end();
    await server.close();
  }
});

Deno.test("request bodies: with MAX_OPEN_BODIES being received, the next body is a 503 server_busy at once; requests without one are served; the place is given back when the client goes", async () => {
  const server = await startTestServer({ worker: false, maxOpenBodies: 1, bodyIdleTimeoutMs: 600_000 });
  const sql = testSql(1);
  const [a, b] = [newTenant(), newTenant()];
  const held = await halfSentRemember(server, a);
  try {
    await waitUntil(() => Promise.resolve(server.openBodies() === 1), "the half-sent remember is being received");
    const res = await fetch(`${server.functionsUrl}/memory/remember`, {
      method: "POST",
      headers: { ...await userHeaders(b), "content-type": "application/json" },
      body: JSON.stringify({ content: "Billing runs on Postgres." }),
    });
    const refused = await res.json();
    assert.equal(res.status, 503);
    assert.equal(refused.error.code, "server_busy");
    assert.equal(res.headers.get("retry-after"), "1");
    assert.equal((await functionJson(server, "memory/stats", await userHeaders(b))).status, 200, "a GET is served");
    assert.equal(await memoriesOf(sql, b), 0);

    held.close(); // the client goes away: its body's read fails, its place is given back
    await waitUntil(async () => {
      const r = await functionJson(server, "memory/remember", await userHeaders(b), {
        content: "Billing runs on Postgres.",
      });
      return r.status === 201 || (r.status === 503 ? false : assert.fail(`answered ${r.status}`));
    }, "b's remember is served once the place is given back");
    assert.equal(await memoriesOf(sql, b), 1);
    assert.equal(server.openBodies(), 0);
  } finally {
    held.close();
    await sql.end();
    await server.close();
  }
});
