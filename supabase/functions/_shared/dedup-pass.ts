// One candidate's pass through dedup (dedup.ts runs it in a short transaction): the exact
// duplicate, a sensitive fact's proposal, the daily cap, the neighbours, and the decision applied.
// A decision the model must make is never awaited here: the pass reads the neighbours without
// locking them and returns them to be decided outside the transaction; the next pass locks them,
// checks they are what the decision saw, and applies it (or returns them again, changed).
// Rows are locked in one order (docs/operations.md#lock-order): the namespace's lock, the texts'
// hash locks, then the memories in id order, in one statement: the neighbours with the memory that
// says a merged text. A memory this pass relies on that a write under way replaced or forgot (its
// row held, no lock on this text) is no longer live once locked: the pass changes nothing and runs
// again in a new transaction on the same decision (CHANGED_WHILE_LOCKING), rather than lock another
// memory out of id order.
import type { Tx } from "./db.ts";
import { toVectorLiteral } from "./db.ts";
import { thresholdsFor } from "./embeddings.ts";
import type { Config } from "./env.ts";
import { hybridSearch } from "./search/hybrid.ts";
import { type Candidate, isProtected } from "./candidates.ts";
import { decideWithoutLlm, type Neighbour, type ResolvedAction } from "./dedup-decision.ts";
import type { Decided } from "./dedup-model.ts";
import { type Edge, linkMemory } from "./edges.ts";
import { event, insertMemory } from "./dedup-writes.ts";
import { proposeIfSensitive } from "./proposals.ts";
import { supersedeMemory } from "./supersede.ts";
import { liveWithText, lockContentHash, lockedLiveWithText, lockMemory, takeCategory } from "./memories/record.ts";
import { visibleScopes } from "./schemas.ts";
import {
  type CandidateOutcome,
  type DedupContext,
  type DedupDeps,
  type DedupReport,
  lockNamespaces,
  NEAR_VERBATIM_COVERAGE,
} from "./dedup.ts";

const NEIGHBOURS_SHOWN = 5;
const LINK_TOP_K = 3;

/** What the model is to decide on: the neighbours, and their state as read (`seen`, compared when applying). */
export interface ToDecide {
  neighbours: Neighbour[];
  seen: string;
}

/** A decision made on neighbours in the state `seen`. */
export type SeenDecision = Decided & { seen: string };

/** The pass changed nothing: a memory it was to lock changed first. Run it again, on the same decision. */
export const CHANGED_WHILE_LOCKING = "changed_while_locking";

/**
 * One pass for candidate `c`: returns undefined when the candidate is done (its outcome pushed to
 * the report, its rows written in `tx`), the neighbours the model must decide on, or
 * CHANGED_WHILE_LOCKING (nothing written). `decided` is applied only when the neighbours are still
 * as it saw them.
 */
export async function dedupPass(
  tx: Tx,
  deps: DedupDeps,
  ctx: DedupContext,
  c: Candidate,
  vector: number[],
  report: DedupReport,
  decided?: SeenDecision,
): Promise<ToDecide | typeof CHANGED_WHILE_LOCKING | undefined> {
  const thresholds = thresholdsFor(deps.embedder.model, deps.config as Config);
  await lockNamespaces(tx, ctx.ownerId, [c.namespace]);
  // The text's lock, as remember's, before any row: the duplicate check below and the insert cannot
  // interleave with a remember, correction or accept of the same text (one live memory per text).
  // A merged text the model decided is checked in step 4: locked now too.
  const merged = decided?.action.action === "UPDATE" ? decided.action.content : undefined;
  await lockContentHash(tx, ctx.ownerId, c.content, ...(merged && merged !== c.content ? [merged] : []));
  const scopes = visibleScopes(c.namespace, deps.config.namespaceRoot);
  const outcome: CandidateOutcome = { content: c.content, namespace: c.namespace, action: "NOOP", links: 0 };
  const done = (action: CandidateOutcome["action"], fields: Partial<CandidateOutcome>) => {
    Object.assign(outcome, { action, ...fields });
    report.outcomes.push(outcome);
    report.counts[action]++;
  };

  // 1. exact duplicate: zero LLM calls, zero searches. Locked and checked live, as remember's
  // (lockedLiveWithText: one a write under way forgot or replaced gives way to the next that says the
  // text, or none): the only row this pass locks when it answers NOOP.
  const dup = await lockedLiveWithText(tx, ctx.ownerId, c.content, scopes);
  if (dup) {
    done("NOOP", { reason: "exact_duplicate", target_id: dup.id });
    await event(tx, ctx, "classify", "skipped", dup.id, c, 1, { decision: "NOOP", reason: "exact_duplicate" });
    return;
  }

  // A model's fact about who or where the user is waits for consent instead (docs/consolidation.md#consent).
  const proposal = await proposeIfSensitive(tx, c, ctx);
  if (proposal) {
    done("PROPOSED", { reason: `needs consent: ${proposal.field}`, target_id: proposal.id });
    await event(tx, ctx, "create", "skipped", null, c, null, {
      reason: "needs_consent",
      field: proposal.field,
      proposal_id: proposal.id,
    });
    return;
  }

  // Per-tenant daily cap on automatic writes (seed 001 §13); user-stated memories are exempt and
  // do not use it up (they are queued in a dedup job of their own, before the model's). The day is
  // 24 hours: `interval '1 day'` follows the session's time zone, 23 or 25 hours across a DST change.
  if (!isProtected(c)) {
    const [{ used } = { used: 0 }] = await tx<{ used: number }[]>`
      select count(*)::int as used from public.memory_events
       where owner_id = ${ctx.ownerId} and node = 'worker' and op = 'create' and status = 'ok'
         and ts > now() - interval '24 hours' and not coalesce((meta ->> 'protected')::boolean, false)`;
    if (used >= deps.config.extractDailyCap) {
      done("SKIPPED", { reason: "daily_cap" });
      await event(tx, ctx, "create", "skipped", null, c, null, {
        reason: "daily_cap",
        cap: deps.config.extractDailyCap,
      });
      return;
    }
  }

  // 2. neighbours in the candidate's scope: the hybrid search, so a near-verbatim duplicate is
  // found by its words even when the vectors disagree (near-verbatim counts as dedup-similar).
  const found: Neighbour[] = (await hybridSearch(tx, {
    queryText: c.content,
    vector,
    embeddingModel: deps.embedder.model,
    scopes: [c.namespace],
    ownerId: ctx.ownerId,
    limit: 10,
    threshold: Math.min(thresholds.dedup, thresholds.link),
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

  // The rows a decision may touch, re-read (a concurrent edit outside dedup is respected). Locked
  // (in id order, as lockMemories does) only when this pass applies a decision: never while the
  // model decides, so a user's correction or forget of a neighbour does not wait for the model.
  // With them, the memory that says the model's merged text (step 4 supersedes the target by it):
  // found now, under that text's lock (no other memory can come to say it), so that one statement
  // locks every row in id order; locked after the neighbours, it would close a cycle with a write
  // locking the two in id order (a correction of it to a neighbour's text).
  const nearIds = found.filter((n) => n.similarity >= thresholds.dedup).slice(0, NEIGHBOURS_SHOWN).map((n) => n.id);
  const applying = nearIds.length === 0 || !deps.llm || decided !== undefined;
  const held = merged && merged !== c.content && nearIds.length > 0
    ? await liveWithText(tx, ctx.ownerId, merged, scopes)
    : undefined;
  const rows = nearIds.length === 0 ? [] : await tx<
    { id: string; content: string; source: string | null; priority: string; pinned: boolean }[]
  >`
    select id, content, source, priority, pinned from public.devai_memories
     where id = any(${held ? [...nearIds, held.id] : nearIds}::uuid[]) and is_valid and state = 'active'
     order by id
     ${applying ? tx`for no key update` : tx``}`;
  const byId = new Map(rows.map((r) => [r.id, r]));
  const neighbours = found.filter((n) => byId.has(n.id) && nearIds.includes(n.id)).map((n) => ({
    ...n,
    ...byId.get(n.id)!,
  }));
  const seen = JSON.stringify(
    neighbours.map((n) => [n.id, n.content, n.source, n.priority, n.pinned, n.memory_type, n.namespace]).sort(),
  );
  if (neighbours.length > 0 && deps.llm && decided?.seen !== seen) return { neighbours, seen };
  // A write under way replaced or forgot the merged text's memory (it held the row): the same
  // decision again, in a new transaction, on the next memory that says it (or a new one).
  if (held && !byId.has(held.id)) return CHANGED_WHILE_LOCKING;

  // 3. decided: by the model on these very neighbours, or by the rule (no neighbour, no model).
  outcome.best_similarity = best;
  await event(tx, ctx, "search", "ok", found[0]?.id ?? null, c, best ?? null, { neighbours: found.length });
  let action: ResolvedAction;
  if (neighbours.length === 0) {
    action = { action: "ADD", content: c.content };
  } else if (decided) {
    action = decided.action;
    Object.assign(outcome, { reason: decided.reason, override: decided.override });
    await event(tx, ctx, "classify", decided.classify.status, null, c, best ?? null, decided.classify.meta);
  } else {
    action = decideWithoutLlm(c, neighbours);
    outcome.reason = "no_llm_configured";
    await event(tx, ctx, "classify", "ok", null, c, best ?? null, { decision: action.action, rule: "no_llm" });
  }

  // 4. apply. A merged text another live memory already says (locked above): that one replaces the
  // target (a new row would duplicate it); the target's own text: nothing to change.
  const same = action.action === "UPDATE" && action.content !== c.content ? held : undefined;
  if (action.action === "UPDATE" && same?.id === action.targetId) action = { action: "NOOP", targetId: same.id };
  if (action.action === "NOOP") {
    done("NOOP", { target_id: action.targetId });
    return;
  }
  // The memory that replaces the target says what it said: without a category of its own it takes
  // the target's, so memory.query still serves the fact (takeCategory, as correct and restore do).
  const [{ category } = { category: null }] = action.action === "ADD" ? [] : await tx<{ category: string | null }[]>`
    select metadata ->> 'category' as category from public.devai_memories where id = ${action.targetId}`;
  if (
    action.action === "UPDATE" && same && await supersedeMemory(tx, ctx.ownerId, same.id, action.targetId, {
      strength: found.find((n) => n.id === action.targetId)?.similarity ?? thresholds.dedup,
      evidence: { dedup: "merged_text_exists" },
    })
  ) {
    await takeCategory(tx, await lockMemory(tx, same.id), category);
    done("UPDATE", { target_id: action.targetId, memory_id: same.id, reason: "merged_text_exists" });
    await event(tx, ctx, "merge", "ok", action.targetId, c, best ?? null, { superseded_by: same.id, existing: true });
    return;
  }
  const filed = { ...c, category: c.category ?? category ?? undefined };
  const newId = await insertMemory(tx, ctx, filed, action.content, toVectorLiteral(vector), deps.embedder.model);
  done(action.action, { memory_id: newId });
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
  const targetId = action.action === "UPDATE" || action.action === "DELETE" ? action.targetId : undefined;
  if (targetId) {
    edges.push({
      to: targetId,
      type: action.action === "UPDATE" ? "supersedes" : "contradicts",
      strength: clamp01(found.find((n) => n.id === targetId)?.similarity ?? thresholds.dedup),
    });
  }
  for (const n of found.filter((n) => n.similarity >= thresholds.link && n.id !== targetId).slice(0, LINK_TOP_K)) {
    edges.push({ to: n.id, type: "related_to", strength: clamp01(n.similarity) });
  }
  outcome.links = await linkMemory(tx, ctx.ownerId, newId, edges);
  if (outcome.links > 0) await event(tx, ctx, "link", "ok", newId, c, null, { edges: outcome.links });
}

const clamp01 = (x: number) => Math.max(0, Math.min(1, x));
