// How each coding signal turns into lookups (docs/context.md#signals), the same for context/predict
// (one signal at a time, cached per session) and context/assemble (the signals no fresh
// prediction covers, looked up together):
//   file opened / current file   memories citing it (critical) and citing its directory's files,
//                                and a search for its path and name
//   branch checked out           memories recorded on it, and a search for its name's words
//   errors on screen             a search for their text (exact codes and identifiers first) and
//                                the error memories of the last 24 hours
import type { Embedder } from "../embeddings.ts";
import type { Config } from "../env.ts";
import type { Sql } from "../db.ts";
import { type CandidateRef, type GatherInput, nameWords } from "./gather.ts";
import { branchKey, errorKey, fileKey, type SignalKey } from "./prefetch.ts";

export const RECENT_ERROR_HOURS = 24;
/** Candidates per search and per lookup kind. */
export const CANDIDATES_PER_KIND = 30;

export interface ContextDeps {
  sql: Sql;
  config: Config;
  embedder: Embedder;
  clock: () => Date;
  /** Runs work after the answer (a stale prefetch's refresh): EdgeRuntime.waitUntil on Supabase. */
  defer?: (work: Promise<unknown>) => void;
}

export type CodingSignal =
  | { kind: "file"; file: string }
  | { kind: "branch"; branch: string }
  | { kind: "error"; errors: readonly string[] };

export function signalKey(s: CodingSignal): SignalKey {
  return s.kind === "file" ? fileKey(s.file) : s.kind === "branch" ? branchKey(s.branch) : errorKey(s.errors);
}

/** Since when error memories count as recent. */
export function recentErrorsSince(now: Date): Date {
  return new Date(now.getTime() - RECENT_ERROR_HOURS * 3_600_000);
}

export function directoryOf(file: string): string | undefined {
  const i = file.lastIndexOf("/");
  return i > 0 ? file.slice(0, i) : undefined;
}

/** The part of a search text a signal contributes (errors have their own search). */
export function signalSearchText(s: CodingSignal): string | undefined {
  // A name is searched for what it says (hybridSearch reads it literally; after a message,
  // retrievalText does).
  if (s.kind === "file") return `${s.file} ${nameWords(s.file)}`;
  if (s.kind === "branch") return nameWords(s.branch) || undefined;
  return undefined;
}

/** The lookups of some signals, merged into one gather (beside what the caller adds: message, background). */
export function lookupsOf(
  signals: readonly CodingSignal[],
  now: Date,
): Pick<GatherInput, "files" | "modules" | "branch" | "errorText" | "recentSince"> {
  const out: ReturnType<typeof lookupsOf> = {};
  for (const s of signals) {
    if (s.kind === "file") {
      out.files = [...(out.files ?? []), s.file];
      const dir = directoryOf(s.file);
      if (dir) out.modules = [...(out.modules ?? []), dir];
    } else if (s.kind === "branch") {
      out.branch = s.branch;
    } else {
      out.errorText = s.errors.join("\n");
      out.recentSince = recentErrorsSince(now);
    }
  }
  return out;
}

/**
 * Confidence of a prediction: the mean match strength of its five best memories (1 for an exact
 * citation of the file, the fused relevance for a search hit, the share of the error an error
 * hit names), 0 when nothing is predicted.
 */
export function predictionConfidence(refs: readonly CandidateRef[]): number {
  const best = new Map<string, number>();
  for (const r of refs) {
    if (r.kind === "background") continue;
    const strength = Math.max(r.weight, r.coverage ?? 0);
    best.set(r.id, Math.max(best.get(r.id) ?? 0, strength));
  }
  const top = [...best.values()].sort((a, b) => b - a).slice(0, 5);
  if (top.length === 0) return 0;
  return Math.round((top.reduce((s, x) => s + x, 0) / top.length) * 1000) / 1000;
}
