// Measures what the server holds for an export whose client reads slowly or not at all
// (docs/operations.md#exports): the local server (scripts/serve.ts) runs in this process, CLIENTS
// raw TCP clients each ask for an export of a tenant of bench/export-load.ts (the big one first, then
// the small ones) and read READ_BYTES every second (0: nothing after the response's head), and every
// second this prints, per client, the bytes it has read, the pages the server has read from the
// exports' copies (calls of public.memory_export_page: the database needs track_functions = 'all'),
// and the process's memory (Deno.memoryUsage()). With backpressure, the pages read stay a few
// ahead of the bytes read; without it, the server reads the copy as fast as the database gives it
// and holds the rest.
// deno run -A --config supabase/functions/deno.json bench/export-slow-reader.ts <db url> [clients] [read bytes/s] [seconds]
import postgres from "postgres";
import { signLocalToken } from "../scripts/serve/local_tokens.ts";
import { LOCAL_DEV_JWT_SECRET, startServer } from "../scripts/serve.ts";
import { BIG_TENANT, SMALL_TENANTS } from "./export-tenants.ts";

const [dbUrl, clientsArg = "1", readArg = "4096", secondsArg = "60"] = Deno.args;
const CLIENTS = Number(clientsArg);
const READ_BYTES = Number(readArg);
const SECONDS = Number(secondsArg);
const sql = postgres(dbUrl!, { max: 1, onnotice: () => {} });
const server = await startServer({
  databaseUrl: dbUrl,
  port: 0,
  worker: false,
  scheduler: false,
  probe: false,
  logRequests: false,
});
const mb = (n: number) => Math.round(n / 1048576 * 10) / 10;
const pagesRead = async () => {
  await new Promise((r) => setTimeout(r, 1100)); // the backends' statistics are flushed at most once a second
  const [r] = await sql<{ n: number }[]>`
    select coalesce(sum(calls), 0)::float8 as n from pg_stat_user_functions where funcname = 'memory_export_page'`;
  return r!.n;
};
const pages0 = await pagesRead();

interface Client {
  tenant: string;
  read: number;
  head: string;
  conn: Deno.TcpConn;
}
const clients: Client[] = [];
for (const tenant of [BIG_TENANT, ...SMALL_TENANTS].slice(0, CLIENTS)) {
  const token = await signLocalToken(LOCAL_DEV_JWT_SECRET, {
    role: "authenticated",
    sub: tenant,
    aud: "authenticated",
  });
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
  await conn.write(new TextEncoder().encode(
    `GET /functions/v1/memory/export?format=json HTTP/1.1\r\nhost: local\r\nconnection: close\r\nauthorization: Bearer ${token}\r\n\r\n`,
  ));
  clients.push({ tenant, read: 0, head: "", conn });
}
// Each client's first read takes the response's head (and what follows in that read).
await Promise.all(clients.map(async (c) => {
  const buf = new Uint8Array(4096);
  const n = (await c.conn.read(buf)) ?? 0;
  c.read += n;
  c.head = new TextDecoder().decode(buf.subarray(0, n)).split("\r\n")[0]!;
}));
console.log(JSON.stringify({ heads: clients.map((c) => c.head) }));
const start = performance.now();
const buf = new Uint8Array(64 * 1024);
const base = Deno.memoryUsage();
for (let s = 1; s <= SECONDS; s++) {
  await Promise.all(clients.map(async (c) => {
    for (let want = READ_BYTES; want > 0;) {
      const n = await c.conn.read(buf.subarray(0, Math.min(want, buf.length)));
      if (n === null) return;
      c.read += n;
      want -= n;
    }
  }));
  const wait = start + s * 1000 - performance.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  if (s % 5 !== 0 && s !== 1) continue;
  const m = Deno.memoryUsage();
  // With --v8-flags=--expose-gc: what is live after a collection (the rest is garbage V8 keeps).
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const live = gc ? Deno.memoryUsage() : undefined;
  console.log(JSON.stringify({
    s,
    client_kb: clients.map((c) => Math.round(c.read / 1024)),
    pages_read: (await pagesRead()) - pages0,
    rss_mb: mb(m.rss),
    heap_used_mb: mb(m.heapUsed),
    external_mb: mb(m.external),
    rss_growth_mb: mb(m.rss - base.rss),
    ...(live ? { live_heap_mb: mb(live.heapUsed), live_external_mb: mb(live.external) } : {}),
  }));
}
// Then each client reads what is left: the whole body, or what the server sent before it ended the
// export (a stalled client's copy is deleted after the idle bound; its connection closed).
const drained = await Promise.all(clients.map(async (c) => {
  let tail = "";
  for (;;) {
    const n = await c.conn.read(buf).catch(() => null);
    if (n === null) break;
    c.read += n;
    tail = new TextDecoder().decode(buf.subarray(Math.max(0, n - 40), n));
  }
  return { kb: Math.round(c.read / 1024), tail };
}));
console.log(JSON.stringify({ drained }));
for (const c of clients) c.conn.close();
await server.close();
await sql.end();
