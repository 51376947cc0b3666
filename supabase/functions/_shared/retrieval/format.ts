// The `## Relevant Memories` block, grouped by type as in seed 000:
//
//   ## Relevant Memories
//
//   Memory updates since rev 4:          (delta header, seed 001 §1, when the caller sent since_revision)
//   - +created: [Tasks] ...
//
//   ### Project Knowledge (TaskForge)
//   - task-api uses JWT auth
//     - related: api-project-access uses tfapi_ keys   (seed 001 §2 related bullet)
//
//   ### Patterns
//   - ...
//   [truncated - 3 more memories available]  (seed 002)
//
// Section of a memory, first rule that matches:
//   1. memory_type 'procedural' or source 'pattern'             → Patterns
//   2. source 'error_resolution' or memory_type 'episodic'      → Past Fixes
//   3. namespace in the project scope                           → Project Knowledge (<project>)
//   4. namespace in the user scope                              → User Preferences
//   5. anything else (global facts)                             → General Knowledge
// Sections appear in that order (project first, as in the seed), memories in rank order within.
import { bulletText } from "../fit-text.ts";
import { projectScope } from "../schemas.ts";

export interface FormatMemory {
  id: string;
  content: string;
  memory_type: string;
  namespace: string;
  source: string | null;
}

export interface FormatContext {
  root: string;
  project?: string;
}

export type SectionKey = "project" | "user" | "patterns" | "fixes" | "general";
export const SECTION_ORDER: readonly SectionKey[] = ["project", "user", "patterns", "fixes", "general"];

export const BLOCK_HEADING = "## Relevant Memories";

export function sectionOf(m: FormatMemory, ctx: FormatContext): SectionKey {
  if (m.memory_type === "procedural" || m.source === "pattern") return "patterns";
  if (m.source === "error_resolution" || m.memory_type === "episodic") return "fixes";
  const ns = `${m.namespace}/`;
  if (ctx.project !== undefined && ns.startsWith(`${projectScope(ctx.root, ctx.project)}/`)) return "project";
  if (ns.startsWith(`${ctx.root}/user/`)) return "user";
  return "general";
}

export function sectionTitle(key: SectionKey, ctx: FormatContext): string {
  switch (key) {
    case "project":
      return `### Project Knowledge (${ctx.project ?? "project"})`;
    case "user":
      return "### User Preferences";
    case "patterns":
      return "### Patterns";
    case "fixes":
      return "### Past Fixes";
    case "general":
      return "### General Knowledge";
  }
}

export { bulletText };

export function memoryLine(m: { content: string }): string {
  return `- ${bulletText(m.content)}`;
}

export function relatedLine(content: string): string {
  return `  - related: ${bulletText(content)}`;
}

export function truncationLine(n: number): string {
  return `[truncated - ${n} more memories available]`;
}

export interface BlockParts<M extends FormatMemory> {
  memories: readonly M[];
  /** Related bullets by anchor memory id. */
  related?: ReadonlyMap<string, readonly string[]>;
  /** Delta header lines (header line + bullets), already formatted; empty for none. */
  delta?: readonly string[];
  truncated: number;
}

/** Renders the block; "" when there is nothing to say (no memories, no delta, nothing truncated). */
export function renderBlock<M extends FormatMemory>(parts: BlockParts<M>, ctx: FormatContext): string {
  const delta = parts.delta ?? [];
  if (parts.memories.length === 0 && delta.length === 0 && parts.truncated === 0) return "";
  const chunks: string[] = [BLOCK_HEADING];
  if (delta.length > 0) chunks.push(delta.join("\n"));
  const bySection = new Map<SectionKey, M[]>();
  for (const m of parts.memories) {
    const key = sectionOf(m, ctx);
    const list = bySection.get(key);
    if (list) list.push(m);
    else bySection.set(key, [m]);
  }
  for (const key of SECTION_ORDER) {
    const list = bySection.get(key);
    if (!list) continue;
    const lines = [sectionTitle(key, ctx)];
    for (const m of list) {
      lines.push(memoryLine(m));
      for (const r of parts.related?.get(m.id) ?? []) lines.push(relatedLine(r));
    }
    chunks.push(lines.join("\n"));
  }
  let block = chunks.join("\n\n");
  if (parts.truncated > 0) block += `\n${truncationLine(parts.truncated)}`;
  return block;
}
