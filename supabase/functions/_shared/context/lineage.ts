// Code lineage (docs/context.md#code-lineage): whose notes are facts on the branch the client is
// on, and which memories cite files that no longer exist. Pure functions over a memory's metadata
// (repo, branch, commit, files) and the client's lineage signals; retrieval and context assembly
// both apply them, so a note is judged the same way everywhere.
import type { EntityLink } from "../entities.ts";
import { redactSecrets } from "../redact.ts";
import type { CodeOrigin } from "../schemas.ts";
import { storedCompression } from "./compress.ts";
import type { LineageSignals } from "./schemas.ts";

/** Where a memory came from, as its metadata records it. */
export interface MemoryLineage {
  repo?: string;
  branch?: string;
  commit?: string;
}

/**
 * How a memory stands on the client's branch:
 *   project         recorded on no branch, or on the default branch: project knowledge
 *   current_branch  recorded on the branch checked out: preferred (LINEAGE_BOOST)
 *   merged          its branch is in merged_branches, or its commit in ancestor_commits
 *   unmerged        another branch's work in progress: never injected as fact
 */
export type LineageVerdict = "project" | "current_branch" | "merged" | "unmerged";

/** A memory of the branch checked out ranks this much higher (its history is what the developer works on). */
export const LINEAGE_BOOST = 1.2;
const DEFAULT_BRANCHES = ["main", "master"];
/** The shortest abbreviated commit id matched against ancestor_commits (git's own default abbreviation). */
const MIN_COMMIT_PREFIX = 7;

const str = (v: unknown): string | undefined => (typeof v === "string" && v.length > 0 ? v : undefined);

export function lineageOf(metadata: Record<string, unknown> | null | undefined): MemoryLineage {
  const m = metadata ?? {};
  return { repo: str(m.repo), branch: str(m.branch), commit: str(m.commit)?.toLowerCase() };
}

/** `https://github.com/Acme/Web.git`, `git@github.com:acme/web` and `acme/web` are one repository. */
export function sameRepo(a: string, b: string): boolean {
  const norm = (r: string) =>
    r.toLowerCase().replace(/^[a-z+]+:\/\//, "").replace(/^[^@/]+@/, "").replace(/\.git$/, "").replace(":", "/")
      .replace(/\/+$/, "");
  const x = norm(a), y = norm(b);
  return x === y || x.endsWith(`/${y}`) || y.endsWith(`/${x}`);
}

function commitMerged(commit: string, ancestors: readonly string[]): boolean {
  return ancestors.some((a) => {
    const n = Math.min(a.length, commit.length);
    return n >= MIN_COMMIT_PREFIX && a.slice(0, n) === commit.slice(0, n);
  });
}

export function judgeLineage(memory: MemoryLineage, signals: LineageSignals = {}): LineageVerdict {
  if (!memory.branch) return "project";
  const defaults = signals.default_branch ? [signals.default_branch] : DEFAULT_BRANCHES;
  const otherRepo = memory.repo !== undefined && signals.repo !== undefined && !sameRepo(memory.repo, signals.repo);
  // Another repository's branch names say nothing about this one: only its default branch counts.
  if (otherRepo) return defaults.includes(memory.branch) ? "project" : "unmerged";
  if (signals.branch !== undefined && memory.branch === signals.branch) {
    return defaults.includes(memory.branch) ? "project" : "current_branch";
  }
  if (defaults.includes(memory.branch)) return "project";
  if (signals.merged_branches?.includes(memory.branch)) return "merged";
  if (memory.commit && signals.ancestor_commits && commitMerged(memory.commit, signals.ancestor_commits)) {
    return "merged";
  }
  return "unmerged";
}

export type StaleCitation = { file: string; reason: "deleted" } | { file: string; reason: "renamed"; to: string };

/**
 * The first cited file the client reports deleted or renamed (in the order of `files`), if any.
 * The cited file is the memory's, stored redacted; the new name is the client's, shown in the
 * context's stale note and in `excluded`: redacted as a stored file name is (docs/redaction.md),
 * so a token in it never reaches the model.
 */
export function staleCitation(files: readonly string[], signals: LineageSignals = {}): StaleCitation | undefined {
  if (!signals.deleted_files?.length && !signals.renamed_files?.length) return undefined;
  const deleted = new Set(signals.deleted_files ?? []);
  const renamed = new Map((signals.renamed_files ?? []).map((r) => [r.from, r.to]));
  for (const raw of files) {
    const file = raw.replace(/^(\.\/)+/, "");
    if (deleted.has(file)) return { file, reason: "deleted" };
    const to = renamed.get(file);
    if (to !== undefined) return { file, reason: "renamed", to: redactSecrets(to).text };
  }
  return undefined;
}

/** Why a memory is left out of a context or a retrieval block (reported in the response). */
export interface Excluded {
  id: string;
  reason: "unmerged_branch" | "stale_file";
  branch?: string;
  stale?: StaleCitation;
}

/**
 * One memory against the client's lineage signals: its verdict, and why it is left out, if it is
 * (another branch's unmerged work, or a citation of a file deleted or renamed since).
 */
export function judgeMemory(
  id: string,
  metadata: Record<string, unknown> | null | undefined,
  citedFiles: readonly string[],
  signals: LineageSignals = {},
): { lineage: LineageVerdict; excluded?: Excluded } {
  const origin = lineageOf(metadata);
  const lineage = judgeLineage(origin, signals);
  if (lineage === "unmerged") return { lineage, excluded: { id, reason: "unmerged_branch", branch: origin.branch } };
  const stale = staleCitation(citedFiles, signals);
  return stale ? { lineage, excluded: { id, reason: "stale_file", stale } } : { lineage };
}

/** The files a memory's metadata cites (metadata.files), leading ./ dropped. */
export function filesOf(metadata: Record<string, unknown> | null | undefined): string[] {
  const files = metadata?.files;
  return Array.isArray(files)
    ? files.filter((f): f is string => typeof f === "string").map((f) => f.replace(/^(\.\/)+/, "")).filter(Boolean)
    : [];
}

/** Entity names are at most this long (memory_entities); a longer path stays in metadata.files only. */
const MAX_ENTITY_NAME = 200;

/** Files a memory's metadata says it cites, as file entity links (so context assembly finds the memory by its files). */
export function citedFileLinks(memoryId: string, files: readonly string[] | undefined): EntityLink[] {
  return [...new Set(files ?? [])]
    .filter((file) => file.length <= MAX_ENTITY_NAME)
    .map((file) => ({ memoryId, name: file, type: "file" as const, mention: file, source: "api" as const }));
}

/**
 * What the write path records for living context in a new memory's metadata: the request's code
 * lineage, the files the candidate is about, and the model's compression forms, which describe
 * the candidate's own words (a merged text, dedup's UPDATE, gets the offline ones).
 */
export function contextMetadata(
  candidate: { content: string; files?: string[]; summary?: string; compressed?: string; index_key?: string },
  content: string,
  lineage?: CodeOrigin,
): Record<string, unknown> {
  const compression = content === candidate.content ? storedCompression(content, candidate) : undefined;
  return {
    ...lineage,
    ...(candidate.files?.length ? { files: candidate.files } : {}),
    ...(compression ? { compression } : {}),
  };
}
