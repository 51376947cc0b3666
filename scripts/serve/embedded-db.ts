// `npm start`'s embedded database: PGlite (Postgres in WASM + pgvector) in this process, persisted
// in DEVAI_PGLITE_DIR (default .devai/pglite), served on 127.0.0.1:DEVAI_PG_PORT (54322) so the
// functions reach it through postgres.js like any Postgres, migrated by the Supabase CLI. One
// backend: the pool is one connection and requests queue (docs/pglite.md).
//
// When it cannot start because something else has its port or its data folder, the error says
// what: another `npm start` (its own embedded database answers there), `npm run db:start`'s
// Postgres, or an unknown program, and how to run beside it.
import { createSql } from "../../supabase/functions/_shared/db.ts";
import { ConfigError } from "../../supabase/functions/_shared/env.ts";
import { type RunningDb, serveDb } from "../pglite/serve-db.ts";

export type PortHolder = "pglite" | "postgres" | "other";

/** What answers on 127.0.0.1:port: our embedded PGlite, a Postgres server, or something else. */
export async function portHolder(port: number): Promise<PortHolder> {
  const sql = createSql(`postgresql://postgres@127.0.0.1:${port}/postgres`, {
    max: 1,
    applicationName: "devai-port-check",
  });
  try {
    const [row] = await sql<{ v: string }[]>`select version() as v`;
    return /PGlite/.test(row?.v ?? "") ? "pglite" : "postgres";
  } catch {
    return "other";
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}

const SIDE_BY_SIDE =
  "to run a second server beside it, give it its own DEVAI_PG_PORT, FUNCTIONS_PORT and DEVAI_PGLITE_DIR";

/**
 * The command that stops the local Postgres on this port: scripts/db.sh reads DEVAI_PG_PORT (54322
 * by default), so a bare `npm run db:stop` beside a cluster on another port stopped nothing, or
 * another cluster on 54322.
 */
export function dbStopCommand(port: number | string): string {
  return String(port) === "54322" ? "npm run db:stop" : `DEVAI_PG_PORT=${port} npm run db:stop`;
}

export function portTakenMessage(port: number, holder: PortHolder): string {
  switch (holder) {
    case "pglite":
      return `port ${port} is taken by another \`npm start\` (its embedded PGlite database answers there): use that server, ` +
        `stop it with Ctrl-C in its terminal, or ${SIDE_BY_SIDE}`;
    case "postgres":
      return `port ${port} is taken by a Postgres server (\`npm run db:start\`'s? \`${
        dbStopCommand(port)
      }\` stops it): ` +
        `set DATABASE_URL to use that database instead, or DEVAI_PG_PORT for the embedded one`;
    case "other":
      return `port ${port} is taken by a program that is not a Postgres server: stop it, or set DEVAI_PG_PORT`;
  }
}

export async function startEmbeddedDatabase(): Promise<RunningDb> {
  const port = Number(Deno.env.get("DEVAI_PG_PORT") ?? 54322);
  try {
    return await serveDb({ log: (m) => console.log(`[pglite] ${m}`) });
  } catch (err) {
    const message = (err as Error).message;
    if (/AddrInUse|address already in use/i.test(message) || err instanceof Deno.errors.AddrInUse) {
      throw new ConfigError(portTakenMessage(port, await portHolder(port)));
    }
    const inUse = /^(.*) is in use by process (\d+)/.exec(message);
    if (inUse) {
      throw new ConfigError(
        `another \`npm start\` (process ${inUse[2]}) is using the embedded database in ${
          inUse[1]
        }: stop it, or ${SIDE_BY_SIDE}`,
      );
    }
    throw err;
  }
}
