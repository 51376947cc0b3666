// Finds the edge functions (every supabase/functions/<name>/index.ts, `_shared` and dot folders
// skipped), reads each one's verify_jwt flag from supabase/config.toml, and loads each one's
// index.ts (the entry point Supabase deploys and runs) with the shared dependencies: index.ts
// exports createHandler(deps) and calls Deno.serve only when it is the main module, so importing
// it here serves nothing by itself. New functions appear without editing the server.
import { pathToFileURL } from "node:url";
import { parse as parseToml } from "smol-toml";

/** What every function's createHandler receives (see CONVENTIONS.md: handlers take their dependencies). */
export interface HandlerDeps {
  sql: unknown;
  /** A read replica's pool, when SUPABASE_DB_READ_URL is set. */
  readSql?: unknown;
  config: unknown;
  embedder: unknown;
  llm?: unknown;
  clock?: () => Date;
}

export type FetchHandler = (req: Request) => Response | Promise<Response>;

export interface FunctionEntry {
  name: string;
  dir: string;
  /** The function's index.ts. */
  entryPath: string;
  verifyJwt: boolean;
  handler?: FetchHandler;
  /** Why the handler could not be loaded (the server answers 503 for it, others keep working). */
  loadError?: string;
}

const FUNCTION_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]*$/;

export function isFunctionName(name: string): boolean {
  return FUNCTION_NAME.test(name);
}

/** Names of the folders under functionsDir that have an index.ts, sorted. */
export async function discoverFunctions(
  functionsDir: string,
): Promise<{ name: string; dir: string; entryPath: string }[]> {
  const found: { name: string; dir: string; entryPath: string }[] = [];
  for await (const entry of Deno.readDir(functionsDir)) {
    if (!entry.isDirectory || entry.name.startsWith("_") || entry.name.startsWith(".") || !isFunctionName(entry.name)) {
      continue;
    }
    const dir = `${functionsDir}/${entry.name}`;
    const entryPath = `${dir}/index.ts`;
    try {
      if ((await Deno.stat(entryPath)).isFile) found.push({ name: entry.name, dir, entryPath });
    } catch {
      // A folder without index.ts (work in progress) is not served.
    }
  }
  return found.sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * verify_jwt per function from config.toml's [functions.<name>] sections. Functions without a
 * section get the gateway's default, true.
 */
export async function readVerifyJwt(configTomlPath: string): Promise<(name: string) => boolean> {
  let functions: Record<string, unknown> = {};
  try {
    const doc = parseToml(await Deno.readTextFile(configTomlPath)) as Record<string, unknown>;
    if (doc.functions && typeof doc.functions === "object") functions = doc.functions as Record<string, unknown>;
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) {
      throw new Error(`cannot read ${configTomlPath}: ${(err as Error).message}`);
    }
  }
  return (name) => {
    const section = functions[name];
    if (section && typeof section === "object" && "verify_jwt" in section) {
      return (section as { verify_jwt?: unknown }).verify_jwt !== false;
    }
    return true;
  };
}

function asFetchHandler(value: unknown): FetchHandler | undefined {
  if (typeof value === "function") return value as FetchHandler;
  // A Hono app (or anything with fetch) works too.
  const f = (value as { fetch?: unknown } | null)?.fetch;
  if (typeof f === "function") return (req) => (f as FetchHandler).call(value, req);
  return undefined;
}

/** Imports index.ts and calls its createHandler(deps); failures are recorded, not thrown. */
export async function loadFunction(
  found: { name: string; dir: string; entryPath: string },
  verifyJwt: boolean,
  deps: HandlerDeps,
): Promise<FunctionEntry> {
  const entry: FunctionEntry = { ...found, verifyJwt };
  try {
    const mod = await import(pathToFileURL(found.entryPath).href) as Record<string, unknown>;
    const create = mod.createHandler;
    if (typeof create !== "function") throw new Error("index.ts does not export createHandler(deps)");
    const handler = asFetchHandler(await (create as (d: HandlerDeps) => unknown)(deps));
    if (!handler) throw new Error("createHandler(deps) did not return a (req) => Response function");
    entry.handler = handler;
  } catch (err) {
    entry.loadError = (err as Error).message ?? String(err);
  }
  return entry;
}
