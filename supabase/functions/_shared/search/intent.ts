// What a query asks for, and how the hybrid search should look for it (docs/retrieval.md#intent).
//
//   why      reasons and causes     → follow supersede/derivation (later: causal) edges deeper
//   when     time                   → a time window from the text ("last week"), recency as a signal
//   who      people, owners         → exact names and handles (identifier terms), entity edges
//   what     definitions, facts     → exact terms, entity edges
//   how      procedures, commands   → procedural memories first
//   general  anything else
//
// The keyword classifier always runs (English; every cue is in INTENT_CUES below, in the order
// they are tried). When a neural embedder is configured, a query without a cue is classified by its
// nearest intent exemplars (intent-exemplars.ts). Complexity picks the default size of the answer:
// a short single question gets a small limit and budget, a long or multi-part one a larger limit,
// budget and graph depth; a request can override each.

import { COUNT, todayNamesTheDay, WORD_END, WORD_START } from "./time-window.ts";

export type Intent = "why" | "when" | "who" | "what" | "how" | "general";
export const INTENTS: readonly Intent[] = ["why", "when", "who", "what", "how", "general"];

/**
 * Cues per intent, tried in this order; the first intent with a matching cue wins. `when` comes
 * first because an explicit time ("what did we decide last week") matters more than the question
 * word; a bare "when" mid-sentence ("what happens when the build fails") is not a time question,
 * so only a leading "when" counts.
 */
export const INTENT_CUES: readonly (readonly [Exclude<Intent, "general">, RegExp])[] = [
  ["when", /^\s*(?:when|since when|what (?:date|day|time))\b/i],
  [
    "when",
    // Whole words of the sentence only (time-window.ts): "src/reports/today.ts" is a name.
    new RegExp(
      `${WORD_START}(?:yesterday|today|this (?:week|month)|last (?:week|month|year|time|(?:${COUNT}) (?:days?|weeks?|months?))|past (?:week|month|(?:${COUNT}) (?:days?|weeks?|months?))|(?:${COUNT}) (?:days?|weeks?|months?) ago|recently|most recent|latest|earlier this (?:week|month))${WORD_END}`,
      "iu",
    ),
  ],
  [
    "why",
    /^\s*why\b|\b(?:why (?:did|do|does|is|was|are|were)|reason(?:s|ing)? (?:for|behind|why)|rationale|what caused|root cause|motivation for|because of what)\b/i,
  ],
  [
    "who",
    /^\s*(?:who|whom|whose)\b|\b(?:who (?:owns|wrote|maintains|is responsible|decided|approved)|owner of|maintainer of|point of contact)\b/i,
  ],
  [
    "how",
    /^\s*how (?:do|does|did|can|should|to|would)\b|\b(?:how to|steps? (?:to|for)|procedure for|workflow for|what (?:command|commands) |which command|run the|set up|setup for|instructions for)\b/i,
  ],
  ["what", /^\s*(?:what|which)\b|\b(?:what is|what are|what's|definition of|meaning of)\b/i],
];

export interface IntentResult {
  intent: Intent;
  /** keyword: a cue matched; exemplar: nearest exemplars (neural embedder); default: neither. */
  by: "keyword" | "exemplar" | "default" | "request";
  /** The text that matched, for keyword classification. */
  cue?: string;
}

export function classifyIntentByKeywords(text: string): IntentResult {
  const probe = text.slice(0, 2000);
  for (const [intent, pattern] of INTENT_CUES) {
    const m = pattern.exec(probe);
    if (!m) continue;
    // A "today" that means "nowadays" is no time (time-window.ts): another time word may follow.
    if (/^today$/i.test(m[0]) && !todayNamesTheDay(probe, m.index)) {
      const later = pattern.exec(probe.slice(m.index + m[0].length));
      if (!later || /^today$/i.test(later[0])) continue;
      return { intent, by: "keyword", cue: later[0].trim() };
    }
    return { intent, by: "keyword", cue: m[0].trim() };
  }
  return { intent: "general", by: "default" };
}

export type Complexity = "simple" | "complex";

const MULTI_PART =
  /\b(?:and (?:also|then|why|how|when|what|which|who)|as well as|compare|comparison|difference between|relationship between|history of|all (?:the )?(?:decisions|changes|errors|places)|step by step|end to end)\b/i;

// A question that joins its parts ("the holiday and timezone handling", "checkout, from the
// session to the email") asks for several things even without a second question word: each part's
// answer is its own memory, which the score fusion of a complex question keeps (docs/retrieval.md#fusion).
// A comma between words, not inside a number ("1,000 rows"). On the eval: multi-hop recall@10 of the
// default plan 0.719 -> 0.746, no category lower (eval/README.md#results).
const JOINED_PARTS = /\band\b|,\s/i;

/** Long or multi-part questions are complex (and multi-hop ones usually are). */
export function classifyComplexity(text: string): Complexity {
  const words = text.trim().split(/\s+/).filter(Boolean).length;
  const questions = (text.match(/\?/g) ?? []).length;
  if (words >= 24 || questions >= 2 || (words >= 8 && (MULTI_PART.test(text) || JOINED_PARTS.test(text)))) {
    return "complex";
  }
  return "simple";
}

export interface SearchPlan {
  intent: Intent;
  complexity: Complexity;
  topK: number;
  budgetTokens: number;
  graphDepth: number;
  /** Relation types the graph signal follows; undefined = the search's default set. */
  graphEdgeTypes?: string[];
  preferMemoryTypes?: string[];
  /** Weight of the recency list in the fusion (0: none). */
  recencyWeight: number;
  /** Look the query's names up as entities (who/what). */
  entityLookup: boolean;
  /** Let the graph bring raw episodes in (when/why: time and provenance). */
  graphEpisodes: boolean;
}

/** Defaults by complexity (simple vs complex). */
export const COMPLEXITY_DEFAULTS: Readonly<
  Record<Complexity, { topK: number; budgetTokens: number; graphDepth: number }>
> = {
  // A simple question's answer is one memory the keyword and vector signals find directly; the
  // graph is for answers spread over several (complex), and for why and when (planSearch).
  simple: { topK: 5, budgetTokens: 1000, graphDepth: 0 },
  complex: { topK: 20, budgetTokens: 3000, graphDepth: 2 },
};

/**
 * Edges a reason lives on: what replaced what, what a fact was derived from, causes. Not `entity`:
 * a memory naming the same file is no reason (hybrid_search leaves that hop out for this list).
 */
export const WHY_EDGE_TYPES = ["supersedes", "derived_from", "causal", "related_to"];
/** Edges along time (not `entity`, as above). */
export const WHEN_EDGE_TYPES = ["temporal", "supersedes", "related_to"];

export function planSearch(intent: Intent, complexity: Complexity): SearchPlan {
  const base = COMPLEXITY_DEFAULTS[complexity];
  const plan: SearchPlan = { intent, complexity, ...base, recencyWeight: 0, entityLookup: false, graphEpisodes: false };
  switch (intent) {
    case "why":
      plan.graphDepth = Math.max(base.graphDepth + 1, 2);
      plan.graphEdgeTypes = WHY_EDGE_TYPES;
      plan.graphEpisodes = true;
      break;
    case "when":
      plan.graphDepth = Math.max(base.graphDepth, 1);
      plan.recencyWeight = 0.5;
      plan.graphEdgeTypes = WHEN_EDGE_TYPES;
      plan.graphEpisodes = true;
      break;
    case "who":
    case "what":
      plan.entityLookup = true;
      break;
    case "how":
      plan.preferMemoryTypes = ["procedural"];
      break;
  }
  return plan;
}

/**
 * The names in a query worth looking up as entities: identifiers (paths, package@versions,
 * snake_case, camelCase, ERR_CODES), @handles and "quoted names". At most 20.
 */
export function entityTermsOf(text: string): string[] {
  const out = new Set<string>();
  for (const m of text.slice(0, 2000).matchAll(/"([^"]{2,80})"/g)) out.add(m[1]!.trim());
  for (const m of text.slice(0, 2000).matchAll(/[A-Za-z0-9_@./:#$-]{3,100}/g)) {
    const t = m[0].replace(/^[.:/#-]+|[.:/#-]+$/g, "");
    if (
      t.length >= 3 && /[A-Za-z]/.test(t) &&
      (/[_@/$#]/.test(t) || /[A-Za-z0-9]\.[A-Za-z0-9]/.test(t) || /[A-Za-z][0-9]|[0-9][A-Za-z]/.test(t) ||
        /[a-z][A-Z]/.test(t) || /[A-Za-z0-9]-[A-Za-z0-9]/.test(t))
    ) {
      out.add(t);
    }
  }
  return [...out].slice(0, 20);
}
