// context/assemble (docs/context.md): a context of at most `budget` tokens in four tiers, filled
// from the coding signals, the message and the project's conventions, each memory at the
// compression level its tier can afford. As the tenant (RLS) throughout:
//   1. the session's cached predictions for the request's signals (prefetch.ts): fresh or stale
//      ones stand in for their signal's lookups;
//   2. one gather (gather.ts): the relevant search (message + the uncached signals' words), the
//      error search and the lookups at the same time, then every candidate's details;
//   3. lineage and staleness, tiers and ranks (select.ts); packing (pack-tiers.ts) and text (render.ts);
//   4. record_context_assembly, after the answer: the critical and relevant memories reinforced,
//      the session's injections, one event.
// A stale prediction is refreshed after the answer (ContextDeps.defer).
import type { Caller } from "../auth.ts";
import { withTenant } from "../db.ts";
import { retrievalScopes } from "../scopes.ts";
import { retrievalText } from "../search/exclusions.ts";
import { gatherCandidates } from "./gather.ts";
import { type PackedContext, packTiers, type PlacedMemory, type TierReport } from "./pack-tiers.ts";
import { type CachedPrediction, type Freshness, readPrefetch } from "./prefetch.ts";
import { refreshPrefetch } from "./predict.ts";
import type { AssembleRequest, Signals } from "./schemas.ts";
import { type Excluded, type Selection, selectTiers } from "./select.ts";
import {
  CANDIDATES_PER_KIND,
  type CodingSignal,
  type ContextDeps,
  lookupsOf,
  recentErrorsSince,
  signalKey,
  signalSearchText,
} from "./signals.ts";
import { ACTIVITY_CATEGORIES, BACKGROUND_CATEGORIES, sharesFor, type Tier } from "./tiers.ts";
import type { LineageVerdict } from "./lineage.ts";
import type { Level } from "./compress.ts";

export interface AssembledMemory {
  id: string;
  tier: Tier;
  level: Level;
  /** Exact tokens of its bullet, its share of a contradiction's (of its key for an index pointer). */
  tokens: number;
  tag?: string;
  index_key: string;
  score: number;
  /** Why it is a candidate: search, error, file, module, branch, background, recent_error, contradiction. */
  kinds: string[];
  lineage: LineageVerdict;
  /** Which forms came from a model (llm), the offline compressor (rules), or both (mixed). */
  compression: "llm" | "rules" | "mixed";
  shortened?: true;
  stale?: PlacedMemory["stale"];
}

export interface AssembleResponse {
  context: string;
  token_count: number;
  budget: number;
  activity: string | null;
  tiers: Record<Tier, TierReport>;
  memories: AssembledMemory[];
  /** Left out: another branch's unmerged notes, and memories citing deleted or renamed files (flagged in the index). */
  excluded: Excluded[];
  /**
   * Found and left out otherwise: candidates that fit nowhere, not even as an index pointer, and
   * memories found only as the other side of a contradiction that is not shown.
   */
  omitted: number;
  prefetch: { status: "none" | "miss" | Freshness | "partial"; signals: Record<string, Freshness | "miss"> };
}

const round = (x: number) => Math.round(x * 10_000) / 10_000;

/** The signals of a request that prediction caches (current file, branch, errors). */
export function codingSignalsOf(s: Signals): CodingSignal[] {
  return [
    ...(s.current_file !== undefined ? [{ kind: "file" as const, file: s.current_file }] : []),
    ...(s.branch !== undefined ? [{ kind: "branch" as const, branch: s.branch }] : []),
    ...(s.recent_errors?.length ? [{ kind: "error" as const, errors: s.recent_errors }] : []),
  ];
}

/** Each placed memory with what the response says about it. */
function describe(packed: PackedContext, selection: Selection): AssembledMemory[] {
  return packed.placed.map((p) => {
    const s = selection.scored.get(p.id);
    const forms = s?.forms ?? selection.stale.find((x) => x.id === p.id)!.forms;
    return {
      id: p.id,
      tier: p.tier,
      level: p.level,
      tokens: p.tokens,
      ...(p.tag ? { tag: p.tag } : {}),
      index_key: forms.index,
      score: round(s?.score ?? 0),
      kinds: s?.kinds ?? [],
      lineage: s?.lineage ?? "project",
      compression: forms.by,
      ...(p.shortened ? { shortened: true as const } : {}),
      ...(p.stale ? { stale: p.stale } : {}),
    };
  });
}

export async function assembleContext(
  deps: ContextDeps,
  caller: Caller,
  body: AssembleRequest,
): Promise<AssembleResponse> {
  const now = deps.clock();
  const signals = body.signals ?? {};
  const activity = signals.activity;
  const scopes = retrievalScopes(deps.config.namespaceRoot, body.project);
  const coding = codingSignalsOf(signals);

  // 1. The session's predictions for these signals, in this project.
  const owner = { sessionId: body.session_id!, project: body.project };
  const cached = body.session_id
    ? await withTenant(deps.sql, caller, (tx) => readPrefetch(tx, owner, coding.map(signalKey), now))
    : new Map<string, CachedPrediction>();
  const served = (s: CodingSignal) => {
    const c = cached.get(signalKey(s));
    return c && c.freshness !== "expired" ? c : undefined;
  };
  const uncached = coding.filter((s) => !served(s));
  const stale = coding.filter((s) => served(s)?.freshness === "stale");
  const servedRefs = coding.flatMap((s) => served(s)?.refs ?? []);

  // 2. What the uncached signals and the message find. Open files are looked up every time, apart
  // from the current file (their memories go to the relevant tier); while debugging, the last
  // day's error memories even without an error on screen.
  // The exclusions are the message's alone (docs/retrieval.md#exclusions): the signals' names follow it.
  const names = uncached.map(signalSearchText).filter((t): t is string => !!t).join("\n");
  const searchText = body.message ? retrievalText(body.message, names || undefined, "\n") : names;
  const lookups = lookupsOf(uncached, now);
  const gathered = await gatherCandidates(deps.sql, caller, deps, {
    scopes,
    ownerId: caller.tenantId,
    limit: CANDIDATES_PER_KIND,
    searchText: searchText || undefined,
    message: body.message !== undefined,
    ...lookups,
    openFiles: signals.open_files,
    recentSince: lookups.recentSince ?? (activity === "debugging" ? recentErrorsSince(now) : undefined),
    backgroundCategories: [...BACKGROUND_CATEGORIES, ...ACTIVITY_CATEGORIES[activity ?? "feature"]],
    contradictions: true,
    givenIds: servedRefs.map((r) => r.id),
  });

  // 3. Tiers, ranks, levels, text.
  const selection = selectTiers({
    refs: [...gathered.refs, ...servedRefs],
    details: gathered.details,
    signals,
    activity,
  });
  const packed = packTiers({ budget: body.budget, shares: sharesFor(activity), ...selection });
  const memories = describe(packed, selection);
  const perSignal = Object.fromEntries(
    coding.map((s) => [signalKey(s), cached.get(signalKey(s))?.freshness ?? "miss" as const]),
  );

  // 4. Reinforced: what the signals and the message selected. Background is standing context and
  // an index key a pointer: neither says the memory was used. Written after the answer (the
  // context does not depend on it): a crash in between loses these reinforcements and the
  // session's injection record, never a memory.
  const injected = memories.filter((m) => m.tier !== "index");
  const reinforced = injected.filter((m) => m.tier === "critical" || m.tier === "relevant").map((m) => m.id);
  const record = withTenant(deps.sql, caller, (tx) =>
    tx`
      select public.record_context_assembly(
        ${body.session_id ?? null}, ${injected.map((m) => m.id)}::uuid[], ${injected.map((m) => m.tier)}::text[],
        ${injected.map((m) => m.level)}::text[], ${injected.map((m) => m.tokens)}::int[], ${reinforced}::uuid[],
        ${body.thread_id ?? null},
        ${
      tx.json({
        mode: "assemble",
        project: body.project ?? null,
        activity: activity ?? null,
        budget: body.budget,
        token_count: packed.tokenCount,
        candidates: selection.scored.size,
        injected: injected.length,
        searches: gathered.searches,
        prefetch: perSignal,
      } as never)
    })`, { threadId: body.thread_id });
  if (deps.defer) deps.defer(record);
  else await record;

  // Lazy refresh: a stale prediction was served once; the next assemble gets a fresh one.
  if (body.session_id && deps.defer) {
    for (const s of stale) deps.defer(refreshPrefetch(deps, caller, body.session_id, body.project, s, signals));
  }
  const statuses = new Set(Object.values(perSignal));
  return {
    context: packed.text,
    token_count: packed.tokenCount,
    budget: body.budget,
    activity: activity ?? null,
    tiers: packed.tiers,
    memories,
    excluded: selection.excluded,
    omitted: selection.scored.size - memories.filter((m) => selection.scored.has(m.id)).length +
      selection.unshown.length,
    prefetch: {
      status: !body.session_id || coding.length === 0 ? "none" : statuses.size === 1 ? [...statuses][0]! : "partial",
      signals: perSignal,
    },
  };
}
