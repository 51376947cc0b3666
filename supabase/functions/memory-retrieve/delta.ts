// Delta header (seed 001 §1): what changed in the tenant's memories since the revision the caller
// last saw for its thread, as at most 3 bullets at the top of the block:
//
//   Memory updates since rev 4:
//   - +created: [Tasks] Ship v1 by Sep (imp=4)
//   - ↑updated: [Goals] Ship v1 by Sep
//   - ↔merged: [Semantic] Combined notes about lactose intolerance
//
// The change log is written by triggers (one row per created/updated/merged/deleted/
// soft_deleted/restored memory, with the thread's new revision); the most recent changes win.
import type { Tx } from "../_shared/db.ts";

export const MAX_DELTA_BULLETS = 3;
const SUMMARY_CHARS = 120;

export interface ChangeRow {
  revision: number;
  event: string;
  summary: string | null;
  meta: { category?: string | null; memory_type?: string | null; importance?: number | null } | null;
}

const EVENT_MARK: Readonly<Record<string, string>> = {
  created: "+created",
  updated: "↑updated",
  merged: "↔merged",
  deleted: "−deleted",
  soft_deleted: "−forgotten",
  restored: "↺restored",
};

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1).replace(/_/g, " ");
}

function shorten(s: string): string {
  const one = s.replace(/\s+/g, " ").trim();
  return one.length <= SUMMARY_CHARS ? one : `${one.slice(0, SUMMARY_CHARS - 1).trimEnd()}…`;
}

export function deltaHeaderLine(sinceRevision: number): string {
  return `Memory updates since rev ${sinceRevision}:`;
}

/** One bullet per change, newest first; at most MAX_DELTA_BULLETS. */
export function formatDeltaBullets(changes: readonly ChangeRow[]): string[] {
  return changes.slice(0, MAX_DELTA_BULLETS).map((c) => {
    const label = c.meta?.category ?? c.meta?.memory_type;
    const tag = label ? `[${capitalize(label)}] ` : "";
    const imp = c.event === "created" && typeof c.meta?.importance === "number" ? ` (imp=${c.meta.importance})` : "";
    return `- ${EVENT_MARK[c.event] ?? c.event}: ${tag}${shorten(c.summary ?? "")}${imp}`;
  });
}

export interface ThreadDelta {
  /** The thread's current revision (0 when nothing was ever recorded for it). */
  revision: number;
  /** Newest changes after since_revision, at most MAX_DELTA_BULLETS. */
  changes: ChangeRow[];
}

/** Reads the thread's revision and its newest changes after sinceRevision, as the tenant (RLS). */
export async function loadThreadDelta(tx: Tx, threadId: string, sinceRevision: number | undefined): Promise<ThreadDelta> {
  const [rev] = await tx<{ revision: string }[]>`
    select revision::text from public.memory_thread_revisions where thread_id = ${threadId}`;
  const revision = rev ? Number(rev.revision) : 0;
  if (sinceRevision === undefined || sinceRevision >= revision) return { revision, changes: [] };
  const rows = await tx<{ revision: string; event: string; summary: string | null; meta: ChangeRow["meta"] }[]>`
    select revision::text, event, summary, meta
      from public.memory_change_log
     where thread_id = ${threadId} and revision > ${sinceRevision}
     order by revision desc
     limit ${MAX_DELTA_BULLETS}`;
  return { revision, changes: rows.map((r) => ({ revision: Number(r.revision), event: r.event, summary: r.summary, meta: r.meta })) };
}
