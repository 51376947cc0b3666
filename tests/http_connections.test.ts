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
import { ConnectionGuard } from "../scripts/serve/connection-guard.ts";

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

/**
 * A guard (idle bound `idleTimeoutMs`) in front of a server that answers each request with a head
 * and `bodyBytes` bytes, then closes, or, with `stall`, sends the head and part of the body and
 * nothing more (a stalled export).
 */
async function guardedAnswer(idleTimeoutMs: number, bodyBytes: number, stall = false) {
  const upstream = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const serving = (async () => {
    for await (const conn of upstream) {
      (async () => {
        await conn.read(new Uint8Array(8192));
        const head = encoder.encode(`HTTP/1.1 200 OK\r\ncontent-length: ${bodyBytes}\r\nconnection: close\r\n\r\n`);
        const body = new Uint8Array(stall ? 256 * 1024 : bodyBytes).fill(120);
        for (const bytes of [head, body]) {
          for (let sent = 0; sent < bytes.length;) sent += await conn.write(bytes.subarray(sent));
        }
        if (!stall) conn.close();
      })().catch(() => {});
    }
  })();
  const guard = new ConnectionGuard(
    Deno.listen({ hostname: "127.0.0.1", port: 0 }),
    () => Deno.connect({ hostname: "127.0.0.1", port: upstream.addr.port }),
    { maxConnections: 10, headerTimeoutMs: 10_000, idleTimeoutMs },
  );
  const client = await Deno.connect({ hostname: "127.0.0.1", port: guard.addr.port });
  await client.write(encoder.encode("GET /export HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n"));
  return {
    guard,
    client,
    /** Reads until the connection ends, pausing `pauseMs` after every `everyBytes`: the bytes read. */
    async readAll(everyBytes: number, pauseMs: number): Promise<number> {
      const buf = new Uint8Array(64 * 1024);
      let received = 0;
      let sincePause = 0;
      for (;;) {
        const n = await client.read(buf).catch(() => null);
        if (n === null) return received;
        received += n;
        sincePause += n;
        if (sincePause >= everyBytes) {
          sincePause = 0;
          await new Promise((r) => setTimeout(r, pauseMs));
        }
      }
    },
    async close() {
      try {
        client.close();
      } catch { /* closed already */ }
      await guard.close(true);
      upstream.close();
      await serving.catch(() => {});
    },
  };
}

Deno.test("connections: a client reading a long answer slowly, silent longer than the idle bound, gets all of it", async () => {
  // 32 MB, far more than the sockets' buffers (some 10 MB on loopback), read 4 MB at a time (the
  // kernel wakes the guard's waiting write once a good part of its send buffer is free) with pauses
  // longer than the idle bound: the guard's writes wait on the client; the server is not silent,
  // the client is. The guard counted its idle time from the last bytes the server produced, and cut
  // this connection at the first pause (a slow reader taken for a stalled answer).
  const BODY = 32 * 1024 * 1024;
  const run = await guardedAnswer(200, BODY);
  try {
    const received = await run.readAll(4 * 1024 * 1024, 500);
    assert.ok(received > BODY, `received ${received} bytes of a ${BODY}-byte body`);
  } finally {
    await run.close();
  }
});

Deno.test("connections: a client that reads nothing, or a server that stalls mid-answer, is cut", async () => {
  // The client takes nothing: cut once it has taken nothing for CLIENT_STALL_FACTOR idle bounds.
  const unread = await guardedAnswer(50, 32 * 1024 * 1024);
  try {
    await waitUntil(() => Promise.resolve(unread.guard.open === 0), "the unread connection is let go");
  } finally {
    await unread.close();
  }
  // The server sends part of its answer and stops, all of it taken: cut after the idle bound.
  const stalled = await guardedAnswer(50, 32 * 1024 * 1024, true);
  try {
    const received = await stalled.readAll(Infinity, 0);
    // (Its head and some of the 256 kB it sent before it stopped: a loaded machine's pause in the
    // sending is a silence too.)
    assert.ok(received > 0 && received < 1024 * 1024, `received ${received} bytes`);
    await waitUntil(() => Promise.resolve(stalled.guard.open === 0), "the stalled connection is let go");
  } finally {
    await stalled.close();
  }
});
