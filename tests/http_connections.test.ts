// The local server bounds the connections it holds (scripts/serve/connection-guard.ts,
// docs/operations.md#idle-connections): Deno's server kept each one until its client closed it, so
// connections that sent half a request's headers, or a request and then nothing, piled up until
// the process ran out of file descriptors and its accept loop failed, which stopped the server.
// Now a connection that has not sent a whole request's headers within HEADER_TIMEOUT_MS, or is
// silent after its answer for KEEPALIVE_IDLE_TIMEOUT_MS, is closed (both set small here: the tests
// wait for the close, not for a time); a request being served is not cut; and past MAX_CONNECTIONS
// the next connection is answered 503 server_busy at once.
import assert from "node:assert/strict";
import { userHeaders } from "./support/auth.ts";
import { functionJson, type RunningServer, startTestServer } from "./support/http_server.ts";
import { newTenant, testSql } from "./support/seed.ts";
import { waitUntil } from "./support/wait.ts";

const encoder = new TextEncoder();

/** A raw connection to the server that sends `text`. */
async function rawConnection(server: RunningServer, text: string) {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
  await conn.write(encoder.encode(text));
  return {
    send: (more: string) => conn.write(encoder.encode(more)),
    /** What the server sends until it closes the connection (a deadline fails a connection never closed). */
    async readUntilClosed(): Promise<string> {
      const buf = new Uint8Array(8192);
      let text = "";
      let timer: ReturnType<typeof setTimeout> | undefined;
      const never = new Promise<null>((
        _,
        reject,
      ) => (timer = setTimeout(() => reject(new Error("never closed")), 30_000)));
      try {
        for (;;) {
          const n = await Promise.race([conn.read(buf), never]);
          if (n === null) return text;
          text += new TextDecoder().decode(buf.subarray(0, n));
        }
      } catch (err) {
        if ((err as Error).message === "never closed") throw err;
        return text; // reset by the server: closed too
      } finally {
        clearTimeout(timer);
      }
    },
    /** The first answer head the server sends (an interim one such as 100 Continue included). */
    async readHead(): Promise<string> {
      const buf = new Uint8Array(8192);
      let text = "";
      while (!text.includes("\r\n\r\n")) {
        const n = await conn.read(buf);
        if (n === null) break;
        text += new TextDecoder().decode(buf.subarray(0, n));
      }
      return text;
    },
    close() {
      try {
        conn.close();
      } catch { /* closed already */ }
    },
  };
}

const HALF_HEADERS = "GET /functions/v1/memory/stats HTTP/1.1\r\nhost: 127.0.0.1\r\nx-slow: ";

Deno.test("connections: one that sends half of a request's headers and then nothing is closed; the server serves on", async () => {
  const server = await startTestServer({ worker: false, connections: { headerTimeoutMs: 50 } });
  const client = await rawConnection(server, HALF_HEADERS);
  try {
    assert.equal(await client.readUntilClosed(), "", "closed without an answer");
    await waitUntil(() => Promise.resolve(server.openConnections() === 0), "the connection is let go");
    const t = newTenant();
    assert.equal((await functionJson(server, "memory/stats", await userHeaders(t))).status, 200);
  } finally {
    client.close();
    await server.close();
  }
});

Deno.test("connections: one that had its answer and then sends nothing is closed", async () => {
  const server = await startTestServer({ worker: false, connections: { idleTimeoutMs: 50 } });
  const client = await rawConnection(server, "GET /functions/v1/nope HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n");
  try {
    const answered = await client.readUntilClosed();
    assert.match(answered, /^HTTP\/1\.1 404 /, "answered first, then closed");
    await waitUntil(() => Promise.resolve(server.openConnections() === 0), "the connection is let go");
  } finally {
    client.close();
    await server.close();
  }
});

Deno.test("connections: a request whose body takes longer than both timeouts is served whole", async () => {
  const server = await startTestServer({ worker: false, connections: { headerTimeoutMs: 50, idleTimeoutMs: 50 } });
  const sql = testSql(1);
  const t = newTenant();
  const body = JSON.stringify({ content: "The release train leaves on Tuesdays." });
  const headers = Object.entries({ ...await userHeaders(t), "content-type": "application/json" })
    .map(([k, v]) => `${k}: ${v}\r\n`).join("");
  const client = await rawConnection(
    server,
    `POST /functions/v1/memory/remember HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n${headers}content-length: ${body.length}\r\n\r\n${
      body.slice(0, 10)
    }`,
  );
  try {
    await waitUntil(() => Promise.resolve(server.openBodies() === 1), "the body is being received");
    // Another connection's header timeout passing is the event that shows both timeouts passed.
    const late = await rawConnection(server, HALF_HEADERS);
    assert.equal(await late.readUntilClosed(), "");
    late.close();
    await client.send(body.slice(10));
    assert.match(await client.readUntilClosed(), /^HTTP\/1\.1 201 /);
    const [n] = await sql<{ n: number }[]>`select count(*)::int as n from public.devai_memories where owner_id = ${t}`;
    assert.equal(n!.n, 1);
  } finally {
    client.close();
    await sql.end();
    await server.close();
  }
});

Deno.test("connections: past MAX_CONNECTIONS the next one is answered 503 server_busy at once; its place comes back", async () => {
  const server = await startTestServer({ worker: false, connections: { maxConnections: 2, headerTimeoutMs: 600_000 } });
  const held = [await rawConnection(server, HALF_HEADERS), await rawConnection(server, HALF_HEADERS)];
  const t = newTenant();
  try {
    await waitUntil(() => Promise.resolve(server.openConnections() === 2), "both connections are held");
    const refused = await fetch(`${server.functionsUrl}/memory/stats`, { headers: await userHeaders(t) });
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get("retry-after"), "1");
    assert.equal((await refused.json()).error.code, "server_busy");
    for (const c of held) c.close();
    await waitUntil(() => Promise.resolve(server.openConnections() === 0), "the held connections are let go");
    assert.equal((await functionJson(server, "memory/stats", await userHeaders(t))).status, 200);
  } finally {
    for (const c of held) c.close();
    await server.close();
  }
});

Deno.test("connections: a body sent after 100 Continue, later than both timeouts, is served whole", async () => {
  const server = await startTestServer({ worker: false, connections: { headerTimeoutMs: 50, idleTimeoutMs: 50 } });
  const sql = testSql(1);
  const t = newTenant();
  const body = JSON.stringify({ content: "Hotfixes go out through the canary first." });
  const headers = Object.entries({ ...await userHeaders(t), "content-type": "application/json" })
    .map(([k, v]) => `${k}: ${v}\r\n`).join("");
  // curl asks so for bodies over 1 MB: the 100 Continue was read as the answer, the body as the
  // next request's headers, and the connection cut by the header timeout while the body arrived.
  const client = await rawConnection(
    server,
    `POST /functions/v1/memory/remember HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\nexpect: 100-continue\r\n${headers}content-length: ${body.length}\r\n\r\n`,
  );
  try {
    assert.match(await client.readHead(), /^HTTP\/1\.1 100 /);
    const late = await rawConnection(server, HALF_HEADERS);
    assert.equal(await late.readUntilClosed(), "");
    late.close();
    await client.send(body);
    assert.match(await client.readUntilClosed(), /^HTTP\/1\.1 201 /);
    const [n] = await sql<{ n: number }[]>`select count(*)::int as n from public.devai_memories where owner_id = ${t}`;
    assert.equal(n!.n, 1);
  } finally {
    client.close();
    await sql.end();
    await server.close();
  }
});
