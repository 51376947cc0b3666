// The model's dedup decision for one candidate, and what happens when the model fails (dedup.ts
// calls it when a near neighbour exists).
import type { Tx } from "./db.ts";
import { addUsage, type Llm, LlmOutputError, LlmRequestError } from "./llm.ts";
import { type Candidate, isProtected } from "./candidates.ts";
import {
  decideWithoutLlm,
  DedupDecisionSchema,
  dedupMessages,
  type Neighbour,
  type ResolvedAction,
  resolveDecision,
} from "./dedup-decision.ts";
import { event } from "./dedup-writes.ts";
import type { CandidateOutcome, DedupContext, DedupReport } from "./dedup.ts";

/**
 * One LLM call decides between the candidate and its neighbours (resolved server-side). When the
 * model fails, a protected candidate (the user's own statement or correction) is decided by the
 * rule used without a model and the failure is counted in the report (model_failures) and its
 * classify event: the user's words are stored whatever the model does. Any other candidate's
 * failure fails the job, which retries it.
 */
export async function decideWithModel(
  tx: Tx,
  llm: Llm,
  ctx: DedupContext,
  c: Candidate,
  neighbours: Neighbour[],
  outcome: CandidateOutcome,
  report: DedupReport,
): Promise<ResolvedAction> {
  const best = outcome.best_similarity ?? null;
  report.llm_calls++;
  let out;
  try {
    out = await llm.completeJson(DedupDecisionSchema, dedupMessages(c, neighbours), { name: "dedup_decision" });
  } catch (err) {
    if (!isProtected(c) || !(err instanceof LlmRequestError || err instanceof LlmOutputError)) throw err;
    const action = decideWithoutLlm(c, neighbours);
    report.model_failures++;
    outcome.reason = "model_failed";
    await event(tx, ctx, "classify", "error", null, c, best, {
      decision: action.action,
      rule: "model_failed",
      error: `${err.name}: ${err.message}`.slice(0, 500),
    });
    return action;
  }
  addUsage(report.usage, out.usage);
  const resolution = resolveDecision(out.value, c, neighbours);
  outcome.override = resolution.override;
  outcome.reason = out.value.reason;
  await event(tx, ctx, "classify", resolution.override ? "error" : "ok", null, c, best, {
    decision: out.value.action,
    target: out.value.target ?? null,
    applied: resolution.resolved.action,
    override: resolution.override ?? null,
    tokens: out.usage.totalTokens,
  });
  return resolution.resolved;
}
