// An export's client that reads nothing, through the local server's HTTP stack (scripts/serve.ts:
// the connection guard, Deno's server, the handler's stream): the server reads the copy only as
// the client takes the body, so it holds a few pages and the socket buffers, never the whole body,
// and the copy ends after the idle bound: what the client then reads is a truncated body
// (docs/operations.md#exports). A server that read ahead of its client would have read the whole
// export into its memory before the bound, and sent it whole.
import assert from "node:assert/strict";
import { startServer } from "../scripts/serve.ts";
import { signLocalToken } from "../scripts/serve/local_tokens.ts";
import { LOCAL_DEV_JWT_SECRET } from "../scripts/serve.ts";
import { realServerOnly } from "./support/backend.ts";
import { testDatabaseUrl } from "./support/config.ts";
import { newTenant, testSql } from "./support/seed.ts";
import { waitUntil } from "./support/wait.ts";

const sql = testSql(2);
const opts = { sanitizeOps: false, sanitizeResources: false };
const MEMORIES = 4_000;

Deno.test({
  ...realServerOnly(
    "export: a client that reads nothing is sent a few pages, not the whole body, through the HTTP server",
    "the local server's pool and timers on a real Postgres server",
  ),
  ...opts,
}, async () => {
  const tenant = newTenant();
  // Some 5 kB a memory in the body (its content, and again in its ADD history row): 20 MB, far
  // more than the sockets' buffers (4.5 MB on loopback here) and a few pages of 500 memories.
  await sql.begin(async (tx) => {
    await tx`select set_config('memory.actor', 'test:seed', true)`;
    await tx`
      insert into public.devai_memories
        (owner_id, content, namespace, memory_type, priority, strength, base_strength, importance, pinned, is_valid,
         state, metadata, access_count, last_accessed_at, updated_at)
      select ${tenant}::uuid, 'fact ' || i || repeat(' exported', 220), 'devai/global/notes', 'semantic', 'medium',
             1, 1, 3, false, true, 'active', '{}'::jsonb, 0, now(), now()
        from generate_series(1, ${MEMORIES}) i`;
  });
  const [seeded] = await sql<{ bytes: number }[]>`
    select sum(octet_length(content))::int * 2 as bytes from public.devai_memories where owner_id = ${tenant}`;
  // Statements of 6 s: the copy is deleted once no page has been asked for four times that. The
  // copy of these 20 MB is one statement, and on a machine loaded ninefold (a CI beside other
  // work) it outlasted 3 s: the export then answered 503 before the test began.
  const server = await startServer({
    databaseUrl: testDatabaseUrl(),
    port: 0,
    env: { ...Deno.env.toObject(), DB_STATEMENT_TIMEOUT_MS: "6000" },
    worker: false,
    scheduler: false,
    probe: false,
    logRequests: false,
    // The guard would close the stalled connection after its idle bound: the export's is tested.
    connections: { idleTimeoutMs: 600_000 },
  });
  const error = console.error;
  console.error = () => {};
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
  try {
    const token = await signLocalToken(LOCAL_DEV_JWT_SECRET, {
      role: "authenticated",
      sub: tenant,
      aud: "authenticated",
    });
    await conn.write(new TextEncoder().encode(
      `GET /functions/v1/memory/export HTTP/1.1\r\nhost: local\r\nconnection: close\r\nauthorization: Bearer ${token}\r\n\r\n`,
    ));
    const buf = new Uint8Array(64 * 1024);
    const head = new TextDecoder().decode(buf.subarray(0, (await conn.read(buf)) ?? 0));
    assert.match(head, /^HTTP\/1\.1 200 /);
    // Nothing more is read until the stalled export's copy is gone.
    await waitUntil(async () => {
      const [copy] = await sql<{ n: number }[]>`
        select count(*)::int as n from memory_private.export_rows where owner_id = ${tenant}`;
      return copy!.n === 0;
    }, "the stalled export's copy deleted");
    let received = 0;
    let tail = "";
    for (;;) {
      const n = await conn.read(buf).catch(() => null);
      if (n === null) break;
      received += n;
      tail = (tail + new TextDecoder().decode(buf.subarray(Math.max(0, n - 200), n))).slice(-200);
    }
    // (The body is chunked: its last chunk, the counts, would be followed by the chunked end.)
    assert.doesNotMatch(tail, /"counts":\{[^}]*\}\}/, "the body ends early, without its counts");
    assert.ok(received < seeded!.bytes / 2, `received ${received} bytes of a body over ${seeded!.bytes}`);
  } finally {
    console.error = error;
    conn.close();
    await server.close();
  }
});

Deno.test({ name: "close the pool", ...opts }, async () => {
  await sql.end();
});
