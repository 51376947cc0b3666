// Memory categories (seed 001 §5; rows of public.memory_categories). A memory's category is
// metadata->>'category'; procedural memories count as 'procedural' whatever their metadata says
// (the rule public.query_memories applies, seed 001 §12). Extraction offers the configured names
// to the model and keeps a proposed category only when it is one of them.
import type { Sql, Tx } from "./db.ts";
import { HttpError } from "./http.ts";

/** The configured category names (readable by every signed-in caller and by the worker). */
export async function loadCategoryNames(q: Sql | Tx): Promise<string[]> {
  const rows = await q<{ name: string }[]>`select name from public.memory_categories order by name`;
  return rows.map((r) => r.name);
}

/** The 400 for a category that is not configured: it names the ones that are. */
export function unknownCategory(
  name: string,
  known: readonly string[],
  path: (string | number)[] = ["category"],
): HttpError {
  return new HttpError(
    400,
    "unknown_category",
    `unknown category '${name}'; configured categories: ${
      known.join(", ")
    } (GET memory/categories lists them, PUT memory/categories/<name> adds one)`,
    [{ path, message: `not one of: ${known.join(", ")}`, code: "unknown_category" }],
  );
}

/** Throws unknownCategory unless `name` is configured: a memory filed under it could never be queried. */
export async function assertKnownCategory(q: Sql | Tx, name: string, path: (string | number)[]): Promise<void> {
  const known = await loadCategoryNames(q);
  if (!known.includes(name)) throw unknownCategory(name, known, path);
}

/** The category memory.query files a memory under, or null (what memory_events.category records). */
export function effectiveCategory(memoryType: string, category: string | null | undefined): string | null {
  if (memoryType === "procedural") return "procedural";
  return category ?? null;
}
