// Embedded Postgres for devai-memory: PGlite (Postgres in WASM) + pgvector, persisted in a data
// folder, served over the Postgres wire protocol so psql, postgres.js and the Supabase CLI connect
// to it as to any server. No database server to install.
//
//   node_modules/.bin/deno run -A --config supabase/functions/deno.json scripts/pglite/serve-db.ts
//
// At start: open (or create) the data folder, apply scripts/sql/supabase-bootstrap.sql, listen,
// and apply pending migrations with `supabase db push` against the socket (the same command as on
// a real server). Prints `[pglite] ready: postgresql://postgres@127.0.0.1:<port>/postgres` when
// clients may connect. PGlite has no pg_cron: the local functions server (scripts/serve.ts) runs
// the maintenance schedules, as it does for any database without pg_cron.
// `npm start` runs this in-process (scripts/serve.ts --embedded); run alone, it is a database only.
//
// Environment:
//   DEVAI_PGLITE_DIR        data folder (default <repo>/.devai/pglite; git-ignored)
//   DEVAI_PG_PORT           TCP port on 127.0.0.1 (default 54322, Supabase's local DB port)
//   DEVAI_PGLITE_MIGRATOR   cli (default when node_modules/.bin/supabase exists) | builtin | none
//   DEVAI_PGLITE_IDLE_TX_MS idle-in-transaction timeout in ms (default 60000; 0 disables)
//   DEVAI_PGLITE_MAX_CONN   maximum client connections (default 100)
//   DEVAI_PGLITE_STARTUP_MS a socket that sends no startup packet this long is closed (default 60000)
// See docs/pglite.md for what differs from a real Supabase database.
import { PGlite } from "@electric-sql/pglite";
import { vector } from "@electric-sql/pglite-pgvector";
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmdirSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import process from "node:process";
import { WireServer } from "./wire-server.ts";
import { applyMigrations } from "./migrate.ts";

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

export interface ServeOptions {
  dataDir?: string;
  port?: number;
  migrator?: "cli" | "builtin" | "none";
  idleInTransactionTimeoutMs?: number;
  startupTimeoutMs?: number;
  maxConnections?: number;
  log?: (m: string) => void;
}

export interface RunningDb {
  db: PGlite;
  server: WireServer;
  url: string;
  dataDir: string;
  migrator: string;
  stop(): Promise<void>;
}

const log0 = (m: string) => console.error(`[pglite] ${m}`);

// PGlite starts its one backend with `-c search_path=public` on the command line, which beats the
// database-level `alter database ... set search_path` that supabase-bootstrap.sql sets (and that a
// real server applies to every new connection). Start it with the database's value instead.
export const SUPABASE_SEARCH_PATH = '"$user", public, extensions';

function openPglite(dataDir: string, searchPath = SUPABASE_SEARCH_PATH): Promise<PGlite> {
  const defaults: string[] = (PGlite as unknown as { defaultStartParams?: string[] }).defaultStartParams ?? [
    "--single",
    "-F",
    "-O",
    "-j",
    "-c",
    "search_path=public",
    "-c",
    "exit_on_error=false",
    "-c",
    "log_checkpoints=false",
    "-c",
    "max_worker_processes=0",
    "-c",
    "max_parallel_workers=0",
    "-c",
    "max_parallel_workers_per_gather=0",
    "-c",
    "io_method=sync",
    "-c",
    "max_parallel_maintenance_workers=0",
  ];
  const startParams = defaults.map((p) => (p.startsWith("search_path=") ? `search_path=${searchPath}` : p));
  return PGlite.create({ dataDir, extensions: { vector }, startParams });
}

/**
 * Takes `<dataDir>.lock` for this process. The file is created exclusively (`wx`), so of two
 * starts at once exactly one takes it. A lock left by a process that no longer runs is taken over
 * under a second, short-lived lock (holdTakeover): the start holding it checks that the lock is
 * still the stale one it read, removes it and creates its own with `wx` again, so a start that
 * creates the lock meanwhile keeps it, and two takeovers never overlap. (Before, a stale lock was
 * renamed aside and a live one found there put back with a link: a third start taking the name in
 * between left two processes serving the folder.)
 * `beforeStaleRemoval` and `afterStaleRemoval` are for tests only: they run after judging the lock
 * stale, and between removing it and creating this start's own.
 */
/** An empty lock file older than this was left by a start that crashed before writing its pid. */
const EMPTY_LOCK_STALE_MS = 10_000;

export function takeLock(
  dataDir: string,
  beforeStaleRemoval?: () => void,
  afterStaleRemoval?: () => void,
): string {
  const lock = `${dataDir}.lock`;
  const create = (): boolean => {
    try {
      const fd = openSync(lock, "wx");
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return true;
    } catch (err) {
      if ((err as { code?: string }).code !== "EEXIST") throw err;
      return false;
    }
  };
  for (let attempt = 0;; attempt++) {
    if (create()) return lock;
    const seen = lockState(lock);
    if (!seen) continue; // removed since: try the exclusive create again
    let alive = seen.pid === process.pid; // this process already serves the folder
    if (seen.pid > 0 && !alive) {
      try {
        process.kill(seen.pid, 0);
        alive = true;
      } catch { /* not running */ }
    }
    // Empty: another start has created it and not yet written its pid, unless the file is older
    // than a start takes to write it (a crash between the two: the lock is stale, not held).
    const starting = !(seen.pid > 0) && Date.now() - seen.mtimeMs < EMPTY_LOCK_STALE_MS;
    if (alive || starting || attempt > 3) throw lockInUse(dataDir, lock, seen.pid);
    beforeStaleRemoval?.();
    const takeover = holdTakeover(dataDir, lock);
    try {
      const now = lockState(lock);
      if (!now || now.ino !== seen.ino || now.mtimeMs !== seen.mtimeMs || now.text !== seen.text) continue;
      rmSync(lock, { force: true });
      afterStaleRemoval?.();
      if (create()) return lock;
      // A start created it between the removal and this create: it holds the folder.
      throw lockInUse(dataDir, lock, lockState(lock)?.pid ?? 0);
    } finally {
      takeover.close();
    }
  }
}

/**
 * The takeover lock: an exclusive `flock` on the file `<dataDir>.lock.takeover`, held while a
 * stale lock is replaced (microseconds) and never waited for: a start that finds it held is refused
 * ("try again in a moment"). The kernel releases it when its holder's file is closed or its process
 * ends, however it ends, so a start killed inside a takeover leaves nothing to remove by hand.
 * (It was a directory made by `mkdir`: one left by a start killed between making and removing it
 * refused every later start that found a stale lock, until removed by hand.) The file stays: a
 * start that removed it could lock a new file of the same name while another holds the old one.
 * A directory of that name is such a leftover, removed here.
 */
function holdTakeover(dataDir: string, lock: string): Deno.FsFile {
  const path = `${lock}.takeover`;
  try {
    if (statSync(path).isDirectory()) rmdirSync(path);
  } catch (err) {
    if ((err as { code?: string }).code !== "ENOENT") throw err;
  }
  const file = Deno.openSync(path, { read: true, write: true, create: true });
  if (file.tryLockSync(true)) return file;
  file.close();
  throw new Error(`${dataDir}: another start is taking over its stale lock (${path} is locked); try again in a moment`);
}

/** The lock file's identity and pid, or null when there is none. */
function lockState(lock: string): { ino: number; mtimeMs: number; text: string; pid: number } | null {
  try {
    const st = statSync(lock);
    const text = readFileSync(lock, "utf8").trim();
    return { ino: st.ino, mtimeMs: st.mtimeMs, text, pid: Number(text) };
  } catch (err) {
    if ((err as { code?: string }).code === "ENOENT") return null;
    throw err;
  }
}

function lockInUse(dataDir: string, lock: string, pid: number): Error {
  return new Error(
    `${dataDir} is in use by process ${
      pid || "(starting)"
    } (lock ${lock}); PGlite cannot share a data folder between processes`,
  );
}

async function runCli(url: string, log: (m: string) => void): Promise<void> {
  const cli = join(repoRoot, "node_modules/.bin/supabase");
  const cmd = new Deno.Command(cli, {
    args: ["db", "push", `--remote=${url}`, "--include-all", "--yes"],
    cwd: repoRoot,
    env: { PGSSLMODE: "disable" },
    stdout: "piped",
    stderr: "piped",
  });
  const out = await cmd.output();
  // The CLI reports progress on stderr and its closing line on stdout: keep that order in the log.
  const text = new TextDecoder().decode(out.stderr) + new TextDecoder().decode(out.stdout);
  for (const line of text.split("\n")) {
    if (/^(Applying migration|Remote database is up to date|Finished)/.test(line.trim())) {
      log(`supabase: ${line.trim()}`);
    }
  }
  if (!out.success) throw new Error(`supabase db push failed (exit ${out.code}):\n${text}`);
}

export async function serveDb(opts: ServeOptions = {}): Promise<RunningDb> {
  const log = opts.log ?? log0;
  const dataDir = resolve(opts.dataDir ?? process.env.DEVAI_PGLITE_DIR ?? join(repoRoot, ".devai/pglite"));
  const port = opts.port ?? Number(process.env.DEVAI_PG_PORT ?? 54322);
  const cliPath = join(repoRoot, "node_modules/.bin/supabase");
  const migrator = opts.migrator ?? (process.env.DEVAI_PGLITE_MIGRATOR as ServeOptions["migrator"]) ??
    (existsSync(cliPath) ? "cli" : "builtin");

  mkdirSync(dirname(dataDir), { recursive: true });
  const lock = takeLock(dataDir);
  const fresh = !existsSync(join(dataDir, "PG_VERSION"));
  log(`${fresh ? "creating" : "opening"} ${dataDir}`);
  let db = await openPglite(dataDir);

  // Supabase's roles and auth.* helpers: the same file scripts/db.sh applies to a real server.
  await db.exec(readFileSync(join(repoRoot, "scripts/sql/supabase-bootstrap.sql"), "utf8"));
  // If the database's search_path (set by supabase-bootstrap.sql) is not what the session was
  // started with, restart the backend with it, so clients see what a real server gives them.
  const sp = await db.query<{ now: string; want: string | null }>(`
    select current_setting('search_path') as now,
           (select substr(c, length('search_path=') + 1) from pg_db_role_setting s, unnest(s.setconfig) c
             where s.setdatabase = (select oid from pg_database where datname = current_database())
               and s.setrole = 0 and c like 'search_path=%') as want`);
  const want = sp.rows[0]?.want;
  if (want && sp.rows[0]!.now !== want) {
    log(`restarting the backend with search_path = ${want}`);
    await db.close();
    db = await openPglite(dataDir, want);
  }

  const server = new WireServer({
    db,
    host: "127.0.0.1",
    port,
    maxConnections: opts.maxConnections ?? Number(process.env.DEVAI_PGLITE_MAX_CONN ?? 100),
    idleInTransactionTimeoutMs: opts.idleInTransactionTimeoutMs ??
      Number(process.env.DEVAI_PGLITE_IDLE_TX_MS ?? 60_000),
    startupTimeoutMs: opts.startupTimeoutMs ?? Number(process.env.DEVAI_PGLITE_STARTUP_MS ?? 60_000),
    log,
  });
  await server.start();
  const url = `postgresql://postgres@127.0.0.1:${port}/postgres`;

  const stop = async () => {
    await server.stop();
    await db.close();
    rmSync(lock, { force: true });
  };

  try {
    if (migrator === "cli") {
      await runCli(url, log);
    } else if (migrator === "builtin") {
      const n = await server.exclusive(
        "migrate",
        (d) => applyMigrations(d, join(repoRoot, "supabase/migrations"), log),
      );
      log(`applied ${n} migration(s) (builtin migrator)`);
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { db, server, url, dataDir, migrator, stop };
}

if (import.meta.main) {
  try {
    const running = await serveDb();
    const v = await running.server.exclusive("version", (d) =>
      d.query<{ pg: string; vec: string }>(
        "select current_setting('server_version') as pg, (select extversion from pg_extension where extname = 'vector') as vec",
      ));
    log0(`Postgres ${v.rows[0]?.pg} (PGlite), pgvector ${v.rows[0]?.vec}; migrations via ${running.migrator}`);
    log0(`ready: ${running.url}`);
    let stopping = false;
    const shutdown = async (sig: string) => {
      if (stopping) return;
      stopping = true;
      log0(`${sig}: stopping`);
      await running.stop();
      process.exit(0);
    };
    process.on("SIGINT", () => void shutdown("SIGINT"));
    process.on("SIGTERM", () => void shutdown("SIGTERM"));
  } catch (err) {
    log0(`error: ${(err as Error).message}`);
    process.exit(1);
  }
}
