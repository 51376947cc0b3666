// A TCP proxy in front of the test database that a test can take down and bring back: down()
// closes every connection through it and refuses new ones (connection refused, as when Postgres is
// stopped), up() accepts again on the same port. The database outage, in-process and at once,
// without stopping a server other tests use.
export interface PgProxy {
  /** postgresql:// URL of the database through the proxy. */
  url: string;
  down(): void;
  up(): void;
  close(): void;
  /** Bytes Postgres has sent to clients through the proxy so far (what a query costs on the wire). */
  bytesFromServer(): number;
  /** Connections clients have opened through the proxy so far (a pool's attempts to reach Postgres). */
  connections(): number;
}

export interface PgProxyOptions {
  /** Called once a client connects: what it returns sees each chunk that client sends, in order. */
  watch?: () => (fromClient: Uint8Array) => void;
  /**
   * Called with each chunk a client sends, before it is passed on: true takes the database away
   * there (down(): the chunk is never delivered), as an outage at that very statement.
   */
  downAt?: (fromClient: Uint8Array) => boolean;
}

export function startPgProxy(databaseUrl: string, opts: PgProxyOptions = {}): PgProxy {
  const target = new URL(databaseUrl);
  const targetPort = Number(target.port || 5432);
  let listener: Deno.Listener | undefined;
  let port = 0;
  let fromServer = 0;
  let accepted = 0;
  const counted = () =>
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, out) {
        fromServer += chunk.byteLength;
        out.enqueue(chunk);
      },
    });
  const open = new Set<Deno.Conn>();
  const track = (c: Deno.Conn) => (open.add(c), c);
  const closeAll = () => {
    for (const c of open) {
      try {
        c.close();
      } catch { /* closed already */ }
    }
    open.clear();
  };
  const up = () => {
    listener = Deno.listen({ hostname: "127.0.0.1", port });
    port = (listener.addr as Deno.NetAddr).port;
    const accepting = listener;
    (async () => {
      for await (const client of accepting) {
        accepted++;
        track(client);
        Deno.connect({ hostname: target.hostname, port: targetPort }).then((server) => {
          track(server);
          const seen = opts.watch?.();
          const watched = new TransformStream<Uint8Array, Uint8Array>({
            transform(chunk, out) {
              seen?.(chunk);
              if (opts.downAt?.(chunk)) down();
              else out.enqueue(chunk);
            },
          });
          client.readable.pipeThrough(watched).pipeTo(server.writable).catch(() => {});
          server.readable.pipeThrough(counted()).pipeTo(client.writable).catch(() => {});
        }, () => client.close());
      }
    })().catch(() => {});
  };
  const down = () => {
    listener?.close();
    listener = undefined;
    closeAll();
  };
  up();
  const url = new URL(databaseUrl);
  url.hostname = "127.0.0.1";
  url.port = String(port);
  return {
    url: url.toString(),
    down,
    up,
    close: () => {
      listener?.close();
      closeAll();
    },
    bytesFromServer: () => fromServer,
    connections: () => accepted,
  };
}
