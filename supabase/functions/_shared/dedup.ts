// Phase 2 of the write path: each candidate against the tenant's memories, applied in ONE tenant
// transaction (RLS applies: the worker acts as the job's owner).
//
//   1. exact content_hash match (valid, active, not a raw episode) → NOOP, no embedding search, no LLM call;
//      a model's fact about the user's name, pronouns, city, language or employer → PROPOSED: it
//      waits for consent instead (proposals.ts, docs/consolidation.md#consent)
//   2. the hybrid search in the candidate's namespace scope
//   3. no neighbour ≥ dedup threshold → ADD; else ONE LLM call → ADD / UPDATE / DELETE / NOOP
//      (resolved server-side, see dedup-decision.ts), or a conservative rule without an LLM (also
//      for the user's own statement when the model fails: decideWithModel)
//   4. UPDATE: insert the merged memory, old.superseded_by = new, old.is_valid = false (MERGE); a
//      merged text another live memory already says: that one supersedes the old, nothing inserted;
//      DELETE: old.is_valid = false (soft, audited as DELETE, reversible) and the candidate stored;
//      either way the trigger closes the old fact's validity (valid_until, docs/graph.md)
//   5. relations from the new memory to its top-K neighbours above the link threshold
//      (insert … on conflict do nothing: never a duplicate edge), memory_events for every step;
//      with an LLM, a queued check of the new memories for contradictions (contradiction-check.ts)
//
// Concurrency: before searching, the transaction takes pg_advisory_xact_lock on (owner, namespace)
// for every namespace of the batch, in sorted order (no lock-order deadlock between workers), and
// locks the neighbour rows FOR UPDATE. Two workers deduplicating overlapping candidates therefore
// run one after the other: the second sees the first's ADD (exact hash → NOOP, or a neighbour) and
// its UPDATE (the superseded row is invalid, the new one is the neighbour), so nothing is added
// twice and no update is lost. History rows come from the triggers (actor = memory.actor).
import type { Tx } from "./db.ts";
import { toVectorLiteral } from "./db.ts";
import type { Embedder } from "./embeddings.ts";
import { thresholdsFor } from "./embeddings.ts";
import { visibleScopes } from "./schemas.ts";
import { hybridSearch } from "./search/hybrid.ts";
import type { Config } from "./env.ts";
import { emptyUsage, type Llm, type LlmUsage } from "./llm.ts";
import { type Candidate, isProtected } from "./candidates.ts";
import { decideWithoutLlm, type Neighbour, type ResolvedAction } from "./dedup-decision.ts";
import { decideWithModel } from "./dedup-model.ts";
import { type Edge, linkMemory } from "./edges.ts";
import { event, insertMemory } from "./dedup-writes.ts";
import type { CodeOrigin } from "./schemas.ts";
import { proposeIfSensitive } from "./proposals.ts";
import { queueContradictionCheck } from "./contradiction-check.ts";
import { supersedeMemory } from "./supersede.ts";
import { contentHashSql } from "./memories/record.ts";

export interface DedupContext {
  ownerId: string;
  sessionId?: string;
  threadId?: string;
  origin: "extract" | "compact" | "api" | "consolidate";
  jobId?: string;
  lineage?: CodeOrigin; // the request's repository, branch and commit: each new memory's metadata
}

export interface DedupDeps {
  embedder: Embedder;
  llm?: Llm;
  config: Pick<Config, "dedupThreshold" | "retrieval" | "extractDailyCap" | "namespaceRoot">;
}

export interface CandidateOutcome {
  content: string;
  namespace: string;
  /** PROPOSED: a sensitive fact waiting for the user's consent (proposals.ts), not stored. */
  action: "ADD" | "UPDATE" | "DELETE" | "NOOP" | "SKIPPED" | "PROPOSED";
  reason?: string;
  memory_id?: string;
  target_id?: string;
  best_similarity?: number;
  override?: string;
  links: number;
}

export interface DedupReport {
  outcomes: CandidateOutcome[];
  counts: Record<CandidateOutcome["action"], number>;
  llm_calls: number;
  /** Protected candidates decided by the rule because the model failed (see decideWithModel). */
  model_failures: number;
  usage: LlmUsage;
}

const NEIGHBOURS_SHOWN = 5;
/**
 * A neighbour whose keyword score reaches this share of a full match of the candidate's terms is a
 * near-verbatim restatement: shown to the decision like a vector neighbour at the dedup threshold.
 */
export const NEAR_VERBATIM_COVERAGE = 0.8;
const LINK_TOP_K = 3;

/** Takes the (owner, namespace) advisory locks of a batch, sorted so workers never deadlock on them. */
export async function lockNamespaces(tx: Tx, ownerId: string, namespaces: string[]): Promise<void> {
  for (const ns of [...new Set(namespaces)].sort()) {
    await tx`select pg_advisory_xact_lock(hashtextextended(${`devai-dedup|${ownerId}|${ns}`}, 0))`;
  }
}

export async function dedupCandidates(
  tx: Tx,
  deps: DedupDeps,
  ctx: DedupContext,
  candidates: Candidate[],
  vectors: number[][],
): Promise<DedupReport> {
  const thresholds = thresholdsFor(deps.embedder.model, deps.config as Config);
  const searchFloor = Math.min(thresholds.dedup, thresholds.link);
  const report: DedupReport = {
    outcomes: [],
    counts: { ADD: 0, UPDATE: 0, DELETE: 0, NOOP: 0, SKIPPED: 0, PROPOSED: 0 },
    llm_calls: 0,
    model_failures: 0,
    usage: emptyUsage(),
  };

  await lockNamespaces(tx, ctx.ownerId, candidates.map((c) => c.namespace));

  // Per-tenant daily cap on automatic writes (seed 001 §13); user-stated memories are exempt and
  // do not use it up (they are queued in a dedup job of their own, before the model's). The day is
  // 24 hours: `interval '1 day'` follows the session's time zone, 23 or 25 hours across a DST change.
  const [{ used } = { used: 0 }] = await tx<{ used: number }[]>`
    select count(*)::int as used from public.memory_events
     where owner_id = ${ctx.ownerId} and node = 'worker' and op = 'create' and status = 'ok'
       and ts > now() - interval '24 hours' and not coalesce((meta ->> 'protected')::boolean, false)`;
  let remaining = Math.max(0, deps.config.extractDailyCap - used);

  for (let i = 0; i < candidates.length; i++) {
    const c = candidates[i]!;
    const vector = vectors[i]!;
    const outcome: CandidateOutcome = { content: c.content, namespace: c.namespace, action: "NOOP", links: 0 };
    report.outcomes.push(outcome);

    // 1. exact duplicate: zero LLM calls, zero searches.
    const dup = await liveWithText(tx, deps, ctx.ownerId, c.content, c.namespace);
    if (dup) {
      outcome.action = "NOOP";
      outcome.reason = "exact_duplicate";
      outcome.target_id = dup.id;
      report.counts.NOOP++;
      await event(tx, ctx, "classify", "skipped", dup.id, c, 1, { decision: "NOOP", reason: "exact_duplicate" });
      continue;
    }

    // A model's fact about who or where the user is waits for consent instead (docs/consolidation.md#consent).
    const proposal = await proposeIfSensitive(tx, c, ctx);
    if (proposal) {
      Object.assign(outcome, {
        action: "PROPOSED",
        reason: `needs consent: ${proposal.field}`,
        target_id: proposal.id,
      });
      report.counts.PROPOSED++;
      await event(tx, ctx, "create", "skipped", null, c, null, {
        reason: "needs_consent",
        field: proposal.field,
        proposal_id: proposal.id,
      });
      continue;
    }

    if (!isProtected(c) && remaining <= 0) {
      outcome.action = "SKIPPED";
      outcome.reason = "daily_cap";
      report.counts.SKIPPED++;
      await event(tx, ctx, "create", "skipped", null, c, null, {
        reason: "daily_cap",
        cap: deps.config.extractDailyCap,
      });
      continue;
    }

    // 2. neighbours in the candidate's scope: the hybrid search, so a near-verbatim duplicate is
    // found by its words even when the vectors disagree (near-verbatim counts as dedup-similar).
    const vec = toVectorLiteral(vector);
    const found: Neighbour[] = (await hybridSearch(tx, {
      queryText: c.content,
      vector,
      embeddingModel: deps.embedder.model,
      scopes: [c.namespace],
      ownerId: ctx.ownerId,
      limit: 10,
      threshold: searchFloor,
      graphDepth: 0,
    })).map((n) => ({
      id: n.id,
      content: n.content,
      similarity: Math.max(
        n.similarity ?? 0,
        (n.keyword_coverage ?? 0) >= NEAR_VERBATIM_COVERAGE ? thresholds.dedup : 0,
      ),
      memory_type: n.memory_type,
      namespace: n.namespace,
      source: n.source,
      priority: n.priority,
      pinned: n.pinned,
    })).sort((a, b) => b.similarity - a.similarity || (a.id < b.id ? -1 : 1));
    const best = found[0]?.similarity;
    outcome.best_similarity = best;
    await event(tx, ctx, "search", "ok", found[0]?.id ?? null, c, best ?? null, { neighbours: found.length });

    // Lock what the decision may touch (as lockMemory does); re-read so a concurrent edit (outside dedup) is respected.
    const nearIds = found.filter((n) => n.similarity >= thresholds.dedup).slice(0, NEIGHBOURS_SHOWN).map((n) => n.id);
    let neighbours: Neighbour[] = [];
    if (nearIds.length > 0) {
      const locked = await tx<
        { id: string; content: string; source: string | null; priority: string; pinned: boolean }[]
      >`
        select id, content, source, priority, pinned from public.devai_memories
         where id = any(${nearIds}::uuid[]) and is_valid and state = 'active'
         order by id
         for no key update`;
      const byId = new Map(locked.map((r) => [r.id, r]));
      neighbours = found
        .filter((n) => byId.has(n.id) && nearIds.includes(n.id))
        .map((n) => ({ ...n, ...byId.get(n.id)! }));
    }

    // 3. decide
    let action: ResolvedAction;
    if (neighbours.length === 0) {
      action = { action: "ADD", content: c.content };
    } else if (deps.llm) {
      action = await decideWithModel(tx, deps.llm, ctx, c, neighbours, outcome, report);
    } else {
      action = decideWithoutLlm(c, neighbours);
      outcome.reason = "no_llm_configured";
      await event(tx, ctx, "classify", "ok", null, c, best ?? null, { decision: action.action, rule: "no_llm" });
    }

    // 4. apply. A merged text another live memory already says: that one replaces the target (a
    // new row would duplicate it); the target's own text: nothing to change.
    const same = action.action === "UPDATE" && action.content !== c.content
      ? await liveWithText(tx, deps, ctx.ownerId, action.content, c.namespace)
      : undefined;
    if (action.action === "UPDATE" && same?.id === action.targetId) action = { action: "NOOP", targetId: same.id };
    outcome.action = action.action;
    report.counts[action.action]++;
    if (action.action === "NOOP") {
      outcome.target_id = action.targetId;
      continue;
    }
    if (
      action.action === "UPDATE" && same && await supersedeMemory(tx, ctx.ownerId, same.id, action.targetId, {
        strength: found.find((n) => n.id === action.targetId)?.similarity ?? thresholds.dedup,
        evidence: { dedup: "merged_text_exists" },
      })
    ) {
      Object.assign(outcome, { target_id: action.targetId, memory_id: same.id, reason: "merged_text_exists" });
      await event(tx, ctx, "merge", "ok", action.targetId, c, best ?? null, { superseded_by: same.id, existing: true });
      continue;
    }
    const newId = await insertMemory(tx, ctx, c, action.content, vec, deps.embedder.model);
    outcome.memory_id = newId;
    if (!isProtected(c)) remaining--;
    await event(tx, ctx, "create", "ok", newId, c, best ?? null, { action: action.action });

    if (action.action === "UPDATE") {
      outcome.target_id = action.targetId;
      await tx`update public.devai_memories set superseded_by = ${newId}, is_valid = false where id = ${action.targetId}`;
      await event(tx, ctx, "merge", "ok", action.targetId, c, best ?? null, { superseded_by: newId });
    } else if (action.action === "DELETE") {
      outcome.target_id = action.targetId;
      await tx`update public.devai_memories set is_valid = false where id = ${action.targetId}`;
      await event(tx, ctx, "delete", "ok", action.targetId, c, best ?? null, { replaced_by: newId, soft: true });
    }

    // 5. relations (seed 001 §2): typed edge to the target, related_to to the closest others
    const edges: Edge[] = [];
    if (action.action === "UPDATE" || action.action === "DELETE") {
      const sim = found.find((n) => n.id === action.targetId)?.similarity ?? thresholds.dedup;
      edges.push({
        to: action.targetId,
        type: action.action === "UPDATE" ? "supersedes" : "contradicts",
        strength: clamp01(sim),
      });
    }
    const targetId = action.action === "UPDATE" || action.action === "DELETE" ? action.targetId : undefined;
    for (const n of found.filter((n) => n.similarity >= thresholds.link && n.id !== targetId).slice(0, LINK_TOP_K)) {
      edges.push({ to: n.id, type: "related_to", strength: clamp01(n.similarity) });
    }
    outcome.links = await linkMemory(tx, ctx.ownerId, newId, edges);
    if (outcome.links > 0) await event(tx, ctx, "link", "ok", newId, c, null, { edges: outcome.links });
  }
  // New facts are checked against their nearest ones for contradictions, off this transaction's path.
  if (deps.llm) {
    await queueContradictionCheck(tx, ctx.ownerId, report.outcomes.flatMap((o) => (o.memory_id ? [o.memory_id] : [])));
  }
  return report;
}

const clamp01 = (x: number) => Math.max(0, Math.min(1, x));

/** A valid, active memory (not a raw episode) in the scope that says `text`, case and spacing aside. */
async function liveWithText(tx: Tx, deps: DedupDeps, ownerId: string, text: string, namespace: string) {
  const [row] = await tx<{ id: string }[]>`
    select id from public.devai_memories
     where owner_id = ${ownerId} and content_hash = ${contentHashSql(tx, text)}
       and is_valid and state = 'active' and source is distinct from 'conversation'
       and (namespace || '/') ^@ any (${visibleScopes(namespace, deps.config.namespaceRoot)}::text[])
     limit 1`;
  return row;
}
