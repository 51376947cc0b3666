// Delta header: what changed in the tenant's memories since the revision the caller last saw for
// its thread (README "Threads and since_revision"), as at most 3 bullets at the top of the block,
// each saying what is true now:
//
//   Memory updates since rev 4:
//   - ↻corrected: [Semantic] Use bun for installs (replaces "Use pnpm for installs")
//   - +created: [Tasks] Ship v1 by Sep (imp=4)
//   - ↑pinned: [Conventions] Every commit message follows conventional commits
//
// The change log is written by triggers (one row per created/updated/merged/deleted/
// soft_deleted/restored memory, with the thread's new revision); the most recent changes win. A
// replacement (a correction, or dedup merging a memory into a new one) is one bullet with the
// NEW text: the replaced memory's row, joined to the memory that superseded it, stands for both,
// and the new memory's own 'created' row is left out. The thread's revision and its newest
// changes come with the search (public.retrieve_for_turn: twice the bullets, as a replacement's
// two rows become one bullet).
export const MAX_DELTA_BULLETS = 3;
const SUMMARY_CHARS = 120;

const REPLACED_CHARS = 60;

export interface ChangeRow {
  revision: number;
  event: string;
  summary: string | null;
  meta: {
    category?: string | null;
    memory_type?: string | null;
    importance?: number | null;
    history_event?: string | null;
  } | null;
  memory_id?: string;
  /** For a replaced memory: the memory that replaced it, what it says and where it came from. */
  replacement?: { id: string; content: string; source: string | null } | null;
}

const EVENT_MARK: Readonly<Record<string, string>> = {
  created: "+created",
  updated: "↑updated",
  merged: "↔merged",
  deleted: "−deleted",
  soft_deleted: "−forgotten",
  restored: "↺restored",
};

// An 'updated' change whose history event says more than "updated".
const HISTORY_MARK: Readonly<Record<string, string>> = { PIN: "↑pinned", UNPIN: "↓unpinned", CONFIRM: "✓confirmed" };

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1).replace(/_/g, " ");
}

function shorten(s: string, max = SUMMARY_CHARS): string {
  const one = s.replace(/\s+/g, " ").trim();
  return one.length <= max ? one : `${one.slice(0, max - 1).trimEnd()}…`;
}

export function deltaHeaderLine(sinceRevision: number): string {
  return `Memory updates since rev ${sinceRevision}:`;
}

/** One bullet per change, newest first; at most MAX_DELTA_BULLETS (a replacement is one bullet). */
export function formatDeltaBullets(changes: readonly ChangeRow[]): string[] {
  const replacements = new Set(changes.flatMap((c) => (c.replacement ? [c.replacement.id] : [])));
  return changes
    .filter((c) => !(c.event === "created" && c.memory_id !== undefined && replacements.has(c.memory_id)))
    .slice(0, MAX_DELTA_BULLETS)
    .map((c) => {
      const label = c.meta?.category ?? c.meta?.memory_type;
      const tag = label ? `[${capitalize(label)}] ` : "";
      if (c.replacement) {
        const mark = c.replacement.source === "correction" ? "↻corrected" : EVENT_MARK.merged;
        return `- ${mark}: ${tag}${shorten(c.replacement.content)} (replaces "${
          shorten(c.summary ?? "", REPLACED_CHARS)
        }")`;
      }
      const mark = (c.event === "updated" && HISTORY_MARK[c.meta?.history_event ?? ""]) || EVENT_MARK[c.event] ||
        c.event;
      const imp = c.event === "created" && typeof c.meta?.importance === "number" ? ` (imp=${c.meta.importance})` : "";
      return `- ${mark}: ${tag}${shorten(c.summary ?? "")}${imp}`;
    });
}
