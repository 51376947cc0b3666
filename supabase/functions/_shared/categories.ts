// Memory categories (seed 001 §5; rows of public.memory_categories). A memory's category is
// metadata->>'category'; procedural memories count as 'procedural' whatever their metadata says
// (the rule public.query_memories applies, seed 001 §12). Extraction offers the configured names
// to the model and keeps a proposed category only when it is one of them.
import type { Sql, Tx } from "./db.ts";

/** The configured category names (readable by every signed-in caller and by the worker). */
export async function loadCategoryNames(q: Sql | Tx): Promise<string[]> {
  const rows = await q<{ name: string }[]>`select name from public.memory_categories order by name`;
  return rows.map((r) => r.name);
}

/** The category memory.query files a memory under, or null (what memory_events.category records). */
export function effectiveCategory(memoryType: string, category: string | null | undefined): string | null {
  if (memoryType === "procedural") return "procedural";
  return category ?? null;
}
