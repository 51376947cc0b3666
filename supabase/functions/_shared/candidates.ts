// Memory candidates: what an extractor proposes, and how a batch of them becomes what the dedup
// queue stores (secrets redacted on the way: redact.ts). Two provenances, kept apart by the types rather than by what a candidate claims:
//
// - stated: the user's own words, found by the rule-based extractor ("remember …", "no, X not Y").
//   These are the only candidates that may be user-stated (source user_stated/correction,
//   priority highest): always kept, exempt from the per-chunk and daily caps, never decay, and the
//   LLM never rewrites or deletes them (ARCHITECTURE invariant 5). The memory API's remember and
//   correct write user-stated memories directly, without going through candidates.
// - proposed: what a model proposed (LLM extraction or compaction, an agent through memory-dedup).
//   A model's label is not provenance: source user_stated/correction becomes 'discovery' and
//   priority highest becomes high (counted as demoted), so model output can neither skip the caps
//   nor become a permanent, LLM-proof memory. At most 5 per chunk (seed 001 §13), best first.
import { z } from "zod";
import { compressionFields } from "./context/compress.ts";
import { filePath, intWithin } from "./schemas.ts";
import { nameText } from "./name-form.ts";
import { modelNamespace, type WriteScope } from "./scopes.ts";
import { addCounts, type RedactionCounts, redactSecrets } from "./redact.ts";
import { emptyTally, tallied, talliedList } from "./redaction-events.ts";
import { emptyStats, validateContent, type ValidationStats } from "./writing-constraints.ts";
import { stripUnsafeCharacters } from "./unsafe-characters.ts";

export const MEMORY_TYPES = ["semantic", "episodic", "procedural"] as const;
export const SOURCES = ["user_stated", "correction", "error_resolution", "pattern", "discovery", "compaction"] as const;
export const PRIORITIES = ["highest", "high", "medium", "low"] as const;

/** A candidate's files: what the schema refuses in a model's list drops it, in a caller's (memory-dedup) is a 400. */
export const candidateFiles = z.array(filePath).max(50);

/**
 * What an extractor (LLM, rules or an agent) proposes. Namespace may be relative
 * ("project/x/arch") or absolute; where it may point is scopes.ts's rule. category is free text
 * here: prepareCandidates keeps a model's only when it names a configured category
 * (public.memory_categories); memory-dedup refuses an unknown one.
 */
export const CandidateSchema = z.object({
  // Characters stored text may not hold are removed in prepareCandidates, not refused: a model
  // or a transcript that carries one still yields its memory (unsafe-characters.ts).
  content: z.string().min(1).max(2000),
  type: z.enum(MEMORY_TYPES),
  namespace: nameText().min(1).max(256),
  source: z.enum(SOURCES),
  priority: z.enum(PRIORITIES),
  importance: intWithin(1, 5),
  category: z.string().max(64).nullish(),
  /** Files it is about (docs/context.md#code-lineage): stored in metadata.files and linked as file entities; a malformed list is dropped, not fatal. */
  files: candidateFiles.optional().catch(undefined),
  /** Its summary, compressed form and index key, when the model made them (docs/context.md#compression-levels). */
  ...compressionFields,
});
export type Candidate = z.infer<typeof CandidateSchema>;

export const MAX_CANDIDATES_PER_CHUNK = 5;

const PRIORITY_RANK: Record<Candidate["priority"], number> = { highest: 0, high: 1, medium: 2, low: 3 };

/**
 * Memories (and stated candidates) the LLM must never rewrite or delete: user-stated ones (source
 * user_stated or correction, priority highest) and pinned ones.
 */
export function isProtected(c: { source?: string | null; priority?: string | null; pinned?: boolean | null }): boolean {
  return c.source === "user_stated" || c.source === "correction" || c.priority === "highest" || c.pinned === true;
}

/** A model's candidate with every user-stated claim removed (see the module comment). */
export function demoteModelCandidate(c: Candidate): { candidate: Candidate; demoted: boolean } {
  const source = c.source === "user_stated" || c.source === "correction" ? "discovery" : c.source;
  const priority = c.priority === "highest" ? "high" : c.priority;
  const demoted = source !== c.source || priority !== c.priority;
  return { candidate: demoted ? { ...c, source, priority } : c, demoted };
}

/** A batch by provenance (see the module comment). */
export interface CandidateBatch {
  /** The user's own words (rule-based extractor). */
  stated: Candidate[];
  /** Model proposals, one list per chunk the model read (the cap applies to each list). */
  proposed: Candidate[][];
}

export interface PreparedCandidates {
  candidates: Candidate[];
  stats: ValidationStats & {
    over_cap: number;
    namespace_rewritten: number;
    duplicates_in_batch: number;
    /** Model candidates whose user-stated source or highest priority was taken away. */
    demoted: number;
    /** Categories that are not configured (the candidate is kept without one). */
    category_dropped: number;
    /** Candidates that had characters stored text may not hold, removed before validation. */
    unsafe_characters_removed: number;
    /**
     * Secrets replaced by [REDACTED:<kind>] (redact.ts), and texts dropped as nothing but a secret:
     * candidates, and a kept candidate's file paths and model fields.
     */
    redacted: number;
    secrets_dropped: number;
    redacted_kinds: RedactionCounts;
  };
}

/**
 * Validates (writing constraints), scopes, de-duplicates within the batch (stated first, so on a
 * tie with a model's paraphrase the user's words are kept) and caps each chunk's proposals
 * (≤ cap, best priority then importance first). Stated candidates are never capped.
 */
export function prepareCandidates(
  batch: CandidateBatch,
  opts: {
    root: string;
    project?: string;
    scope?: WriteScope;
    categories: readonly string[];
    cap?: number;
    /** "caller": namespaces the caller checked already (memory-dedup), kept as they are. Default "model". */
    namespaces?: "model" | "caller";
  },
): PreparedCandidates {
  const stats: PreparedCandidates["stats"] = {
    ...emptyStats(),
    over_cap: 0,
    namespace_rewritten: 0,
    duplicates_in_batch: 0,
    demoted: 0,
    category_dropped: 0,
    unsafe_characters_removed: 0,
    redacted: 0,
    secrets_dropped: 0,
    redacted_kinds: {},
  };
  const cap = opts.cap ?? MAX_CANDIDATES_PER_CHUNK;
  const known = new Set(opts.categories);
  const seen = new Set<string>();

  const clean = (c: Candidate, alsoSeen?: Set<string>): Candidate | undefined => {
    const safe = stripUnsafeCharacters(c.content);
    let unsafe = safe !== c.content;
    if (unsafe) stats.unsafe_characters_removed++;
    // No secret is stored or shown to the dedup model: redacted first, dropped when nothing else is left.
    const red = redactSecrets(safe);
    if (red.onlySecret) {
      stats.secrets_dropped++;
      return undefined;
    }
    stats.redacted += red.total;
    addCounts(stats.redacted_kinds, red.counts);
    const v = validateContent(c.type, red.text);
    if (!v.ok) {
      stats.rejected++;
      stats.reasons[v.reason] = (stats.reasons[v.reason] ?? 0) + 1;
      return undefined;
    }
    if (v.trimmed) stats.trimmed++;
    stats.accepted++;
    const key = v.content.toLowerCase();
    if (seen.has(key) || alsoSeen?.has(key)) {
      stats.duplicates_in_batch++;
      return undefined;
    }
    const ns = opts.namespaces === "caller"
      ? { namespace: c.namespace, rewritten: false }
      : modelNamespace(c.namespace, opts.root, opts);
    if (ns.rewritten) stats.namespace_rewritten++;
    const { category, ...rest } = c;
    const out: Candidate = { ...rest, content: v.content, namespace: ns.namespace };
    // Its summary and compressed form go as the content does: unsafe characters removed, not refused
    // (a NUL in one made the job's payload a database error, naming nothing).
    // Counted as the content's are: a candidate once, whichever of its texts had them.
    for (const field of ["summary", "compressed"] as const) {
      const given = out[field];
      const stripped = given === undefined ? undefined : stripUnsafeCharacters(given);
      if (stripped !== given && !unsafe) {
        unsafe = true;
        stats.unsafe_characters_removed++;
      }
      out[field] = stripped?.trim() || undefined;
    }
    // The model's summary, compressed form and index key are stored and rendered too (metadata.compression).
    const fields = emptyTally();
    for (const field of ["summary", "compressed", "index_key"] as const) {
      const replaced = fields.total;
      const text = tallied(fields, out[field]);
      if (fields.total === replaced) continue;
      // An index key is one token: with a marker in it, it is no key any more.
      out[field] = field === "index_key" ? undefined : text;
    }
    // Its files become metadata.files and file entities: read as text, as remember's are; a path
    // that is nothing but a secret is dropped from the list.
    if (out.files) {
      const files = talliedList(fields, out.files);
      out.files = files.length > 0 ? files : undefined;
    }
    stats.redacted += fields.total;
    addCounts(stats.redacted_kinds, fields.counts);
    stats.secrets_dropped += fields.dropped;
    if (category && known.has(category)) out.category = category;
    else if (category) stats.category_dropped++;
    return out;
  };

  const kept: Candidate[] = [];
  for (const c of batch.stated) {
    const out = clean(c);
    if (!out) continue;
    seen.add(out.content.toLowerCase());
    kept.push(out);
  }
  for (const chunk of batch.proposed) {
    const valid: Candidate[] = [];
    const inChunk = new Set<string>();
    for (const raw of chunk) {
      const { candidate, demoted } = demoteModelCandidate(raw);
      if (demoted) stats.demoted++;
      const out = clean(candidate, inChunk);
      if (!out) continue;
      inChunk.add(out.content.toLowerCase());
      valid.push(out);
    }
    const ordered = valid
      .map((c, i) => ({ c, i }))
      .sort((a, b) =>
        PRIORITY_RANK[a.c.priority] - PRIORITY_RANK[b.c.priority] || b.c.importance - a.c.importance || a.i - b.i
      )
      .map((x) => x.c);
    for (const c of ordered.slice(0, cap)) seen.add(c.content.toLowerCase()); // only what is kept shadows later chunks
    kept.push(...ordered.slice(0, cap));
    stats.over_cap += Math.max(0, ordered.length - cap);
  }
  return { candidates: kept, stats };
}
