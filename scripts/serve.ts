// The local functions server (`npm start`): what `supabase functions serve` + the API gateway do,
// without Docker. Serves every supabase/functions/<name>/index.ts (its createHandler) at
// http://127.0.0.1:54321/functions/v1/<name>[/...], handing the function a Request whose path is
// /<name>[/...] as the gateway does, and verifying the JWT first for functions with verify_jwt
// (supabase/config.toml [functions.<name>], default true). One postgres.js pool, embedder and LLM
// client are shared by all functions. Also runs the queue worker every 2 s and, on a database
// without pg_cron, the maintenance jobs of public.memory_maintenance_schedules.
//
//   deno run -A --config supabase/functions/deno.json scripts/serve.ts
//
// Environment: DATABASE_URL (default the local cluster on 54322), FUNCTIONS_PORT (54321),
// SUPABASE_JWT_SECRET / JWT_SECRET (default: the local development secret), plus everything
// supabase/functions/_shared/env.ts reads (embedding and LLM providers, limits).
import { fileURLToPath } from "node:url";
import { verifyBearer } from "../supabase/functions/_shared/auth.ts";
import { poolsFor, type Sql } from "../supabase/functions/_shared/db.ts";
import { flushSearchWrites, heldSearchWrites } from "../supabase/functions/_shared/retrieval/write-behind.ts";
import { createEmbedder } from "../supabase/functions/_shared/embeddings.ts";
import { type Config, ConfigError, loadConfig } from "../supabase/functions/_shared/env.ts";
import { corsHeaders } from "../supabase/functions/_shared/cors.ts";
import { errorResponse, HttpError } from "../supabase/functions/_shared/http.ts";
import { createLlm } from "../supabase/functions/_shared/llm.ts";
import type { RunningDb } from "./pglite/serve-db.ts";
import { dbStopCommand, startEmbeddedDatabase } from "./serve/embedded-db.ts";
import type { WorkerDeps } from "../supabase/functions/_shared/drain-queue.ts";
import { startQueueWorker } from "./serve/background.ts";
import { discoverFunctions, type FunctionEntry, loadFunction, readVerifyJwt } from "./serve/functions.ts";
import { type Log, startMaintenanceScheduler } from "./serve/maintenance-scheduler.ts";
import { probeProviders, type ProbeReport } from "./serve/probe.ts";
import { requestBodiesFrom, serverBusy } from "./serve/request-bodies.ts";
import { closeInSteps } from "./serve/shutdown.ts";
import { ConnectionGuard, type ConnectionLimits, connectionLimitsFrom } from "./serve/connection-guard.ts";
import {
  LOCAL_DEMO_USER_ID,
  LOCAL_DEV_JWT_SECRET,
  LOCAL_DEV_SECRET_KEY,
  type LocalTokens,
  localTokens,
} from "./serve/local_tokens.ts";

export { LOCAL_DEMO_USER_ID, LOCAL_DEV_JWT_SECRET, LOCAL_DEV_SECRET_KEY };

const REPO = fileURLToPath(new URL("..", import.meta.url)).replace(/\/$/, "");
export const DEFAULT_FUNCTIONS_PORT = 54321;
export const DEFAULT_LOCAL_DATABASE_URL = "postgresql://postgres@127.0.0.1:54322/postgres";
const FUNCTIONS_PREFIX = "/functions/v1";

export interface ServerOptions {
  /** Default FUNCTIONS_PORT or 54321; 0 picks a free port. */
  port?: number;
  /** Default 127.0.0.1 (never exposed beyond the machine by default). */
  hostname?: string;
  /** Default SUPABASE_DB_URL / DATABASE_URL from the environment, else the local cluster on 54322. */
  databaseUrl?: string;
  /** HS256 secret; default SUPABASE_JWT_SECRET / JWT_SECRET, else LOCAL_DEV_JWT_SECRET (unless JWKS_URL is set). */
  jwtSecret?: string;
  /** Environment for loadConfig; default Deno.env. databaseUrl/jwtSecret override it. */
  env?: Record<string, string | undefined>;
  functionsDir?: string;
  configTomlPath?: string;
  /** Queue worker timer; default true every 2000 ms. */
  worker?: boolean | { intervalMs?: number; maxJobs?: number };
  /** Maintenance jobs when the database has no pg_cron; default true. */
  scheduler?: boolean;
  /** Check the embedding and LLM providers before listening (scripts/serve/probe.ts); default true. */
  probe?: boolean;
  /** One line per request; default true. */
  logRequests?: boolean;
  /** Where log lines go; default console.log. */
  log?: Log;
  /** Default BODY_IDLE_TIMEOUT_MS, else 10 s: a request body from which nothing arrives that long is a 408 (serve/request-bodies.ts). */
  bodyIdleTimeoutMs?: number;
  /** Default MAX_OPEN_BODIES, else 512: requests with a body in the server at once; the next is a 503. */
  maxOpenBodies?: number;
  /** The longest each step of close() waits (scripts/serve/shutdown.ts); default CLOSE_STEP_MS (30 s). */
  closeStepMs?: number;
  /** Default HEADER_TIMEOUT_MS, KEEPALIVE_IDLE_TIMEOUT_MS and MAX_CONNECTIONS (serve/connection-guard.ts). */
  connections?: Partial<ConnectionLimits>;
}

export interface RunningServer {
  /** The project URL clients use as SUPABASE_URL, e.g. http://127.0.0.1:54321. */
  url: string;
  /** `${url}/functions/v1` */
  functionsUrl: string;
  port: number;
  functions: FunctionEntry[];
  config: Config;
  /** Tokens signed with the HS256 secret (undefined when verifying with JWKS). */
  tokens?: LocalTokens;
  /** True when the secret is the well-known local development one. */
  usingLocalDevSecret: boolean;
  /** What the start-up probe found (undefined when it was skipped). */
  probe?: ProbeReport;
  sql: Sql;
  /** Requests with a body in the server now (serve/request-bodies.ts; tests wait on it). */
  openBodies(): number;
  /** Client connections held now (serve/connection-guard.ts; tests wait on it). */
  openConnections(): number;
  close(): Promise<void>;
}

function configFromEnvironment(opts: ServerOptions): { config: Config; usingLocalDevSecret: boolean } {
  const env: Record<string, string | undefined> = { ...(opts.env ?? Deno.env.toObject()) };
  if (opts.databaseUrl) {
    env.DATABASE_URL = opts.databaseUrl;
    delete env.SUPABASE_DB_URL;
  } else if (!env.SUPABASE_DB_URL && !env.DATABASE_URL) {
    env.DATABASE_URL = DEFAULT_LOCAL_DATABASE_URL;
  }
  let usingLocalDevSecret = false;
  if (opts.jwtSecret) {
    env.SUPABASE_JWT_SECRET = opts.jwtSecret;
  } else if (!env.SUPABASE_JWT_SECRET && !env.JWT_SECRET && !env.JWKS_URL && !env.SUPABASE_JWKS) {
    // Local development: the gateway's secret is `supabase start`'s well-known one.
    env.SUPABASE_JWT_SECRET = LOCAL_DEV_JWT_SECRET;
    usingLocalDevSecret = true;
  }
  // SUPABASE_URL in the environment is what clients call: this very server, which serves no JWKS
  // (and is the public URL MCP clients are told anyway, from the request). A JWKS is named explicitly.
  delete env.SUPABASE_URL;
  // Local development: the project's secret API key is the well-known local one unless set.
  if (!env.SUPABASE_SECRET_KEYS) env.SUPABASE_SECRET_KEYS = JSON.stringify({ default: LOCAL_DEV_SECRET_KEY });
  const config = loadConfig(env);
  usingLocalDevSecret ||= config.jwt.secret === LOCAL_DEV_JWT_SECRET;
  return { config, usingLocalDevSecret };
}

// Supabase's Edge Runtime gives functions EdgeRuntime.waitUntil(promise) for work that outlives the
// response (the worker kick after a 202). Locally the same global tracks that work, so close()
// lets it finish before the pool ends. Never replaces a real EdgeRuntime.
// Each promise is kept with the caller that handed it over, which close() names if it never settles.
const backgroundWork = new Map<Promise<unknown>, string>();
function installEdgeRuntimeShim(): void {
  const g = globalThis as { EdgeRuntime?: { waitUntil(p: Promise<unknown>): void } };
  if (g.EdgeRuntime) return;
  g.EdgeRuntime = {
    waitUntil(p) {
      backgroundWork.set(p, new Error().stack?.split("\n")[2]?.trim().replace(/^at /, "") ?? "unknown caller");
      const done = () => backgroundWork.delete(p);
      p.then(done, done);
    },
  };
}

async function settleBackgroundWork(): Promise<void> {
  // Work may start more work (a drain enqueues a dedup job and kicks again): wait until quiet.
  for (let round = 0; round < 10 && backgroundWork.size > 0; round++) {
    await Promise.allSettled([...backgroundWork.keys()]);
  }
}

function backgroundWorkPending(): string {
  const callers = [...backgroundWork.values()];
  return `${callers.length} promise(s) handed to EdgeRuntime.waitUntil unsettled${
    callers.length ? `, from ${[...new Set(callers)].join(", ")}` : ""
  }`;
}

/** The gateway's own errors (no function answered): the one error shape, with CORS as the gateway sends it. */
function errorJson(err: HttpError, requestId: string): Response {
  const res = errorResponse(err, requestId);
  for (const [k, v] of Object.entries(corsHeaders)) res.headers.set(k, v);
  return res;
}

/** Starts the server; resolves once it listens. */
export async function startServer(opts: ServerOptions = {}): Promise<RunningServer> {
  const log: Log = opts.log ?? ((line) => console.log(line));
  const { config, usingLocalDevSecret } = configFromEnvironment(opts);
  const functionsDir = opts.functionsDir ?? `${REPO}/supabase/functions`;
  const configTomlPath = opts.configTomlPath ?? `${REPO}/supabase/config.toml`;
  const portText = Deno.env.get("FUNCTIONS_PORT");
  const port = opts.port ?? (portText ? Number(portText) : DEFAULT_FUNCTIONS_PORT);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError(`invalid FUNCTIONS_PORT: ${portText}`);

  installEdgeRuntimeShim();
  const { sql, readSql } = poolsFor(config, "devai-local-functions");
  const stoppables: { stop(): Promise<void> }[] = [];
  let server: Deno.HttpServer<Deno.Addr> | undefined;
  let guard: ConnectionGuard | undefined;
  let socketDir: string | undefined;
  try {
    await sql`select 1`; // fail fast (and clearly) when the database is not there
  } catch (err) {
    await sql.end({ timeout: 1 }).catch(() => {});
    await readSql?.end({ timeout: 1 }).catch(() => {});
    throw new ConfigError(
      `cannot connect to the database at ${redactUrl(config.databaseUrl)}: ${(err as Error).message}`,
    );
  }
  try {
    if (readSql) await readSql`select 1`;
  } catch (err) {
    await sql.end({ timeout: 1 }).catch(() => {});
    await readSql?.end({ timeout: 1 }).catch(() => {});
    throw new ConfigError(
      `cannot connect to the read replica at ${redactUrl(config.databaseReadUrl!)}: ${(err as Error).message}`,
    );
  }

  try {
    // Refuse to start on a provider misconfiguration rather than answer 503s later.
    const probe = opts.probe === false ? undefined : await probeProviders(config);
    const deps: WorkerDeps & { readSql?: Sql } = {
      sql,
      readSql,
      config,
      embedder: createEmbedder(config),
      llm: createLlm(config),
    };
    const verifyJwtFor = await readVerifyJwt(configTomlPath);
    const found = await discoverFunctions(functionsDir);
    const functions: FunctionEntry[] = [];
    for (const f of found) {
      const entry = await loadFunction(f, verifyJwtFor(f.name), deps);
      if (entry.loadError) log(`[serve] ${entry.name}: cannot load index.ts: ${entry.loadError} (answers 503)`);
      functions.push(entry);
    }
    const byName = new Map(functions.map((f) => [f.name, f]));

    const route = async (
      req: Request,
      requestId: string,
      body: ReadableStream<Uint8Array> | null,
    ): Promise<Response> => {
      // Deno.serve on a Unix socket names the scheme http+unix; the client called http (the guard's port).
      const url = new URL(req.url.replace(/^http\+unix:/, "http:"));
      if (url.pathname !== FUNCTIONS_PREFIX && !url.pathname.startsWith(`${FUNCTIONS_PREFIX}/`)) {
        throw new HttpError(404, "not_found", `this server serves edge functions at ${FUNCTIONS_PREFIX}/<name>`);
      }
      const path = url.pathname.slice(FUNCTIONS_PREFIX.length) || "/"; // "/<name>[/...]"
      const name = path.split("/")[1] ?? "";
      const fn = byName.get(name);
      if (!fn) {
        // Named with the functions there are; `functions` is a client that was given the functions URL
        // the banner prints as its SUPABASE_URL, and so sends /functions/v1 twice.
        const served = `the functions: ${[...byName.keys()].join(", ")}`;
        throw new HttpError(
          404,
          "function_not_found",
          name === "functions"
            ? `no function named 'functions': the path holds ${FUNCTIONS_PREFIX} twice (SUPABASE_URL is ${url.origin}, without ${FUNCTIONS_PREFIX}); ${served}`
            : name
            ? `no function named '${name}'; ${served}`
            : `name a function: ${FUNCTIONS_PREFIX}/<name>; ${served}`,
        );
      }
      if (!fn.handler) {
        throw new HttpError(503, "function_unavailable", `function '${name}' failed to load: ${fn.loadError}`);
      }
      // The gateway: verify_jwt functions need a valid token (any role) before they run.
      // Preflight requests carry no token; the function answers them (CORS).
      if (fn.verifyJwt && req.method !== "OPTIONS") await verifyBearer(req, config);
      const headers = new Headers(req.headers);
      headers.set("x-request-id", requestId);
      const forwarded = new Request(new URL(path + url.search, url.origin), { method: req.method, headers, body });
      return await fn.handler(forwarded);
    };

    const inFlight = new Set<Promise<unknown>>();
    const bodies = requestBodiesFrom(opts.env ?? Deno.env.toObject(), opts);
    const handle = async (req: Request): Promise<Response> => {
      const started = performance.now();
      const requestId = req.headers.get("x-request-id") ?? crypto.randomUUID();
      const admitted = req.body ? bodies.admit(req.body) : undefined;
      let res: Response;
      try {
        if (req.body && !admitted) throw serverBusy(bodies.max);
        res = await route(req, requestId, admitted?.body ?? null);
      } catch (err) {
        if (err instanceof HttpError) {
          res = errorJson(err, requestId);
        } else {
          console.error(
            JSON.stringify({ level: "error", request_id: requestId, error: String(err), stack: (err as Error)?.stack }),
          );
          res = errorJson(
            new HttpError(500, "internal_error", "unexpected error; quote the request id when reporting it"),
            requestId,
          );
        }
      }
      admitted?.release();
      if (opts.logRequests !== false) {
        log(`${req.method} ${new URL(req.url).pathname} ${res.status} ${Math.round(performance.now() - started)}ms`);
      }
      return res;
    };

    // The port is the connection guard's (serve/connection-guard.ts): Deno.serve listens where only
    // this process connects, a Unix socket in a directory of its own (loopback TCP on Windows).
    const limits = connectionLimitsFrom(opts.env ?? Deno.env.toObject(), opts.connections ?? {});
    const listening = Promise.withResolvers<Deno.Addr>();
    guard = new ConnectionGuard(Deno.listen({ hostname: opts.hostname ?? "127.0.0.1", port }), async () => {
      const inner = await listening.promise;
      return inner.transport === "unix"
        ? await Deno.connect({ transport: "unix", path: inner.path })
        : await Deno.connect({ hostname: "127.0.0.1", port: (inner as Deno.NetAddr).port });
    }, limits);
    const inner = Deno.build.os === "windows"
      ? { hostname: "127.0.0.1", port: 0 }
      : { path: `${socketDir = await Deno.makeTempDir({ prefix: "devai-serve-" })}/http.sock` };
    server = Deno.serve({
      ...inner,
      onListen: (addr) => listening.resolve(addr),
      onError: (err) => {
        console.error(err);
        return errorJson(new HttpError(500, "internal_error", "unexpected error"), crypto.randomUUID());
      },
    }, (req) => {
      const p = handle(req);
      inFlight.add(p);
      return p.finally(() => inFlight.delete(p));
    });
    await listening.promise;
    const addr = guard.addr;

    if (opts.worker !== false) {
      const w = typeof opts.worker === "object" ? opts.worker : {};
      stoppables.push(startQueueWorker({
        deps,
        intervalMs: w.intervalMs ?? 2000,
        maxJobs: w.maxJobs,
        workerId: `local-server:${Deno.pid}:${addr.port}`,
        log,
      }));
    }
    if (opts.scheduler !== false) {
      try {
        const scheduler = await startMaintenanceScheduler(sql, log);
        if (scheduler) stoppables.push(scheduler);
      } catch (err) {
        log(`[cron] cannot start the maintenance scheduler: ${(err as Error).message}`);
      }
    }

    const host = addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname;
    const url = `http://${host}:${addr.port}`;
    let closing: Promise<void> | undefined;
    const running = server;
    const held = guard;
    return {
      url,
      functionsUrl: `${url}${FUNCTIONS_PREFIX}`,
      port: addr.port,
      functions,
      config,
      tokens: config.jwt.secret ? await localTokens(config.jwt.secret) : undefined,
      usingLocalDevSecret,
      probe,
      sql,
      openBodies: () => bodies.open,
      openConnections: () => held.open,
      close() {
        closing ??= closeInSteps([
          {
            name: "stop the queue worker and scheduler",
            run: () => Promise.allSettled(stoppables.map((s) => s.stop())),
          },
          { name: "stop accepting connections", run: () => held.close(false) },
          // Lets in-flight requests finish.
          { name: "stop listening", run: () => running.shutdown() },
          {
            name: "close the connections",
            run: async () => {
              await held.close(true);
              if (socketDir) await Deno.remove(socketDir, { recursive: true }).catch(() => {});
            },
          },
          {
            name: "requests in flight",
            run: () => Promise.allSettled([...inFlight]),
            pending: () => `${inFlight.size} unanswered`,
          },
          {
            // The searches' writes still waiting (the background work waits for them).
            name: "write the searches' waiting writes",
            run: () => flushSearchWrites(sql),
            pending: () => `${heldSearchWrites(sql)} search write(s) held`,
          },
          { name: "background work", run: settleBackgroundWork, pending: backgroundWorkPending },
          { name: "end the pool", run: () => sql.end({ timeout: 5 }) },
          { name: "end the read pool", run: async () => await readSql?.end({ timeout: 5 }) },
        ], opts.closeStepMs);
        return closing;
      },
    };
  } catch (err) {
    await Promise.allSettled(stoppables.map((s) => s.stop()));
    await guard?.close(true);
    await server?.shutdown();
    if (socketDir) await Deno.remove(socketDir, { recursive: true }).catch(() => {});
    await sql.end({ timeout: 1 }).catch(() => {});
    await readSql?.end({ timeout: 1 }).catch(() => {});
    throw err;
  }
}

function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "(unparseable url)";
  }
}

/** The start-up banner: URL, functions, tokens and a curl to try. */
export function banner(s: RunningServer, embedded?: RunningDb): string {
  const lines: string[] = [];
  const e = s.config.embedding;
  lines.push("");
  lines.push("devai-memory local functions server");
  lines.push(`  Functions URL   ${s.functionsUrl}`);
  lines.push(`  SUPABASE_URL    ${s.url}   (what clients pass to createClient / createMemoryClient)`);
  lines.push(
    `  Database        ${redactUrl(s.config.databaseUrl)}${
      embedded ? `   (embedded PGlite, data in ${embedded.dataDir})` : ""
    }`,
  );
  lines.push(`  Embeddings      ${s.probe?.embeddings ?? `${e.provider} (${e.model}), not probed`}`);
  lines.push(
    `  LLM             ${
      s.probe?.llm ?? `${s.config.llm.apiKey || s.config.llm.baseUrl ? s.config.llm.model : "none"}, not probed`
    }`,
  );
  if (s.config.jwt.secret) {
    lines.push(
      `  JWT secret      ${
        s.usingLocalDevSecret
          ? `${LOCAL_DEV_JWT_SECRET}  (LOCAL DEVELOPMENT ONLY; set SUPABASE_JWT_SECRET to change)`
          : "from SUPABASE_JWT_SECRET / JWT_SECRET"
      }`,
    );
  }
  if (s.config.jwt.jwks || s.config.jwt.jwksUrl) {
    lines.push(
      `  JWKS            ${s.config.jwt.jwks ? "from SUPABASE_JWKS" : s.config.jwt.jwksUrl}   (asymmetric tokens)`,
    );
  }
  lines.push("");
  lines.push("Functions:");
  const width = Math.max(8, ...s.functions.map((f) => f.name.length));
  for (const f of s.functions) {
    const state = f.handler ? "" : `   NOT LOADED: ${f.loadError}`;
    lines.push(
      `  ${f.name.padEnd(width)}  ${
        `${s.functionsUrl}/${f.name}`.padEnd(s.functionsUrl.length + 1 + width)
      }  verify_jwt=${f.verifyJwt}${state}`,
    );
  }
  if (s.functions.length === 0) {
    lines.push("  (none yet: add supabase/functions/<name>/index.ts exporting createHandler)");
  }
  if (s.tokens) {
    lines.push("");
    lines.push("Tokens (HS256, signed with the secret above, valid until 2032):");
    lines.push(`  anon key           ${s.tokens.anon}`);
    lines.push(`  service_role key   ${s.tokens.serviceRole}`);
    lines.push(`                     (acts for the tenant named in the x-devai-tenant: <uuid> header)`);
    lines.push(`  demo user token    ${s.tokens.demoUser}`);
    lines.push(`                     (role authenticated; its own tenant ${LOCAL_DEMO_USER_ID})`);
    if (s.config.apiKeys.secret.includes(LOCAL_DEV_SECRET_KEY)) {
      lines.push(`  secret key         ${LOCAL_DEV_SECRET_KEY}`);
      lines.push(
        `                     (Supabase's new key kind, in the apikey header: service_role, like the key above)`,
      );
    }
    lines.push("");
    lines.push("Try it:");
    lines.push(`  export SUPABASE_URL=${s.url}`);
    lines.push(`  export DEVAI_TOKEN=${s.tokens.demoUser}`);
    lines.push(
      `  curl -s -X POST "$SUPABASE_URL/functions/v1/memory/remember" -H "Authorization: Bearer $DEVAI_TOKEN" \\`,
    );
    lines.push(
      `    -H 'content-type: application/json' -d '{"content":"We deploy with blue-green releases on Fridays","project":"demo"}'`,
    );
    lines.push(
      `  curl -s -X POST "$SUPABASE_URL/functions/v1/memory-retrieve" -H "Authorization: Bearer $DEVAI_TOKEN" \\`,
    );
    lines.push(
      `    -H 'content-type: application/json' -d '{"message":"Which releases do we deploy on Fridays?","project":"demo"}'`,
    );
    lines.push(`  npm run example:node # the SDK from Node (sdk/example.mjs); npm run example: from Deno`);
  }
  lines.push("");
  return lines.join("\n");
}

if (import.meta.main) {
  let running: RunningServer;
  let embedded: RunningDb | undefined;
  try {
    if (Deno.args.includes("--embedded")) {
      // The settings first (no database is opened): a bad one was found only after the database
      // had been created and migrated, about a minute on a fresh folder.
      configFromEnvironment({ databaseUrl: "postgresql://postgres@127.0.0.1:1/not-opened" });
      embedded = await startEmbeddedDatabase();
      running = await startServer({ databaseUrl: embedded.url, env: { ...Deno.env.toObject(), DB_POOL_MAX: "1" } });
    } else {
      running = await startServer();
    }
  } catch (err) {
    console.error(`[serve] ${(err as Error).message}`);
    if ((err as { code?: string }).code === "EADDRINUSE" || err instanceof Deno.errors.AddrInUse) {
      console.error("[serve] the port is taken: stop the other server or set FUNCTIONS_PORT");
    }
    await embedded?.stop();
    Deno.exit(1);
  }
  // `npm run start:postgres` started the local Postgres (scripts/db.sh) before this server; it
  // outlives the server on purpose (other clients, the data), so say so instead of leaving it
  // running silently.
  const postgresNotice = Deno.args.includes("--local-postgres")
    ? `[serve] the local Postgres keeps running at ${redactUrl(running.config.databaseUrl)} with your data; \`${
      dbStopCommand(new URL(running.config.databaseUrl).port || "5432")
    }\` stops it`
    : undefined;
  // Signal handlers first: a Ctrl-C right after the banner must still shut down cleanly.
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) {
      console.log(`[serve] ${signal} again: exiting now`);
      Deno.exit(130);
    }
    stopping = true;
    console.log(`[serve] ${signal}: finishing in-flight requests and jobs, then exiting`);
    // A close whose steps did not all finish says which (scripts/serve/shutdown.ts); the embedded
    // database is stopped either way.
    let closed = true;
    running.close().catch((err) => {
      console.error(`[serve] shutdown incomplete: ${(err as Error).message}`);
      closed = false;
    }).then(() => embedded?.stop()).then(() => {
      if (postgresNotice) console.log(postgresNotice);
      Deno.exit(closed ? 0 : 1);
    }, (err) => {
      console.error(`[serve] shutdown failed: ${(err as Error).message}`);
      Deno.exit(1);
    });
  };
  Deno.addSignalListener("SIGINT", () => stop("SIGINT"));
  Deno.addSignalListener("SIGTERM", () => stop("SIGTERM"));
  console.log(banner(running, embedded));
  if (postgresNotice) console.log(postgresNotice);
}
