// Memory candidates and the writing constraints every stored memory meets (seed 001 §9):
// semantic: complete, self-contained, third person, no first/second person pronouns, 1-2 sentences,
// ≤ 280 chars; episodic and procedural: 1-2 sentences, ≤ 280 chars. Violations are trimmed when a
// valid prefix survives (extra sentences dropped), else rejected; both are counted so extraction
// quality (seed: ≥ 95% pass on first try) can be measured from job results.
import { z } from "zod";
import { segment } from "./schemas.ts";

export const MEMORY_TYPES = ["semantic", "episodic", "procedural"] as const;
export const SOURCES = ["user_stated", "correction", "error_resolution", "pattern", "discovery", "compaction"] as const;
export const PRIORITIES = ["highest", "high", "medium", "low"] as const;

/** What an extractor (LLM or rules) proposes. Namespace may be relative ("project/x/arch") or absolute. */
export const CandidateSchema = z.object({
  content: z.string().min(1).max(2000).refine((s) => !/[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/.test(s), "control characters are not allowed"),
  type: z.enum(MEMORY_TYPES),
  namespace: z.string().min(1).max(256),
  source: z.enum(SOURCES),
  priority: z.enum(PRIORITIES),
  importance: z.number().int().min(1).max(5),
});
export type Candidate = z.infer<typeof CandidateSchema>;

export const MAX_CONTENT_CHARS = 280;
export const MAX_CANDIDATES_PER_CHUNK = 5;

const PRIORITY_RANK: Record<Candidate["priority"], number> = { highest: 0, high: 1, medium: 2, low: 3 };

/** User-stated memories are always stored and never rewritten or deleted by the LLM. */
export function isProtected(c: { source?: string | null; priority?: string | null; pinned?: boolean | null }): boolean {
  return c.source === "user_stated" || c.source === "correction" || c.priority === "highest" || c.pinned === true;
}

export interface ValidationStats {
  accepted: number;
  trimmed: number;
  rejected: number;
  reasons: Record<string, number>;
}

export const emptyStats = (): ValidationStats => ({ accepted: 0, trimmed: 0, rejected: 0, reasons: {} });

export type ValidationOutcome =
  | { ok: true; content: string; trimmed: boolean }
  | { ok: false; reason: "empty" | "too_long" | "pronoun" };

// First/second person only: third-person pronouns are fine in "The user prefers…" style facts,
// while "I", "we", "you" make a memory meaningless out of its conversation.
const FIRST_SECOND_PERSON = /\b(i|me|my|mine|myself|we|us|our|ours|ourselves|you|your|yours|yourself|yourselves)\b|\b(i'm|i've|i'd|i'll|we're|we've|you're|you've|you'll)\b/i;

/**
 * Sentence split on ., ! or ? followed by whitespace and a capital/digit/quote, so "e.g. the",
 * "v1.2" and file names like "index.ts" do not end a sentence.
 */
export function splitSentences(text: string): string[] {
  const out: string[] = [];
  const boundary = /[.!?]+(?=\s+["'`(A-Z0-9])/g;
  let start = 0;
  for (const m of text.matchAll(boundary)) {
    const end = m.index! + m[0].length;
    out.push(text.slice(start, end).trim());
    start = end;
  }
  const rest = text.slice(start).trim();
  if (rest) out.push(rest);
  return out.filter((s) => s.length > 0);
}

export function normaliseContent(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

export function validateContent(type: Candidate["type"], raw: string): ValidationOutcome {
  let content = normaliseContent(raw);
  if (!content) return { ok: false, reason: "empty" };
  let trimmed = false;
  const sentences = splitSentences(content);
  if (sentences.length > 2) {
    content = sentences.slice(0, 2).join(" ");
    trimmed = true;
  }
  if (content.length > MAX_CONTENT_CHARS) {
    const first = sentences[0] ?? "";
    if (first.length > 0 && first.length <= MAX_CONTENT_CHARS) {
      content = first;
      trimmed = true;
    } else {
      return { ok: false, reason: "too_long" };
    }
  }
  if (type === "semantic" && FIRST_SECOND_PERSON.test(content)) return { ok: false, reason: "pronoun" };
  return { ok: true, content, trimmed };
}

/**
 * Namespaces are confined to `<root>/global/…`, `<root>/user/…` and the request's own project
 * `<root>/project/<project>/…`: a model cannot file memories under another project (no
 * cross-project contamination). Anything else is re-filed under the default scope.
 */
export function scopeNamespace(raw: string, root: string, project?: string): { namespace: string; rewritten: boolean } {
  const fallback = project ? `${root}/project/${project}` : `${root}/global`;
  let ns = raw.trim().replace(/^\/+|\/+$/g, "").replace(/\/{2,}/g, "/");
  if (!ns.toLowerCase().startsWith(`${root}/`)) ns = `${root}/${ns}`;
  const segments = ns.split("/").map((s, i) => (i === 2 && segmentsAreProject(ns) ? s : s.toLowerCase()));
  const clean = segments.every((s) => segment.safeParse(s).success);
  const scope = segments[1];
  const ok = clean && segments.length <= 6 && (
    scope === "global" || scope === "user" ||
    (scope === "project" && project !== undefined && segments[2]?.toLowerCase() === project.toLowerCase())
  );
  if (!ok) return { namespace: fallback, rewritten: true };
  if (scope === "project") segments[2] = project!; // the request's spelling, the one retrieval searches
  const out = segments.join("/");
  return { namespace: out, rewritten: out !== raw };
}

function segmentsAreProject(ns: string): boolean {
  return ns.split("/")[1]?.toLowerCase() === "project";
}

export interface PreparedCandidates {
  candidates: Candidate[];
  stats: ValidationStats & { over_cap: number; namespace_rewritten: number; duplicates_in_batch: number };
}

/**
 * Validates, scopes, de-duplicates within the batch and caps (≤ 5, best priority first; user-stated
 * ones always kept, they are the user's explicit words).
 */
export function prepareCandidates(
  raw: Candidate[],
  opts: { root: string; project?: string; cap?: number },
): PreparedCandidates {
  const stats = { ...emptyStats(), over_cap: 0, namespace_rewritten: 0, duplicates_in_batch: 0 };
  const seen = new Set<string>();
  const valid: Candidate[] = [];
  for (const c of raw) {
    const v = validateContent(c.type, c.content);
    if (!v.ok) {
      stats.rejected++;
      stats.reasons[v.reason] = (stats.reasons[v.reason] ?? 0) + 1;
      continue;
    }
    if (v.trimmed) stats.trimmed++;
    stats.accepted++;
    const key = v.content.toLowerCase();
    if (seen.has(key)) {
      stats.duplicates_in_batch++;
      continue;
    }
    seen.add(key);
    const ns = scopeNamespace(c.namespace, opts.root, opts.project);
    if (ns.rewritten && ns.namespace !== c.namespace) stats.namespace_rewritten++;
    valid.push({ ...c, content: v.content, namespace: ns.namespace });
  }
  const cap = opts.cap ?? MAX_CANDIDATES_PER_CHUNK;
  const ordered = valid
    .map((c, i) => ({ c, i }))
    .sort((a, b) => PRIORITY_RANK[a.c.priority] - PRIORITY_RANK[b.c.priority] || b.c.importance - a.c.importance || a.i - b.i)
    .map((x) => x.c);
  // User-stated candidates do not count against the cap: they are always stored.
  const kept: Candidate[] = [];
  let counted = 0;
  for (const c of ordered) {
    if (isProtected(c)) kept.push(c);
    else if (counted < cap) {
      kept.push(c);
      counted++;
    } else stats.over_cap++;
  }
  return { candidates: kept, stats };
}
