// The connections the local server holds, bounded (docs/operations.md#idle-connections).
// Deno's server (Deno.serve) keeps a connection until its client closes it and has no setting to
// do otherwise: 5,000 connections that sent half a request's headers, or one request and then
// nothing, were all open 90 s later (2026-11-29 red team), and once the process ran out of file
// descriptors Deno's accept loop failed with "Too many open files", an error nothing catches: the
// server stopped (300 such connections under `ulimit -n 300`), every client refused until a restart.
// So the port is ours: each connection is accepted here and piped to Deno.serve, which listens on
// a Unix socket in a directory of this process's own (loopback TCP where there are no Unix sockets),
// and the guard closes
// * a connection that has not sent a whole request's headers HEADER_TIMEOUT_MS (10 s) after it
//   connected, or after it started its next request (a slow client still sending its body is the
//   body's bound: request-bodies.ts);
// * a connection that has had its answer and sends nothing for KEEPALIVE_IDLE_TIMEOUT_MS (30 s)
//   while nothing is on its way to the client: the server is not producing (an answer ended, or a
//   stalled export); a request being served is never cut (a long answer's silence is the server's);
// * a connection whose client takes nothing of what is on its way to it for CLIENT_STALL_FACTOR
//   times that (5 minutes): the client is not reading. A slow reader is not a stalled answer: the
//   30 s check used to count from the last bytes the server produced, so a client reading a few kB
//   a second, its write waiting for the kernel (which wakes a writer only once a good part of the
//   send buffer is free), was cut as if the export had stalled;
// and takes at most MAX_CONNECTIONS at once (each holds three descriptors: the client's, and both
// ends of the pipe to Deno.serve): the next is answered 503 server_busy and closed, nothing read.
import { ConfigError } from "../../supabase/functions/_shared/env.ts";
import { corsHeaders } from "../../supabase/functions/_shared/cors.ts";

export const DEFAULT_HEADER_TIMEOUT_MS = 10_000;
export const DEFAULT_KEEPALIVE_IDLE_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_CONNECTIONS = 1_000;
/**
 * How many idle timeouts a client may take nothing of its answer (5 minutes by default): longer
 * than an export waits for its reader (four statement timeouts, 60 s, after which the export ends
 * itself: services/memory-export.ts), so the export's bound, not the guard, ends a stalled reader's
 * export; the guard then frees the connection, which nothing else would (the write never ends).
 */
export const CLIENT_STALL_FACTOR = 10;
/** Descriptors kept for the rest of the process (database pool, files) when the default is sized to the limit. */
const RESERVED_DESCRIPTORS = 200;
const CHUNK_BYTES = 16 * 1024;
const END_OF_HEADERS = [13, 10, 13, 10];

export interface ConnectionLimits {
  maxConnections: number;
  headerTimeoutMs: number;
  idleTimeoutMs: number;
}

/** One client's connection and where its exchange is: its request's headers, its request, its answer. */
class Guarded {
  phase: "headers" | "request" | "answer" = "headers";
  since = Date.now();
  /** Bytes are on their way to the client (a write to it is waiting): a silence is then the client's. */
  #sending = false;
  #matched = 0;

  constructor(readonly client: Deno.Conn, readonly upstream: Deno.Conn) {}

  fromClient(chunk: Uint8Array): void {
    if (this.phase === "answer") {
      this.phase = "headers";
      this.#matched = 0;
    }
    this.since = Date.now();
    if (this.phase !== "headers") return;
    for (const b of chunk) {
      this.#matched = b === END_OF_HEADERS[this.#matched] ? this.#matched + 1 : b === 13 ? 1 : 0;
      if (this.#matched === 4) {
        this.phase = "request";
        return;
      }
    }
  }

  fromServer(chunk: Uint8Array): void {
    this.since = Date.now();
    // An interim answer (`100 Continue` to a client that sent `Expect: 100-continue`) is no answer:
    // the request's body follows it (it was cut by the header timeout as if a new request).
    if (this.phase === "request" && isInterimAnswerOnly(chunk)) return;
    this.phase = "answer";
  }

  /** A write to the client starts (`true`: also each part of it the client's socket took) or ends. */
  toClient(sending: boolean): void {
    this.#sending = sending;
    this.since = Date.now();
  }

  expired(now: number, limits: ConnectionLimits): boolean {
    if (this.phase === "headers") return now - this.since > limits.headerTimeoutMs;
    const bound = this.#sending ? CLIENT_STALL_FACTOR * limits.idleTimeoutMs : limits.idleTimeoutMs;
    return this.phase === "answer" && now - this.since > bound;
  }

  close(): void {
    for (const c of [this.client, this.upstream]) {
      try {
        c.close();
      } catch { /* closed already */ }
    }
  }
}

export class ConnectionGuard {
  readonly #open = new Set<Guarded>();
  /** Connections accepted and not yet closed, counted from their accept (their pipe opens after). */
  #held = 0;
  readonly #sweep: ReturnType<typeof setInterval>;
  readonly #accepting: Promise<void>;
  #closed = false;

  constructor(
    readonly listener: Deno.Listener<Deno.TcpConn, Deno.NetAddr>,
    readonly upstream: () => Promise<Deno.Conn>,
    readonly limits: ConnectionLimits,
  ) {
    const every = Math.max(5, Math.min(limits.headerTimeoutMs, limits.idleTimeoutMs) / 4);
    this.#sweep = setInterval(() => {
      const now = Date.now();
      for (const g of this.#open) if (g.expired(now, limits)) g.close();
    }, every);
    this.#accepting = this.#accept();
  }

  get addr(): Deno.NetAddr {
    return this.listener.addr;
  }

  /** Connections held now (tests wait on it). */
  get open(): number {
    return this.#held;
  }

  async #accept(): Promise<void> {
    for (;;) {
      let client: Deno.TcpConn;
      try {
        client = await this.listener.accept();
      } catch (err) {
        if (this.#closed) return;
        // Out of descriptors (other files of the process) or a client gone before accept: go on.
        if (err instanceof Deno.errors.BadResource) return;
        await new Promise((r) => setTimeout(r, 50));
        continue;
      }
      if (this.#held >= this.limits.maxConnections) {
        // Awaited, so refused connections never pile up: a short write to a new socket does not wait.
        await refuse(client, this.limits.maxConnections);
        continue;
      }
      this.#held++;
      this.#serve(client).finally(() => this.#held--);
    }
  }

  async #serve(client: Deno.TcpConn): Promise<void> {
    let upstream: Deno.Conn;
    try {
      upstream = await this.upstream();
    } catch {
      client.close();
      return;
    }
    const g = new Guarded(client, upstream);
    this.#open.add(g);
    const toServer = pump(client, upstream, (chunk) => g.fromClient(chunk), true);
    const toClient = pump(upstream, client, (chunk) => g.fromServer(chunk), false, (on) => g.toClient(on));
    await toClient;
    g.close();
    await toServer;
    this.#open.delete(g);
  }

  /** Stops accepting; `all` also closes the connections held (once the server has answered what it was serving). */
  async close(all: boolean): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      clearInterval(this.#sweep);
      try {
        this.listener.close();
      } catch { /* closed already */ }
      await this.#accepting;
    }
    if (all) { for (const g of this.#open) g.close(); }
  }
}

/** A chunk that is an HTTP/1.1 1xx head and nothing after it. */
function isInterimAnswerOnly(chunk: Uint8Array): boolean {
  const text = new TextDecoder("latin1").decode(chunk.subarray(0, 512));
  const end = text.indexOf("\r\n\r\n");
  return /^HTTP\/1\.[01] 1\d\d /.test(text) && end >= 0 && end + 4 === chunk.length;
}

/**
 * Copies `from` to `to` until `from` ends or either fails, telling `seen` each chunk and `sending`
 * each write's start, each part of it `to` took, and its end. The client's end of its sending (a
 * half-close) is passed on; the server's end closes the connection.
 */
async function pump(
  from: Deno.Conn,
  to: Deno.Conn,
  seen: (chunk: Uint8Array) => void,
  halfClose: boolean,
  sending: (on: boolean) => void = () => {},
) {
  const buf = new Uint8Array(CHUNK_BYTES);
  try {
    for (;;) {
      const n = await from.read(buf);
      if (n === null) break;
      const chunk = buf.subarray(0, n);
      seen(chunk);
      for (let sent = 0; sent < n;) {
        sending(true);
        sent += await to.write(chunk.subarray(sent));
      }
      sending(false);
    }
    if (halfClose) await to.closeWrite();
  } catch { /* either side went away: the connection is closed by its owner */ }
}

/** The answer over the cap, written and closed before anything of the request is read. */
async function refuse(client: Deno.Conn, max: number): Promise<void> {
  const body = JSON.stringify({
    error: {
      code: "server_busy",
      message:
        `the server holds as many connections as it takes at once (${max}, MAX_CONNECTIONS); nothing was read or written, send it again`,
      request_id: crypto.randomUUID(),
    },
  });
  const head = [
    "HTTP/1.1 503 Service Unavailable",
    "content-type: application/json",
    "retry-after: 1",
    "connection: close",
    ...Object.entries(corsHeaders).map(([k, v]) => `${k}: ${v}`),
    `content-length: ${new TextEncoder().encode(body).length}`,
  ].join("\r\n");
  try {
    await client.write(new TextEncoder().encode(`${head}\r\n\r\n${body}`));
  } catch { /* gone already */ }
  try {
    client.close();
  } catch { /* closed already */ }
}

/**
 * The guard's bounds: the options', else HEADER_TIMEOUT_MS, KEEPALIVE_IDLE_TIMEOUT_MS and
 * MAX_CONNECTIONS, else the defaults (MAX_CONNECTIONS no more than the process's descriptor limit
 * leaves room for, where it can be read).
 */
export function connectionLimitsFrom(
  env: Record<string, string | undefined>,
  opts: Partial<ConnectionLimits>,
): ConnectionLimits {
  const setting = (name: string, text: string | undefined, fallback: number) => {
    if (text === undefined || text === "") return fallback;
    const n = Number(text);
    if (!Number.isInteger(n) || n < 1) throw new ConfigError(`invalid ${name}: ${text} (a positive integer)`);
    return n;
  };
  return {
    maxConnections: opts.maxConnections ?? setting("MAX_CONNECTIONS", env.MAX_CONNECTIONS, defaultMaxConnections()),
    headerTimeoutMs: opts.headerTimeoutMs ??
      setting("HEADER_TIMEOUT_MS", env.HEADER_TIMEOUT_MS, DEFAULT_HEADER_TIMEOUT_MS),
    idleTimeoutMs: opts.idleTimeoutMs ??
      setting("KEEPALIVE_IDLE_TIMEOUT_MS", env.KEEPALIVE_IDLE_TIMEOUT_MS, DEFAULT_KEEPALIVE_IDLE_TIMEOUT_MS),
  };
}

/** 1,000, or what the descriptor limit (Linux's /proc/self/limits) leaves room for at three a connection. */
function defaultMaxConnections(): number {
  try {
    const limits = Deno.readTextFileSync("/proc/self/limits");
    const soft = Number(/^Max open files\s+(\d+)/m.exec(limits)?.[1]);
    if (Number.isInteger(soft) && soft > 0) {
      return Math.max(16, Math.min(DEFAULT_MAX_CONNECTIONS, Math.floor((soft - RESERVED_DESCRIPTORS) / 3)));
    }
  } catch { /* not Linux, or not readable: the default */ }
  return DEFAULT_MAX_CONNECTIONS;
}
