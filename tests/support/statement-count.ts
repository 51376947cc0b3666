// Counts the statements a pool sends whose text holds a phrase, read on the wire in front of the
// test database (pg-proxy.ts): each client connection's messages are parsed; a run of a statement
// is its Bind (the extended protocol: a prepared statement is parsed once per connection and bound
// at every run; an unprepared one is parsed and bound each time) or a simple Query. What the pool
// sent, on PGlite and Postgres alike, without asking the database.
import { type PgProxy, startPgProxy } from "./pg-proxy.ts";

export interface StatementCounter {
  /** postgresql:// URL through the counter. */
  url: string;
  /** Runs sent so far of statements whose text holds the phrase. */
  count(): number;
  close(): void;
}

export function countStatements(databaseUrl: string, phrase: string): StatementCounter {
  let count = 0;
  const proxy: PgProxy = startPgProxy(databaseUrl, {
    watch: () => {
      const texts = new Map<string, string>(); // prepared statement name -> its text
      return frontendMessages((type, body) => {
        const [first, second] = cStrings(body, 2);
        if (type === "P") texts.set(first!, second!);
        else if (type === "B" && texts.get(second!)?.includes(phrase)) count++;
        else if (type === "Q" && first!.includes(phrase)) count++;
      });
    },
  });
  return { url: proxy.url, count: () => count, close: () => proxy.close() };
}

/** A connection's chunks as messages (type, body); the untyped start-up (and SSL request) skipped. */
function frontendMessages(onMessage: (type: string, body: Uint8Array) => void): (chunk: Uint8Array) => void {
  let pending = new Uint8Array(0);
  let started = false;
  return (chunk) => {
    const joined = new Uint8Array(pending.length + chunk.length);
    joined.set(pending);
    joined.set(chunk, pending.length);
    const view = new DataView(joined.buffer);
    let at = 0;
    for (;;) {
      if (!started) {
        if (joined.length - at < 8) break;
        const length = view.getInt32(at);
        if (joined.length - at < length) break;
        const code = view.getInt32(at + 4);
        started = code !== 80877103 && code !== 80877104; // SSLRequest, GSSENCRequest: the start-up follows
        at += length;
        continue;
      }
      if (joined.length - at < 5) break;
      const length = view.getInt32(at + 1);
      if (joined.length - at < 1 + length) break;
      onMessage(String.fromCharCode(joined[at]!), joined.subarray(at + 5, at + 1 + length));
      at += 1 + length;
    }
    pending = joined.slice(at);
  };
}

/** The first n NUL-terminated strings of a message's body. */
function cStrings(body: Uint8Array, n: number): string[] {
  const out: string[] = [];
  for (let at = 0; out.length < n && at < body.length;) {
    const end = body.indexOf(0, at);
    if (end < 0) break;
    out.push(new TextDecoder().decode(body.subarray(at, end)));
    at = end + 1;
  }
  return out;
}
