// What context assembly and prediction read, as the tenant (RLS): the hybrid search (the one every
// reader uses, `public.hybrid_search`) for the message and the coding signals, a second one for
// the errors on screen, and `public.context_candidates` for the memories citing the open files,
// recorded on the branch, of the background categories, recent errors, open contradictions, and
// the details of everything found. docs/context.md.
import { type Sql, type TenantContext, type Tx, withTenant } from "../db.ts";
import { type Embedder, embedForCaller, thresholdsFor } from "../embeddings.ts";
import type { Config } from "../env.ts";
import { embeddingText } from "../search/exclusions.ts";
import { hybridSearch } from "../search/hybrid.ts";

/** Why a memory is a candidate (several refs when found for several reasons). */
export type CandidateKind =
  | "search"
  | "error"
  | "file"
  | "module"
  | "branch"
  | "background"
  | "recent_error"
  | "contradiction";

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
  /** Whether the search text has a message in it (else it is signal names: searched by keyword alone). */
  message?: boolean;
  /** Errors on screen: their own search. */
  errorText?: string;
  /** The file whose citing memories are wanted (the current file). */
  files?: string[];
  /**
   * Open files: their citing memories are looked up apart, so that however many of them the open
   * files have, they never take the current file's places (the lookup keeps the most important
   * CANDIDATES_PER_KIND of all the files it is given).
   */
  openFiles?: string[];
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
 * of keyword_min_coverage, three quarters of the model's cosine threshold. No graph hop: the
 * file, directory and branch lookups bring the neighbourhood, at a fraction of the cost. The
 * errors' search is by keyword alone (an error is its exact words and codes), and so is a search
 * without a message (the names of a file or branch).
 */
export const CONTEXT_KEYWORD_FLOOR = 0.1;
export const CONTEXT_VECTOR_FLOOR_SHARE = 0.75;

type CandidateRow = MemoryDetails & { kind: CandidateKind | "given"; detail: string | null; weight: number };

async function candidates(
  tx: Tx,
  input: GatherInput,
  given: readonly string[],
  lookups: boolean,
): Promise<CandidateRow[]> {
  return await tx<CandidateRow[]>`
    select * from public.context_candidates(
      match_namespaces => ${input.scopes}::text[],
      given_ids => ${[...given]}::uuid[],
      files => ${lookups && input.files?.length ? input.files : null}::text[],
      modules => ${lookups && input.modules?.length ? input.modules : null}::text[],
      branch => ${lookups ? input.branch ?? null : null}::text,
      background_categories => ${
    lookups && input.backgroundCategories?.length ? [...input.backgroundCategories] : null
  }::text[],
      recent_since => ${lookups ? input.recentSince ?? null : null}::timestamptz,
      contradictions => ${lookups && (input.contradictions ?? false)},
      max_per_kind => ${input.limit},
      match_owner => ${input.ownerId}::uuid)`;
}

/**
 * The searches and the lookups are independent reads: each runs in its own tenant transaction,
 * at the same time, then the details of the search hits the lookups did not bring are read.
 */
export async function gatherCandidates(
  sql: Sql,
  caller: TenantContext,
  deps: GatherDeps,
  input: GatherInput,
): Promise<Gathered> {
  const threshold = thresholdsFor(deps.embedder.model, deps.config as Config).retrieve * CONTEXT_VECTOR_FLOOR_SHARE;
  // Without a message the search text is the signals' names: their words are what to find. The
  // offline embedder's vectors are lexical (they mostly repeat what the keywords find,
  // docs/retrieval.md#quality-and-speed): assembly searches by keyword alone with it.
  const semantic = deps.embedder.provider !== "local";
  // Embedded without the message's exclusions, as memory-retrieve does: `-proxy` would pull the
  // memories about proxies closer (docs/retrieval.md#exclusions).
  const vector = input.searchText && input.message && semantic
    ? await embedForCaller({ sql, embedder: deps.embedder }, caller, embeddingText(input.searchText))
    : undefined;
  const search = (text: string, kind: "search" | "error") =>
    withTenant(sql, caller, (tx) =>
      hybridSearch(tx, {
        queryText: text,
        // A person's message says what to leave out; signal names and errors are searched literally.
        readsExclusions: kind === "search" && input.message === true,
        vector: kind === "search" ? vector : undefined,
        mode: kind === "search" && vector ? "hybrid" : "keyword",
        embeddingModel: deps.embedder.model,
        scopes: input.scopes,
        ownerId: input.ownerId,
        limit: input.limit,
        threshold,
        keywordThreshold: CONTEXT_KEYWORD_FLOOR,
        graphDepth: 0,
      }));
  const [hits, errorHits, looked] = await Promise.all([
    input.searchText ? search(input.searchText, "search") : [],
    // An error on screen is searched for what it says (`unknown option -verbose`): no exclusion.
    input.errorText ? search(input.errorText, "error") : [],
    withTenant(sql, caller, async (tx) => [
      ...await candidates(tx, input, input.givenIds ?? [], true),
      // The same lookup for the open files alone (files only), in the same transaction.
      ...(input.openFiles?.length
        ? await candidates(
          tx,
          { scopes: input.scopes, ownerId: input.ownerId, limit: input.limit, files: input.openFiles },
          [],
          true,
        )
        : []),
    ]),
  ]);
  const refs: CandidateRef[] = [
    ...hits.map((r) => ({ id: r.id, kind: "search" as const, weight: r.relevance })),
    ...errorHits.map((r) => ({
      id: r.id,
      kind: "error" as const,
      weight: r.relevance,
      coverage: r.keyword_coverage ?? 0,
    })),
  ];
  const details = new Map<string, MemoryDetails>();
  const take = (rows: readonly CandidateRow[]) => {
    for (const r of rows) {
      const { kind, detail, weight, ...memory } = r;
      if (!details.has(r.id)) details.set(r.id, { ...memory, cited_files: memory.cited_files ?? [] });
      if (kind !== "given") refs.push({ id: r.id, kind, weight, ...(detail != null ? { detail } : {}) });
    }
  };
  take(looked);
  const missing = [...new Set(refs.map((r) => r.id))].filter((id) => !details.has(id));
  if (missing.length > 0) take(await withTenant(sql, caller, (tx) => candidates(tx, input, missing, false)));
  // A search hit that is no longer visible (context_candidates applies the scope rules again) is dropped.
  return {
    refs: refs.filter((r) => details.has(r.id)),
    details,
    searches: (input.searchText ? 1 : 0) + (input.errorText ? 1 : 0),
  };
}
