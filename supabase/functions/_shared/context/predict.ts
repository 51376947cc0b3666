// context/predict (docs/context.md#prefetch): what the developer will need, from one coding signal
// before they ask (a file opened, a branch checked out, an error on screen). With a session_id the
// prediction is cached per signal, and the session's next context/assemble is served from it
// while fresh.
import type { Caller } from "../auth.ts";
import { withTenant } from "../db.ts";
import { retrievalScopes } from "../scopes.ts";
import { type CandidateRef, gatherCandidates, type Gathered, type MemoryDetails } from "./gather.ts";
import { writePrefetch } from "./prefetch.ts";
import { type Activity, type LineageSignals, PREDICT_LIMIT, type PredictRequest, type Signals } from "./schemas.ts";
import { type ScoredCandidate, selectTiers } from "./select.ts";
import { judgeMemory } from "./lineage.ts";
import {
  CANDIDATES_PER_KIND,
  type CodingSignal,
  type ContextDeps,
  lookupsOf,
  predictionConfidence,
  signalKey,
  signalSearchText,
} from "./signals.ts";

export interface PredictedMemory {
  id: string;
  /** The tier assembly would put it in. */
  tier: "critical" | "relevant";
  tag?: string;
  index_key: string;
  summary: string;
  score: number;
  /** Why it was predicted: file, module, branch, search, error, recent_error. */
  kinds: string[];
}

export interface PredictResponse {
  predicted_memories: PredictedMemory[];
  /** 0..1: the mean match strength of the best predictions (signals.ts). */
  confidence: number;
  /** The signals predicted for, as cache keys (file:<path>, branch:<name>, error:<digest>). */
  signals: string[];
  /** True when the prediction was cached for session_id. */
  cached: boolean;
}

const round = (x: number) => Math.round(x * 10_000) / 10_000;

/** The candidates of one signal (a search and the lookups). */
export async function gatherSignal(
  deps: ContextDeps,
  caller: Caller,
  scopes: string[],
  signal: CodingSignal,
  now: Date,
): Promise<Gathered> {
  return await gatherCandidates(deps.sql, caller, deps, {
    scopes,
    ownerId: caller.tenantId,
    limit: CANDIDATES_PER_KIND,
    searchText: signalSearchText(signal),
    ...lookupsOf([signal], now),
  });
}

/**
 * What is cached for a signal: everything it found, whatever the lineage. Which notes are facts
 * is the assembly's to judge (selectTiers), with the lineage it is sent: a branch merged since the
 * prediction makes its notes project knowledge, and one still unmerged is listed in `excluded`.
 */
function cachedRefs(g: Gathered): CandidateRef[] {
  return g.refs.filter((r) => g.details.has(r.id));
}

/** A signal's gathered refs minus the memories lineage leaves out: what is predicted for it. */
export function keptRefs(g: Gathered, signals: Signals): CandidateRef[] {
  // The check selectTiers makes per memory, without scoring and compressing every candidate.
  return g.refs.filter((r) => {
    const d = g.details.get(r.id);
    return d !== undefined && !judgeMemory(r.id, d.metadata, d.cited_files, signals).excluded;
  });
}

/**
 * What a prediction answers from the kept refs of its signals: the memories assembly would put
 * in its critical and relevant tiers, in their order, at most `limit`.
 */
function rankPredictions(
  refs: readonly CandidateRef[],
  details: ReadonlyMap<string, MemoryDetails>,
  signals: Signals,
  activity: Activity | undefined,
  limit: number,
): ScoredCandidate[] {
  const selection = selectTiers({ refs, details, signals, activity });
  return [...selection.critical, ...selection.relevant].slice(0, limit).map((c) => selection.scored.get(c.id)!);
}

/** Recomputes and re-caches one signal's prediction (the lazy refresh of a stale prefetch). */
export async function refreshPrefetch(
  deps: ContextDeps,
  caller: Caller,
  sessionId: string,
  project: string | undefined,
  signal: CodingSignal,
  lineage: LineageSignals,
): Promise<void> {
  const now = deps.clock();
  const scopes = retrievalScopes(deps.config.namespaceRoot, project);
  const g = await gatherSignal(deps, caller, scopes, signal, now);
  const kept = keptRefs(g, lineage);
  // Predicted as a predict of this signal with the default limit would (prediction accuracy counts these).
  const activity = signal.kind === "error" ? "debugging" : undefined;
  const predicted = rankPredictions(kept, g.details, lineage, activity, PREDICT_LIMIT).map((s) => s.id);
  const confidence = predictionConfidence(kept);
  await withTenant(
    deps.sql,
    caller,
    (tx) => writePrefetch(tx, { sessionId, project }, signalKey(signal), cachedRefs(g), predicted, confidence, now),
  );
}

export async function predictContext(
  deps: ContextDeps,
  caller: Caller,
  body: PredictRequest,
): Promise<PredictResponse> {
  const now = deps.clock();
  const scopes = retrievalScopes(deps.config.namespaceRoot, body.project);
  const signals: CodingSignal[] = [
    ...(body.file_opened !== undefined ? [{ kind: "file" as const, file: body.file_opened }] : []),
    ...(body.branch !== undefined ? [{ kind: "branch" as const, branch: body.branch }] : []),
    ...(body.error !== undefined ? [{ kind: "error" as const, errors: [body.error] }] : []),
  ];
  const lineage: Signals = {
    ...body.signals,
    branch: body.signals?.branch ?? body.branch,
    current_file: body.file_opened,
    ...(body.error !== undefined ? { recent_errors: [body.error] } : {}),
  };
  const gathered = await Promise.all(signals.map((signal) => gatherSignal(deps, caller, scopes, signal, now)));
  return await withTenant(deps.sql, caller, async (tx) => {
    const details = new Map<string, MemoryDetails>();
    gathered.forEach((g) => g.details.forEach((d, id) => details.set(id, d)));
    const kept = gathered.map((g) => keptRefs(g, lineage));
    const refs = kept.flat();
    const activity = body.error !== undefined ? "debugging" : undefined;
    const ranked = rankPredictions(refs, details, lineage, activity, body.limit);
    if (body.session_id) {
      const owner = { sessionId: body.session_id, project: body.project };
      for (const [i, g] of gathered.entries()) {
        // Each signal's row records which of its memories this answer predicted.
        const mine = new Set(kept[i]!.map((r) => r.id));
        const predictedIds = ranked.filter((s) => mine.has(s.id)).map((s) => s.id);
        const confidence = predictionConfidence(kept[i]!);
        await writePrefetch(tx, owner, signalKey(signals[i]!), cachedRefs(g), predictedIds, confidence, now);
      }
    }
    const predicted = ranked.map((s) => ({
      id: s.id,
      tier: s.tier === "critical" ? "critical" as const : "relevant" as const,
      ...(s.tag ? { tag: s.tag } : {}),
      index_key: s.forms.index,
      summary: s.forms.summary,
      score: round(s.score),
      kinds: s.kinds,
    }));
    await tx`
      insert into public.memory_events (owner_id, node, op, status, meta)
      values (${caller.tenantId}::uuid, 'context', 'search', 'ok',
              ${
      tx.json({
        mode: "predict",
        signals: signals.map((s) => s.kind),
        predicted: predicted.length,
        cached: body.session_id !== undefined,
        project: body.project ?? null,
      } as never)
    })`;
    return {
      predicted_memories: predicted,
      confidence: predictionConfidence(refs.filter((r) => predicted.some((p) => p.id === r.id))),
      signals: signals.map(signalKey),
      cached: body.session_id !== undefined,
    };
  });
}
