// Phase 2 of the write path: each candidate against the tenant's memories (RLS applies: the
// worker acts as the job's owner). Each candidate takes one or more passes (dedup-pass.ts), each
// in a short transaction:
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
//      either way the trigger closes the old fact's validity (valid_until, docs/graph.md), and the
//      memory replacing the old one takes its category when it has none (memory.query serves it)
//   5. relations from the new memory to its top-K neighbours above the link threshold
//      (insert … on conflict do nothing: never a duplicate edge), memory_events for every step;
//      with an LLM, a queued check of the new memories for contradictions (contradiction-check.ts)
//
// Decide outside, apply inside: the model is asked between two passes, outside any transaction
// (it takes seconds, minutes with retries). The first pass reads the neighbours without locking
// them; the pass after the answer locks them `for no key update` in id order (with the memory that
// says a merged text: one statement, docs/operations.md#lock-order) and applies the
// decision only if they are as the model saw them (same ids, text, source, priority, pin, type,
// namespace; still valid and active). Otherwise the candidate is decided again on what is there
// now, at most MAX_DECISIONS times; past that the job fails and is retried later (its progress
// kept). So in a dedup job a user's correction, forget or confirm of a neighbour never waits for the
// model, and a decision is never applied to a memory that changed under it. A session's
// consolidation applies its facts the same way (consolidation.ts).
//
// Concurrency: each pass takes pg_advisory_xact_lock on (owner, namespace) for its candidate, so
// two workers deduplicating overlapping candidates apply one after the other: the second sees the
// first's ADD (exact hash → NOOP, or a new neighbour: decided again) and its UPDATE (the superseded
// row is invalid, the new one is the neighbour), so nothing is added twice and no update is lost.
// History rows come from the triggers (actor = memory.actor).
import type { Tx } from "./db.ts";
import type { Embedder } from "./embeddings.ts";
import type { Config } from "./env.ts";
import { emptyUsage, type Llm, type LlmUsage } from "./llm.ts";
import type { Candidate } from "./candidates.ts";
import type { CodeOrigin } from "./schemas.ts";
import { decideWithModel } from "./dedup-model.ts";
import { CHANGED_WHILE_LOCKING, dedupPass, type SeenDecision } from "./dedup-pass.ts";
import { queueContradictionCheck } from "./contradiction-check.ts";

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
  /** Decisions dropped because a neighbour changed while the model decided (decided again). */
  redecided?: number;
}

export interface DedupReport {
  outcomes: CandidateOutcome[];
  counts: Record<CandidateOutcome["action"], number>;
  llm_calls: number;
  /** Protected candidates decided by the rule because the model failed (see decideWithModel). */
  model_failures: number;
  usage: LlmUsage;
}

/** How a caller runs dedup's transactions, and what it keeps of the work done. */
export interface DedupRun {
  /** Runs one pass in a transaction of the tenant: a new short one each (the worker), or the caller's own. */
  transaction: <T>(work: (tx: Tx) => Promise<T>) => Promise<T>;
  /** At the end of each applying pass, in its transaction: candidates done so far (the job's progress). */
  applied?: (tx: Tx, progress: DedupProgress) => Promise<unknown>;
  /** What an earlier attempt applied (its progress): those candidates are not run again. */
  resume?: DedupProgress;
  /** Not the job's last attempt: a drain's cut hands the job back rather than decide by the rule (dedup-model.ts). */
  handBackCuts?: boolean;
}

export interface DedupProgress {
  done: number;
  report: DedupReport;
}

/**
 * A neighbour whose keyword score reaches this share of a full match of the candidate's terms is a
 * near-verbatim restatement: shown to the decision like a vector neighbour at the dedup threshold.
 */
export const NEAR_VERBATIM_COVERAGE = 0.8;
/** Decisions one candidate may take when its neighbours keep changing under the model. */
export const MAX_DECISIONS = 3;

/** A candidate's neighbours changed under every one of its MAX_DECISIONS decisions: the job retries later. */
export class NeighboursChangingError extends Error {
  override name = "NeighboursChangingError";
}

/** Takes the (owner, namespace) advisory locks of a batch, sorted so workers never deadlock on them. */
export async function lockNamespaces(tx: Tx, ownerId: string, namespaces: string[]): Promise<void> {
  for (const ns of [...new Set(namespaces)].sort()) {
    await tx`select pg_advisory_xact_lock(hashtextextended(${`devai-dedup|${ownerId}|${ns}`}, 0))`;
  }
}

export async function dedupCandidates(
  run: DedupRun,
  deps: DedupDeps,
  ctx: DedupContext,
  candidates: Candidate[],
  vectors: number[][],
): Promise<DedupReport> {
  const report: DedupReport = structuredClone(run.resume?.report) ?? {
    outcomes: [],
    counts: { ADD: 0, UPDATE: 0, DELETE: 0, NOOP: 0, SKIPPED: 0, PROPOSED: 0 },
    llm_calls: 0,
    model_failures: 0,
    usage: emptyUsage(),
  };
  for (let i = run.resume?.done ?? 0; i < candidates.length; i++) {
    const c = candidates[i]!;
    let decided: SeenDecision | undefined;
    for (let decisions = 0, relocked = 0;;) {
      const toDecide = await run.transaction(async (tx) => {
        const pending = await dedupPass(tx, deps, ctx, c, vectors[i]!, report, decided);
        if (!pending) {
          if (decisions > 1) report.outcomes.at(-1)!.redecided = decisions - 1;
          await run.applied?.(tx, { done: i + 1, report });
        }
        return pending;
      });
      if (!toDecide) break;
      // A memory the pass was to lock changed first (dedup-pass.ts): the same pass again, not a
      // new decision; past MAX_DECISIONS such changes in a row, the job retries later.
      if (toDecide === CHANGED_WHILE_LOCKING) {
        if (++relocked > MAX_DECISIONS) {
          throw new NeighboursChangingError(
            `candidate ${i}: the memories it was to lock changed ${MAX_DECISIONS + 1} times in a row; retried later`,
          );
        }
        continue;
      }
      relocked = 0;
      if (decisions++ >= MAX_DECISIONS) {
        throw new NeighboursChangingError(
          `candidate ${i}: its neighbours changed while the model decided, ${MAX_DECISIONS} times; retried later`,
        );
      }
      // The model decides with no transaction open and no memory locked.
      decided = {
        ...await decideWithModel(deps.llm!, c, toDecide.neighbours, report, !run.handBackCuts),
        seen: toDecide.seen,
      };
    }
  }
  // New facts are checked against their nearest ones for contradictions, off this path (the key
  // is the memories' ids: queued once however often this runs).
  const added = report.outcomes.flatMap((o) => (o.memory_id ? [o.memory_id] : []));
  if (deps.llm && added.length > 0) await run.transaction((tx) => queueContradictionCheck(tx, ctx.ownerId, added));
  return report;
}
