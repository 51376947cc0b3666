// The model's dedup decision for one candidate, and what happens when the model fails (dedup.ts
// asks it, outside any transaction, when a near neighbour exists).
import { addUsage, type Llm, LlmOutputError, LlmRequestError } from "./llm.ts";
import { type Candidate, isProtected } from "./candidates.ts";
import { DrainCutError } from "./drain-deadline.ts";
import {
  decideWithoutLlm,
  DedupDecisionSchema,
  dedupMessages,
  type Neighbour,
  type ResolvedAction,
  resolveDecision,
} from "./dedup-decision.ts";
import type { DedupReport } from "./dedup.ts";

/** A decision and what its classify event records; dedup-pass.ts writes the event when it applies it. */
export interface Decided {
  action: ResolvedAction;
  reason?: string;
  override?: string;
  classify: { status: "ok" | "error"; meta: Record<string, unknown> };
}

/**
 * One LLM call decides between the candidate and its neighbours (resolved server-side). When the
 * model fails, a protected candidate (the user's own statement or correction) is decided by the
 * rule used without a model and the failure is counted in the report (model_failures) and its
 * classify event: the user's words are stored whatever the model does. Any other candidate's
 * failure fails the job, which retries it. A drain's cut (DrainCutError) is no failure of the model:
 * the job is handed back and goes on from this candidate (its progress), unless this is its last
 * attempt (`settle`); else every statement after the cut was decided by the rule, none asked.
 */
export async function decideWithModel(
  llm: Llm,
  c: Candidate,
  neighbours: Neighbour[],
  report: DedupReport,
  settle = true,
): Promise<Decided> {
  report.llm_calls++;
  let out;
  try {
    out = await llm.completeJson(DedupDecisionSchema, dedupMessages(c, neighbours), { name: "dedup_decision" });
  } catch (err) {
    if (!isProtected(c) || !(err instanceof LlmRequestError || err instanceof LlmOutputError)) throw err;
    if (err instanceof DrainCutError && !settle) throw err;
    const action = decideWithoutLlm(c, neighbours);
    report.model_failures++;
    return {
      action,
      reason: "model_failed",
      classify: {
        status: "error",
        meta: { decision: action.action, rule: "model_failed", error: `${err.name}: ${err.message}`.slice(0, 500) },
      },
    };
  }
  addUsage(report.usage, out.usage);
  const resolution = resolveDecision(out.value, c, neighbours);
  return {
    action: resolution.resolved,
    reason: out.value.reason,
    override: resolution.override,
    classify: {
      status: resolution.override ? "error" : "ok",
      meta: {
        decision: out.value.action,
        target: out.value.target ?? null,
        applied: resolution.resolved.action,
        override: resolution.override ?? null,
        tokens: out.usage.totalTokens,
      },
    },
  };
}
