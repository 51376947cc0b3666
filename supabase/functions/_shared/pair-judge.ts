// The LLM judge of pairs of memories (nightly consolidation and the write-time contradiction check):
// 5-10 pairs per prompt, each shown as [n] OLDER / NEWER with no ids, answered with a verdict per
// pair number and mapped back here, so the model can neither invent nor reach an id. What a verdict
// does is decided here too, by the dedup guardrails (ARCHITECTURE invariant 5): a user-stated or
// pinned memory is never merged away or superseded by a model's verdict, and every change is a soft,
// audited supersede (docs/consolidation.md#nightly-consolidation).
import { z } from "zod";
import { isProtected } from "./candidates.ts";
import { addUsage, emptyUsage, type Llm, type LlmUsage, type PromptMessage } from "./llm.ts";
import { countTokens, truncateToTokens } from "./tokens.ts";

export const PAIR_JUDGE_MARK = "Each numbered pair shows an OLDER and a NEWER memory";
const MEMORY_TOKENS = 150;
/** Completion tokens a verdict needs, for the budget check before a call. */
const TOKENS_PER_VERDICT = 40;

export const PairVerdictSchema = z.object({
  verdicts: z.array(z.object({
    pair: z.number().int(),
    verdict: z.enum(["same", "refines", "contradiction", "different"]),
    reason: z.string().max(500).default(""),
  })).max(20),
});
export type Verdict = z.infer<typeof PairVerdictSchema>["verdicts"][number]["verdict"] | "verbatim";

export interface PairMemory {
  id: string;
  content: string;
  memory_type: string;
  namespace: string;
  source: string | null;
  priority: string;
  pinned: boolean;
  access_count: number;
  created_at: Date;
}

export interface Pair {
  older: PairMemory;
  newer: PairMemory;
  /** The pair's similarity (cosine, or the keyword near-verbatim floor), 0..1. */
  score: number;
}

/**
 * A pair as the judge reads it: the memory created first is OLDER. Two created in one instant
 * (one transaction, or PGlite's millisecond clock) are told apart by id, so a pair reads the same
 * whichever of its memories the check started from (the write check and the nightly pass alike).
 */
export function olderFirst<T extends { id: string; created_at: Date }>(a: T, b: T): [older: T, newer: T] {
  const byTime = a.created_at.getTime() - b.created_at.getTime();
  return byTime < 0 || (byTime === 0 && a.id < b.id) ? [a, b] : [b, a];
}

export interface JudgedPair extends Pair {
  verdict: Verdict;
  reason: string;
}

export function pairJudgeMessages(pairs: readonly Pair[]): PromptMessage[] {
  const show = (m: PairMemory) =>
    `${truncateToTokens(m.content.replace(/\s+/g, " "), MEMORY_TOKENS)}${
      isProtected(m) ? " (stated by the user)" : ""
    }`;
  const listed = pairs.map((p, i) => `[${i}]\n  OLDER: ${show(p.older)}\n  NEWER: ${show(p.newer)}`).join("\n\n");
  return [
    {
      role: "system",
      content: "You maintain the long-term memory of a coding agent. " + PAIR_JUDGE_MARK + " of the same user. " +
        "For each pair give its number in `pair` and one verdict:\n" +
        "- same: both state the same fact (one may be worded better); keeping one loses nothing.\n" +
        "- refines: NEWER is a later or more precise version of the same fact, so OLDER is outdated (a version bump, a changed setting, more detail).\n" +
        "- contradiction: they cannot both be true and it is not clear that NEWER replaces OLDER; a person must decide.\n" +
        "- different: they are about different things, or both can be true.\n" +
        "Add a short reason. Judge every pair; when unsure, answer different.",
    },
    { role: "user", content: `Pairs:\n\n${listed}` },
  ];
}

export interface JudgeBudget {
  pairsPerPrompt: number;
  /** Tokens this judge may still spend (prompt + completion, as the provider counts them). */
  tokens: number;
}

export interface JudgeOutcome {
  judged: JudgedPair[];
  usage: LlmUsage;
  /** Set when pairs were left for another night: "tokens" (the budget would be exceeded). */
  stopped?: "tokens";
}

/**
 * Judges the pairs in prompts of pairsPerPrompt, stopping before a call whose prompt (and the
 * answer it asks for) would take the spending past the token budget. A pair the model did not
 * answer counts as different.
 */
export async function judgePairs(llm: Llm, pairs: readonly Pair[], budget: JudgeBudget): Promise<JudgeOutcome> {
  const usage = emptyUsage();
  const judged: JudgedPair[] = [];
  for (let i = 0; i < pairs.length; i += budget.pairsPerPrompt) {
    const batch = pairs.slice(i, i + budget.pairsPerPrompt);
    const messages = pairJudgeMessages(batch);
    const estimate = messages.reduce((n, m) => n + countTokens(m.content), 0) + TOKENS_PER_VERDICT * batch.length;
    if (usage.totalTokens + estimate > budget.tokens) return { judged, usage, stopped: "tokens" };
    const out = await llm.completeJson(PairVerdictSchema, messages, { name: "pair_verdicts", temperature: 0 });
    addUsage(usage, out.usage);
    const byPair = new Map<number, { verdict: Verdict; reason: string }>();
    for (const v of out.value.verdicts) {
      if (v.pair >= 0 && v.pair < batch.length && !byPair.has(v.pair)) byPair.set(v.pair, v);
    }
    batch.forEach((p, n) => {
      const v = byPair.get(n);
      judged.push({ ...p, verdict: v?.verdict ?? "different", reason: (v?.reason ?? "").slice(0, 500) });
    });
  }
  return { judged, usage };
}

export type PairAction =
  | { action: "merge"; keep: PairMemory; drop: PairMemory }
  | { action: "supersede"; keep: PairMemory; drop: PairMemory }
  | { action: "contradiction"; older: PairMemory; newer: PairMemory }
  | { action: "none"; why: "different" | "protected" };

/** Which of two memories saying the same survives: the user's, the pinned, the retrieved, the older. */
function survivor(a: PairMemory, b: PairMemory): [PairMemory, PairMemory] {
  const rank = (m: PairMemory) => [isProtected(m) ? 1 : 0, m.access_count, -m.created_at.getTime()];
  const ra = rank(a), rb = rank(b);
  for (let i = 0; i < ra.length; i++) if (ra[i] !== rb[i]) return ra[i]! > rb[i]! ? [a, b] : [b, a];
  return a.id < b.id ? [a, b] : [b, a];
}

/** What a verdict does, under the guardrails (see the module comment). */
export function actionFor(p: JudgedPair): PairAction {
  switch (p.verdict) {
    case "same":
    case "verbatim": {
      const [keep, drop] = survivor(p.older, p.newer);
      return isProtected(drop) ? { action: "none", why: "protected" } : { action: "merge", keep, drop };
    }
    case "refines":
      return isProtected(p.older)
        ? { action: "none", why: "protected" }
        : { action: "supersede", keep: p.newer, drop: p.older };
    case "contradiction":
      return { action: "contradiction", older: p.older, newer: p.newer };
    case "different":
      return { action: "none", why: "different" };
  }
}
