// From a retrieval request to what the hybrid search is asked: intent, complexity, limit, budget,
// graph depth, time window (docs/retrieval.md). Shared by memory-retrieve and memory.query so both
// read requests the same way.
import type { Embedder } from "../embeddings.ts";
import { HttpError, invalidBody } from "../http.ts";
import {
  classifyComplexity,
  classifyIntentByKeywords,
  type Complexity,
  entityTermsOf,
  type Intent,
  type IntentResult,
  planSearch,
  type SearchPlan,
} from "./intent.ts";
import { classifyByExemplars } from "./intent-exemplars.ts";
import type { SearchMode, SearchSteering } from "./hybrid.ts";
import { withoutExclusions } from "./exclusions.ts";
import { inTimeRange, resolveTime, TIME_FORMS, type TimeWindow, windowFromText } from "./time-window.ts";

export interface PlanRequest {
  text: string;
  intent?: Intent;
  after?: string;
  before?: string;
  /** The request's "now" (ISO), for relative times; default the server's clock. */
  now?: string;
  graph_depth?: number;
}

export interface ResolvedPlan {
  plan: SearchPlan;
  /** The names the query asks about, looked up as entities (who/what); empty otherwise. */
  entityTerms: string[];
  intent: IntentResult;
  complexity: Complexity;
  window?: TimeWindow;
  now: Date;
}

/**
 * The text the keyword signal searches: without the words that set a time window ("last week" is
 * when, not what, so a memory needs not contain it).
 */
export function keywordText(text: string, resolved: Pick<ResolvedPlan, "window">): string {
  const w = resolved.window;
  if (w?.from !== "query_text" || w.phrase === undefined || w.index === undefined) return text;
  // At the place the words were read (the same words inside a name earlier on stay).
  return `${text.slice(0, w.index)} ${text.slice(w.index + w.phrase.length)}`.replace(/\s+/g, " ").trim();
}

/** What the resolved plan and the request steer in the search: alike for memory-retrieve and memory.query. */
export function steeringOf(
  resolved: ResolvedPlan,
  req: { mode?: SearchMode; keyword_threshold?: number; as_of?: string },
): SearchSteering {
  const { plan } = resolved;
  return {
    mode: req.mode ?? "hybrid",
    graphDepth: plan.graphDepth,
    graphEdgeTypes: plan.graphEdgeTypes,
    after: resolved.window?.after,
    before: resolved.window?.before,
    preferMemoryTypes: plan.preferMemoryTypes,
    recencyWeight: plan.recencyWeight,
    keywordThreshold: req.keyword_threshold,
    asOf: req.as_of,
    entityTerms: resolved.entityTerms,
    graphEpisodes: plan.graphEpisodes,
    complexity: resolved.complexity,
  };
}

/** A `now` every relative form resolves within the range from: one that fails there is no time at all. */
const ORDINARY_NOW = new Date("2000-01-01T00:00:00Z");

function badTime(field: string, value: string, now: Date): HttpError {
  // A form the service reads, resolved outside the range from this request's `now` (last_week of
  // 1970-01-05), says so rather than that it is no time.
  const message = resolveTime(value, ORDINARY_NOW)
    ? `'${value.slice(0, 60)}' resolves, from now (${now.toISOString()}), outside 1970-01-01 to 9999-12-31`
    : `'${value.slice(0, 60)}' is not a time: use ${TIME_FORMS}`;
  return invalidBody([
    { path: [field], message, code: "invalid_time" },
  ]);
}

/** The time window a request asks for; 400 naming the field when a value cannot be read. */
export function requestWindow(req: Pick<PlanRequest, "after" | "before">, now: Date): TimeWindow | undefined {
  if (req.after === undefined && req.before === undefined) return undefined;
  const after = req.after !== undefined ? resolveTime(req.after, now) : undefined;
  if (req.after !== undefined && !after) throw badTime("after", req.after, now);
  const before = req.before !== undefined ? resolveTime(req.before, now) : undefined;
  if (req.before !== undefined && !before) throw badTime("before", req.before, now);
  if (after && before && after.getTime() > before.getTime()) {
    throw invalidBody([
      {
        path: ["after"],
        message: `after (${after.toISOString()}) is later than before (${before.toISOString()})`,
        code: "invalid_window",
      },
    ]);
  }
  return { after, before, from: "request" };
}

/**
 * Classifies the query (keyword cues; nearest exemplars for a neural embedder when no cue fires)
 * and plans the search. The vector is the query's embedding, already computed for the search.
 */
export async function resolvePlan(
  req: PlanRequest,
  embedder: Embedder,
  vector: readonly number[] | undefined,
  clock: () => Date,
): Promise<ResolvedPlan> {
  const now = req.now ? new Date(req.now) : clock();
  if (req.now && !inTimeRange(now)) {
    // Relative times are resolved against it: out of range, none of them could be.
    throw invalidBody([
      { path: ["now"], message: "now must be a date-time from 1970-01-01 to 9999-12-31", code: "invalid_time" },
    ]);
  }
  const window = requestWindow(req, now);
  // Time words and cues are read outside the exclusions (`-"last week"` sets no window).
  const sentence = withoutExclusions(req.text);
  let intent: IntentResult;
  if (req.intent) {
    intent = { intent: req.intent, by: "request" };
  } else {
    intent = classifyIntentByKeywords(sentence);
    if (intent.by === "default" && vector) {
      const nearest = await classifyByExemplars(vector, embedder).catch(() => undefined);
      if (nearest) intent = { intent: nearest, by: "exemplar" };
    }
  }
  const complexity = classifyComplexity(req.text);
  const plan = planSearch(intent.intent, complexity);
  if (req.graph_depth !== undefined) plan.graphDepth = req.graph_depth;
  plan.graphDepth = Math.min(plan.graphDepth, 4);
  const textWindow = !window && intent.intent === "when" ? windowFromText(sentence, now) : undefined;
  const entityTerms = plan.entityLookup ? entityTermsOf(req.text) : [];
  return { plan, entityTerms, intent, complexity, window: window ?? textWindow, now };
}
