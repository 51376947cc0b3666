// What context assembly and prediction read, in the caller's tenant transaction (RLS): the hybrid
// search (the one every reader uses, `public.hybrid_search`) for the message and the coding
// signals, a second one for the errors on screen, and one call of `public.context_candidates`
// for the memories citing the open files, recorded on the branch, of the background categories,
// recent errors, open contradictions, and the details of everything found. docs/context.md.
import type { Tx } from "../db.ts";
import { type Embedder, embedForRequest, thresholdsFor } from "../embeddings.ts";
import type { Config } from "../env.ts";
import { hybridSearch } from "../search/hybrid.ts";

/** Why a memory is a candidate (several refs when found for several reasons). */
export type CandidateKind = "search" | "error" | "file" | "module" | "branch" | "background" | "recent_error" | "contradiction";

export interface CandidateRef {
  id: string;
  kind: CandidateKind;
  /** 0..1: the search's fused relevance, or the lookup's fixed weight (context_candidates). */
  weight: number;
  /** The file, directory, branch or category it matched; for a contradiction the other side's id. */
  detail?: string;
  /** Keyword coverage of an error search hit (how much of the error it names). */
  coverage?: number;
}

/** A candidate memory as context_candidates returns it. */
export interface MemoryDetails {
  id: string;
  content: string;
  memory_type: string;
  namespace: string;
  strength: number;
  priority: string;
  importance: number;
  pinned: boolean;
  source: string | null;
  metadata: Record<string, unknown>;
  created_at: Date;
  category: string | null;
  max_relation_strength: number | null;
  cited_files: string[];
  retrieval_count: number;
  citation_count: number;
  ignore_count: number;
}

export interface GatherInput {
  scopes: string[];
  ownerId: string;
  /** The relevant search's text (message + signal words); none: no search. */
  searchText?: string;
  /** Errors on screen: their own search. */
  errorText?: string;
  /** Files whose citing memories are wanted (the current file first, then open ones). */
  files?: string[];
  /** Directories whose files' citing memories are wanted. */
  modules?: string[];
  branch?: string;
  backgroundCategories?: readonly string[];
  recentSince?: Date;
  contradictions?: boolean;
  /** Ids already known (a prefetch): their details are loaded too. */
  givenIds?: readonly string[];
  /** Candidates per search and per lookup kind. */
  limit: number;
}

export interface Gathered {
  refs: CandidateRef[];
  details: Map<string, MemoryDetails>;
  /** How many hybrid searches ran (0 when everything came from a prefetch). */
  searches: number;
}

export interface GatherDeps {
  embedder: Embedder;
  config: Pick<Config, "retrieval" | "dedupThreshold">;
}

/** Words of a path or branch name, for the search text: `src/auth/login.ts` → `src auth login ts`. */
export function nameWords(name: string): string {
  return name.split(/[/._\-\s]+/).filter((w) => w.length > 1).join(" ");
}

/**
 * Assembly searches with lower floors than retrieval (whose block must answer the question): a
 * context holds what is probably relevant, ranked, within a budget. Keyword coverage 0.1 instead
 * of keyword_min_coverage, three quarters of the model's cosine threshold.
 */
export const CONTEXT_KEYWORD_FLOOR = 0.1;
export const CONTEXT_VECTOR_FLOOR_SHARE = 0.75;

export async function gatherCandidates(tx: Tx, deps: GatherDeps, input: GatherInput): Promise<Gathered> {
  const threshold = thresholdsFor(deps.embedder.model, deps.config as Config).retrieve * CONTEXT_VECTOR_FLOOR_SHARE;
  const texts = [input.searchText, input.errorText];
  const vectors = await Promise.all(texts.map((t) => (t ? embedForRequest(deps.embedder, t) : undefined)));
  const refs: CandidateRef[] = [];
  let searches = 0;
  for (const [i, text] of texts.entries()) {
    if (!text) continue;
    searches++;
    const rows = await hybridSearch(tx, {
      queryText: text,
      vector: vectors[i],
      embeddingModel: deps.embedder.model,
      scopes: input.scopes,
      ownerId: input.ownerId,
      limit: input.limit,
      threshold,
      keywordThreshold: CONTEXT_KEYWORD_FLOOR,
      graphDepth: 1,
    });
    for (const r of rows) {
      refs.push(i === 0
        ? { id: r.id, kind: "search", weight: r.relevance }
        : { id: r.id, kind: "error", weight: r.relevance, coverage: r.keyword_coverage ?? 0 });
    }
  }

  const given = [...new Set([...refs.map((r) => r.id), ...(input.givenIds ?? [])])];
  const rows = await tx<(MemoryDetails & { kind: CandidateKind | "given"; detail: string | null; weight: number })[]>`
    select * from public.context_candidates(
      match_namespaces => ${input.scopes}::text[],
      given_ids => ${given}::uuid[],
      files => ${input.files?.length ? input.files : null}::text[],
      modules => ${input.modules?.length ? input.modules : null}::text[],
      branch => ${input.branch ?? null}::text,
      background_categories => ${input.backgroundCategories?.length ? [...input.backgroundCategories] : null}::text[],
      recent_since => ${input.recentSince ?? null}::timestamptz,
      contradictions => ${input.contradictions ?? false},
      max_per_kind => ${input.limit},
      match_owner => ${input.ownerId}::uuid)`;
  const details = new Map<string, MemoryDetails>();
  for (const r of rows) {
    const { kind, detail, weight, ...memory } = r;
    if (!details.has(r.id)) details.set(r.id, { ...memory, cited_files: memory.cited_files ?? [] });
    if (kind !== "given") refs.push({ id: r.id, kind, weight, ...(detail != null ? { detail } : {}) });
  }
  // A search hit that is no longer visible (context_candidates applies the scope rules again) is dropped.
  return { refs: refs.filter((r) => details.has(r.id)), details, searches };
}
