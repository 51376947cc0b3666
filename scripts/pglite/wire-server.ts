// Postgres wire-protocol server in front of one PGlite instance.
//
// PGlite is a single Postgres backend (one session). @electric-sql/pglite-socket 0.2.x can
// multiplex several TCP clients onto it, but it interleaves clients message by message and only
// keeps a client exclusive inside an explicit BEGIN ... COMMIT. Outside BEGIN, the extended
// protocol's Parse/Bind/Execute/Sync of two clients interleave: measured with postgres.js
// (`prepare: false`, pool of 10, parallel queries): 30 of 60 queries failed with
// `bind message supplies 1 parameters, but prepared statement "" requires 2` (one client bound
// the other's unnamed statement), and an error in one client's pipeline makes the backend skip
// the other client's messages until Sync.
//
// This server does it the way a connection pooler in session-per-transaction mode would:
//   * a client takes the backend (the "lease") with its first message and keeps it until the
//     backend reports ReadyForQuery with status 'I' (idle, outside any transaction). So an
//     extended-protocol pipeline, an explicit transaction, a failed transaction ('E') and a COPY
//     are never interleaved with another client. Other clients queue (FIFO) meanwhile.
//   * named prepared statements and portals are renamed per client (`c<id>_<name>`), so two
//     clients (or two processes whose drivers pick the same names) never collide; a client's
//     statements are deallocated when it disconnects.
//   * a client that disconnects inside a transaction has it rolled back; when the last client
//     leaves, the session is reset (DISCARD ALL), so session-level SET/SET ROLE cannot outlive it.
//   * a client idle inside a transaction longer than idleInTransactionTimeoutMs is disconnected
//     with FATAL 25P03 (Postgres' idle_in_transaction_session_timeout), so it cannot block
//     everyone forever.
// What it cannot give: session state (SET without LOCAL, SET ROLE, temp tables, LISTEN,
// advisory locks) is shared by every connected client while they are connected; the startup
// packet's user/database are ignored (everyone is `postgres` on the one database); no SSL; no
// cancel requests; true parallelism (one statement runs at a time).
import net from "node:net";
import { Buffer } from "node:buffer";
import type { PGlite } from "@electric-sql/pglite";

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;
const CANCEL_REQUEST = 80877102;
// Frontend message types of protocol 3.0 (Bind, Close, CopyData/Done/Fail, Describe, Execute,
// Flush, FunctionCall, Parse, password, Query, Sync, Terminate).
const FRONTEND_TYPES = new Set([..."BCcdDEHfFPpQSX"].map((c) => c.charCodeAt(0)));

type Waiter = { owner: string; resolve: () => void };

/** FIFO mutual exclusion over the one PGlite backend. */
export class BackendLease {
  #held = false;
  #waiters: Waiter[] = [];
  holder: string | null = null;

  acquire(owner: string): Promise<void> {
    if (!this.#held) {
      this.#held = true;
      this.holder = owner;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#waiters.push({ owner, resolve }));
  }

  release(): void {
    const next = this.#waiters.shift();
    if (next) {
      this.holder = next.owner;
      next.resolve();
    } else {
      this.#held = false;
      this.holder = null;
    }
  }

  get waiting(): number {
    return this.#waiters.length;
  }
}

export interface WireServerOptions {
  db: PGlite;
  host?: string;
  port: number;
  maxConnections?: number;
  idleInTransactionTimeoutMs?: number;
  /** A socket that has not sent its startup packet this long is closed (Postgres' authentication_timeout). */
  startupTimeoutMs?: number;
  log?: (msg: string) => void;
  debug?: boolean;
  /** Tests only (serve-db never sets it): pass COPY FROM STDIN through, which exits the backend. */
  testLetCopyExitBackend?: boolean;
}

function cstring(buf: Buffer, at: number): [string, number] {
  const end = buf.indexOf(0, at);
  if (end < 0) throw new Error("malformed message: unterminated string");
  return [buf.toString("utf8", at, end), end + 1];
}

function message(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.write(type, 0, "latin1");
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

function errorResponse(severity: "ERROR" | "FATAL", code: string, text: string): Buffer {
  const field = (t: string, v: string) => Buffer.concat([Buffer.from(t + v, "utf8"), Buffer.from([0])]);
  return message(
    "E",
    Buffer.concat([field("S", severity), field("V", severity), field("C", code), field("M", text), Buffer.from([0])]),
  );
}

// PGlite reads COPY ... FROM STDIN's data as the end of its input: its backend exits and every
// client hangs until the process is restarted. Such a statement is replaced by one that fails
// with a clear error, raised by the backend itself (so the transaction state is Postgres' own).
const COPY_FROM_STDIN_MESSAGE =
  "COPY FROM STDIN is not supported by the embedded PGlite database (it would stop its only backend): use INSERT";
const COPY_FROM_STDIN_REFUSED = "do $devai$ begin raise exception using errcode = '0A000', message = " +
  `'${COPY_FROM_STDIN_MESSAGE}'; end $devai$`;

/**
 * The PGlite a server job (exclusive) is given: its `exec`, `query` and `sql`, and those of a
 * transaction it opens, refuse COPY ... FROM STDIN with 0A000 before PGlite sees it. Called in-process, PGlite
 * runs such a statement without ever returning and blocks the whole process, HTTP side included
 * (not only the job: a 3 s timer never fired), so the protocol's refusal above cannot be raised by
 * the backend there. `execProtocolRaw` passes bytes as a client's do (tests exit the backend with it).
 */
function refusingCopyFromStdin<T extends object>(db: T): T {
  return new Proxy(db, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      if (prop === "exec" || prop === "query" || prop === "sql") {
        // `sql` is the tagged template: its text is the strings around the parameters.
        return (sql: unknown, ...rest: unknown[]) => {
          const text = typeof sql === "string" ? sql : Array.isArray(sql) ? sql.join("$0") : "";
          return isCopyFromStdin(text)
            ? Promise.reject(Object.assign(new Error(COPY_FROM_STDIN_MESSAGE), { code: "0A000" }))
            : value.call(target, sql, ...rest);
        };
      }
      if (prop === "transaction") {
        return (fn: (tx: object) => unknown) => value.call(target, (tx: object) => fn(refusingCopyFromStdin(tx)));
      }
      return value.bind(target);
    },
  });
}

/** True if a statement of `sql` (strings and comments aside) is COPY ... FROM STDIN. */
export function isCopyFromStdin(sql: string): boolean {
  // Every query and Parse passes here (up to 8 MiB of a write): most name no COPY at all.
  if (!/copy/i.test(sql)) return false;
  const bare = sql.replace(
    /--[^\n]*|\/\*[\s\S]*?\*\/|'(?:[^']|'')*'|"(?:[^"]|"")*"|\$([A-Za-z_]*)\$[\s\S]*?\$\1\$/g,
    " ",
  );
  return bare.split(";").some((stmt) => /^\s*copy\b[\s\S]*\bfrom\s+stdin\b/i.test(stmt));
}

const BACKEND_EXITED = "terminating connection: the embedded database's backend has exited; restart the server";

class Connection {
  readonly id: number;
  readonly prefix: string;
  // Received bytes not yet parsed. Chunks are only joined once they hold the message being read
  // (#need bytes): joining on every chunk copied a message of n chunks n times (quadratic).
  #chunks: Buffer[] = [];
  #size = 0;
  #need = 0;
  #started = false;
  #pending: Buffer[] = [];
  #pumping = false;
  #holdsLease = false;
  #closed = false;
  #cleaned = false;
  #statements = new Set<string>();
  // Outgoing stream tracking: where the last complete backend message ended and what it was.
  #outHeader: number[] = [];
  #outRemaining = 0;
  #outType = 0;
  #lastStatus = 0; // status byte of the last ReadyForQuery ('I', 'T', 'E')
  #lastWasReady = false;
  #idleTimer: ReturnType<typeof setTimeout> | undefined;
  #startupTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(readonly server: WireServer, readonly socket: net.Socket, id: number) {
    this.id = id;
    this.prefix = `c${id}_`;
    socket.setNoDelay(true);
    socket.on("data", (d: Buffer) => this.#onData(d));
    socket.on("error", () => this.close());
    socket.on("close", () => this.close());
    // A socket that never sends its startup packet would hold a connection slot forever.
    const ms = server.startupTimeoutMs;
    if (ms) {
      this.#startupTimer = setTimeout(() => {
        this.server.log(`client #${this.id}: no startup packet within ${ms} ms, closing`);
        if (!this.socket.destroyed) {
          this.socket.end(errorResponse("FATAL", "08P01", "timeout waiting for the startup packet"));
        }
        this.close();
      }, ms);
    }
  }

  #onData(data: Buffer) {
    if (this.#closed) return;
    this.#chunks.push(data);
    this.#size += data.length;
    if (this.#size < this.#need) return;
    if (this.#chunks.length > 1) this.server.inputBytesCopied += this.#size;
    let buf = this.#chunks.length === 1 ? data : Buffer.concat(this.#chunks, this.#size);
    this.#chunks = [];
    this.#size = 0;
    this.#need = 0;
    try {
      for (;;) {
        if (!this.#started) {
          if (buf.length < 8) {
            this.#need = 8;
            break;
          }
          const len = buf.readInt32BE(0);
          if (len < 8 || len > 10_000) throw new Error("malformed startup packet");
          if (buf.length < len) {
            this.#need = len;
            break;
          }
          const code = buf.readInt32BE(4);
          const packet = buf.subarray(0, len);
          buf = buf.subarray(len);
          if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
            this.socket.write("N");
            continue;
          }
          if (code === CANCEL_REQUEST) {
            // No backend process to signal: PGlite cannot cancel a running statement.
            this.socket.end();
            this.close();
            return;
          }
          this.#started = true;
          clearTimeout(this.#startupTimer);
          // Refused after its startup packet, as Postgres refuses one while shutting down.
          if (this.server.backendExit) {
            this.terminate(BACKEND_EXITED);
            return;
          }
          this.#pending.push(Buffer.from(packet));
          continue;
        }
        if (buf.length < 5) {
          this.#need = 5;
          break;
        }
        const len = buf.readInt32BE(1);
        if (len < 4) throw new Error("malformed message length");
        // PGlite's backend loops forever (the whole process at 100% CPU) on a message type it does
        // not know, where Postgres ends that one connection: end it here, as Postgres would.
        if (!FRONTEND_TYPES.has(buf[0]!)) {
          this.socket.write(errorResponse("FATAL", "08P01", `invalid frontend message type ${buf[0]}`));
          throw new Error(`invalid frontend message type ${buf[0]}`);
        }
        if (buf.length < len + 1) {
          this.#need = len + 1;
          break;
        }
        this.#pending.push(Buffer.from(buf.subarray(0, len + 1)));
        buf = buf.subarray(len + 1);
      }
      if (buf.length) {
        this.#chunks = [buf];
        this.#size = buf.length;
      }
    } catch (err) {
      this.server.log(`client #${this.id}: ${(err as Error).message}`);
      this.socket.destroy();
      return;
    }
    void this.#pump();
  }

  async #pump() {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      this.#clearIdleTimer();
      while (this.#pending.length && !this.#closed) {
        const msg = this.#pending.shift()!;
        if (this.#started && msg[0] === 0x58 /* X: Terminate */ && msg.length === 5) {
          this.socket.end();
          this.close();
          break;
        }
        if (!this.#holdsLease) {
          await this.server.lease.acquire(`client #${this.id}`);
          this.#holdsLease = true;
          if (this.#closed) break; // close() runs the cleanup with the lease we now hold
        }
        const out = this.#rewrite(msg);
        // Until the backend answers ReadyForQuery again, this client is mid-pipeline (cleanup reads it).
        this.#lastWasReady = false;
        await this.server.db.runExclusive(() =>
          this.server.db.execProtocolRawStream(new Uint8Array(out.buffer, out.byteOffset, out.byteLength), {
            onRawData: (data) => {
              this.#track(data);
              if (!this.socket.destroyed && this.socket.writable) this.socket.write(Buffer.from(data));
            },
          })
        );
        if (this.#lastWasReady && this.#lastStatus === 0x49 /* I */) {
          this.#holdsLease = false;
          this.server.lease.release();
        }
      }
      // Holding the backend and waiting on this client: inside a transaction, or mid-pipeline
      // (Parse/Bind/Execute sent, no Sync yet). Either way everyone else waits, so bound it.
      if (this.#holdsLease && !this.#closed) {
        this.#armIdleTimer();
      }
    } catch (err) {
      this.server.log(`client #${this.id}: backend error: ${(err as Error).message}`);
      if ((err as Error)?.name === "ExitStatus") this.server.backendExited(err as Error);
      else if (!this.socket.destroyed) {
        this.socket.write(errorResponse("FATAL", "XX000", `PGlite: ${(err as Error).message}`));
        this.socket.end();
      }
      this.close();
    } finally {
      this.#pumping = false;
    }
    if (this.#closed) await this.#cleanup();
  }

  #armIdleTimer() {
    const ms = this.server.idleInTransactionTimeoutMs;
    if (!ms) return;
    this.#idleTimer = setTimeout(() => {
      this.server.log(
        `client #${this.id}: idle in transaction for ${ms} ms, terminating (its transaction is rolled back)`,
      );
      if (!this.socket.destroyed) {
        this.socket.write(errorResponse("FATAL", "25P03", "terminating connection due to idle-in-transaction timeout"));
        this.socket.end();
      }
      this.close();
    }, ms);
  }

  #clearIdleTimer() {
    if (this.#idleTimer) clearTimeout(this.#idleTimer);
    this.#idleTimer = undefined;
  }

  /** Renames named statements/portals per client: Parse, Bind, Describe, Close, Execute. */
  #rewrite(msg: Buffer): Buffer {
    if (!this.#started) return msg;
    const type = String.fromCharCode(msg[0]!);
    const rename = (name: string) => (name === "" ? "" : this.prefix + name);
    const z = Buffer.from([0]);
    const str = (s: string) => Buffer.concat([Buffer.from(s, "utf8"), z]);
    switch (type) {
      case "Q": {
        const [query] = cstring(msg, 5);
        return isCopyFromStdin(query) && !this.server.testLetCopyExitBackend
          ? message("Q", str(COPY_FROM_STDIN_REFUSED))
          : msg;
      }
      case "P": { // Parse: statement name, query, param types
        const [name, at] = cstring(msg, 5);
        const [query, at2] = cstring(msg, at);
        if (isCopyFromStdin(query) && !this.server.testLetCopyExitBackend) {
          msg = message("P", Buffer.concat([str(name), str(COPY_FROM_STDIN_REFUSED), msg.subarray(at2)]));
        }
        if (name === "") return msg;
        this.#statements.add(rename(name));
        return message("P", Buffer.concat([str(rename(name)), msg.subarray(at)]));
      }
      case "B": { // Bind: portal, statement, ...
        const [portal, at1] = cstring(msg, 5);
        const [stmt, at2] = cstring(msg, at1);
        if (portal === "" && stmt === "") return msg;
        return message("B", Buffer.concat([str(rename(portal)), str(rename(stmt)), msg.subarray(at2)]));
      }
      case "D":
      case "C": { // Describe / Close: 'S' | 'P', name
        const kind = msg[5]!;
        const [name] = cstring(msg, 6);
        if (name === "") return msg;
        if (type === "C" && kind === 0x53) this.#statements.delete(rename(name));
        return message(type, Buffer.concat([Buffer.from([kind]), str(rename(name))]));
      }
      case "E": { // Execute: portal, max rows
        const [portal, at] = cstring(msg, 5);
        if (portal === "") return msg;
        return message("E", Buffer.concat([str(rename(portal)), msg.subarray(at)]));
      }
      default:
        return msg;
    }
  }

  /** Follows backend message boundaries in the output to know when the client is idle. */
  #track(data: Uint8Array) {
    let i = 0;
    while (i < data.length) {
      if (this.#outRemaining > 0) {
        const n = Math.min(this.#outRemaining, data.length - i);
        // ReadyForQuery's body is one byte: the transaction status.
        if (this.#outType === 0x5a && n === this.#outRemaining) this.#lastStatus = data[i + n - 1]!;
        this.#outRemaining -= n;
        i += n;
        if (this.#outRemaining === 0) this.#lastWasReady = this.#outType === 0x5a;
        continue;
      }
      this.#outHeader.push(data[i++]!);
      if (this.#outHeader.length === 5) {
        const [t, a, b, c, d] = this.#outHeader as [number, number, number, number, number];
        this.#outType = t;
        this.#outRemaining = ((a << 24) | (b << 16) | (c << 8) | d) - 4;
        this.#outHeader = [];
        this.#lastWasReady = false;
        if (this.#outRemaining === 0) this.#lastWasReady = t === 0x5a;
      }
    }
  }

  /** Ends this client with FATAL 57P01 (the backend is gone). */
  terminate(text: string) {
    if (!this.socket.destroyed) this.socket.end(errorResponse("FATAL", "57P01", text));
    this.close();
  }

  close() {
    if (this.#closed) return;
    this.#closed = true;
    this.#clearIdleTimer();
    clearTimeout(this.#startupTimer);
    this.#pending = [];
    this.server.connections.delete(this);
    if (!this.socket.destroyed) this.socket.destroy();
    if (this.#pumping) return; // #pump runs the cleanup when it unwinds
    void this.#cleanup();
  }

  async #cleanup() {
    if (this.#cleaned) return;
    this.#cleaned = true;
    // An exited backend answers nothing (every call would hang): there is nothing to roll back.
    if (this.server.backendExit) {
      if (this.#holdsLease) {
        this.#holdsLease = false;
        this.server.lease.release();
      }
      return;
    }
    try {
      if (!this.#holdsLease) {
        if (this.#statements.size === 0 && this.server.connections.size > 0) return;
        await this.server.lease.acquire(`cleanup #${this.id}`);
        this.#holdsLease = true;
      }
      const db = this.server.db;
      if (this.#started && !this.#lastWasReady) {
        // Gone mid-pipeline (no Sync): the backend still holds its implicit transaction (a Sync or
        // the next client's query would commit it) or discards everything until Sync after an
        // error. Postgres aborts both on disconnect: a simple-query ROLLBACK aborts the implicit
        // transaction (ignored in the error state), then Sync ends the pipeline.
        const raw = (m: Buffer) =>
          db.runExclusive(() => db.execProtocolRaw(new Uint8Array(m.buffer, m.byteOffset, m.byteLength)));
        await raw(message("Q", Buffer.from("rollback\0", "utf8")));
        await raw(message("S", Buffer.alloc(0)));
      }
      if (db.isInTransaction()) await db.exec("rollback");
      for (const name of this.#statements) {
        await db.exec(`deallocate "${name.replaceAll('"', '""')}"`).catch(() => {});
      }
      this.#statements.clear();
      if (this.server.connections.size === 0) await db.exec("discard all");
    } catch (err) {
      this.server.log(`client #${this.id}: cleanup failed: ${(err as Error).message}`);
    } finally {
      if (this.#holdsLease) {
        this.#holdsLease = false;
        this.server.lease.release();
      }
    }
  }
}

export class WireServer {
  readonly db: PGlite;
  readonly lease = new BackendLease();
  readonly connections = new Set<Connection>();
  readonly host: string;
  readonly port: number;
  readonly maxConnections: number;
  readonly idleInTransactionTimeoutMs: number;
  readonly startupTimeoutMs: number;
  /** Bytes copied while joining received chunks into messages (tests count it: about one copy of each message). */
  inputBytesCopied = 0;
  readonly log: (msg: string) => void;
  readonly testLetCopyExitBackend: boolean;
  /** Why the backend exited (PGlite's ExitStatus), or null while it runs: then every client is refused. */
  backendExit: string | null = null;
  #server: net.Server | null = null;
  #nextId = 1;

  constructor(opts: WireServerOptions) {
    this.db = opts.db;
    this.host = opts.host ?? "127.0.0.1";
    this.port = opts.port;
    this.maxConnections = opts.maxConnections ?? 100;
    this.idleInTransactionTimeoutMs = opts.idleInTransactionTimeoutMs ?? 60_000;
    this.startupTimeoutMs = opts.startupTimeoutMs ?? 60_000;
    this.log = opts.log ?? ((m) => console.error(`[pglite] ${m}`));
    this.testLetCopyExitBackend = opts.testLetCopyExitBackend ?? false;
  }

  /**
   * PGlite's only backend has exited: it answers nothing more until the process restarts. Every
   * client, connected or new, is told so as Postgres tells them of a shutdown (FATAL 57P01), which
   * the service answers with 503 database_unavailable, instead of waiting forever.
   */
  backendExited(err: Error): void {
    if (this.backendExit) return;
    this.backendExit = err.message;
    this.log(`the backend has exited (${err.message}): refusing every client until the server restarts`);
    for (const c of [...this.connections]) c.terminate(BACKEND_EXITED);
  }

  /**
   * Runs fn with exclusive use of the backend (between clients' transactions). Refused once the
   * backend has exited: PGlite's calls on an exited backend never return, and block the whole
   * process (not only the caller), so fn is not run. If fn itself exits the backend, it is marked
   * dead (clients are ended with 57P01) and fn's error is rethrown. fn's COPY ... FROM STDIN through
   * `exec` or `query` is refused (0A000) without reaching PGlite (refusingCopyFromStdin).
   */
  async exclusive<T>(owner: string, fn: (db: PGlite) => Promise<T>): Promise<T> {
    await this.lease.acquire(owner);
    try {
      if (this.backendExit) {
        throw Object.assign(new Error(`${owner}: ${BACKEND_EXITED.replace("terminating connection: ", "")}`), {
          code: "57P01",
        });
      }
      return await fn(refusingCopyFromStdin(this.db));
    } catch (err) {
      // The job's own call exited the backend: mark it dead as a client's call does, so connected
      // clients are told now and the next one is refused, not run into the exited backend.
      if ((err as Error)?.name === "ExitStatus") this.backendExited(err as Error);
      throw err;
    } finally {
      this.lease.release();
    }
  }

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      const server = net.createServer((socket) => {
        if (this.connections.size >= this.maxConnections) {
          socket.end(errorResponse("FATAL", "53300", "sorry, too many clients already"));
          return;
        }
        this.connections.add(new Connection(this, socket, this.#nextId++));
      });
      server.once("error", reject);
      server.listen(this.port, this.host, () => {
        server.off("error", reject);
        server.on("error", (err) => this.log(`server error: ${err.message}`));
        this.#server = server;
        resolve();
      });
    });
  }

  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = null;
    for (const c of [...this.connections]) c.close();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
    // Let every cleanup (rollback of an open transaction) finish before the caller closes PGlite
    // (after a backend exit they skip the backend, and stop waits for the lease only).
    await this.lease.acquire("stop");
    this.lease.release();
  }

  /** The port it listens on (the one asked for, or the one given for port 0). */
  get listeningPort(): number {
    return (this.#server?.address() as net.AddressInfo | null)?.port ?? this.port;
  }

  stats() {
    return { connections: this.connections.size, waiting: this.lease.waiting, holder: this.lease.holder };
  }
}
