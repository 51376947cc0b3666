// Phase 2 decision logic (pure): the prompt that shows a candidate and its near neighbours, and the
// server-side resolution of the LLM's answer into an action on real memory ids.
//
// Safety rules (ARCHITECTURE invariant 5; peers' users report wrong deletions):
// - Neighbours are shown as [0], [1], … and mapped back here: the LLM never sees or returns a uuid.
// - A decision naming a number outside the neighbour set, or UPDATE/DELETE without one, is rejected
//   and resolved as ADD. ADD is the choice that cannot lose information: the worst outcome is a
//   near-duplicate that a later dedup round (or a person) merges, while NOOP could silently drop a
//   new fact and UPDATE/DELETE could hit the wrong memory.
// - User-stated memories (source user_stated or correction, priority highest, or pinned) are never
//   the target of an UPDATE or DELETE (resolved as ADD: both are kept), and a user-stated candidate
//   is always stored (NOOP becomes ADD) with the user's words, never the LLM's rewrite.
import { z } from "zod";
import type { PromptMessage } from "./llm.ts";
import { type Candidate, isProtected } from "./candidates.ts";
import { validateContent } from "./writing-constraints.ts";

export interface Neighbour {
  id: string;
  content: string;
  similarity: number;
  memory_type: string;
  namespace: string;
  source: string | null;
  priority: string;
  pinned: boolean;
}

export const DedupDecisionSchema = z.object({
  action: z.enum(["ADD", "UPDATE", "DELETE", "NOOP"]),
  target: z.number().int().nullable().optional(),
  content: z.string().max(2000).nullable().optional(),
  reason: z.string().max(1000).optional(),
});
export type DedupDecision = z.infer<typeof DedupDecisionSchema>;

export type ResolvedAction =
  | { action: "ADD"; content: string }
  | { action: "NOOP"; targetId?: string }
  | { action: "UPDATE"; targetId: string; content: string }
  | { action: "DELETE"; targetId: string; content: string };

export interface Resolution {
  resolved: ResolvedAction;
  /** Why the server did not follow the LLM literally (for events/job results), if it did not. */
  override?:
    | "unknown_target"
    | "missing_target"
    | "protected_target"
    | "user_stated_always_stored"
    | "invalid_merged_content";
  decision: DedupDecision;
}

export function dedupMessages(candidate: Candidate, neighbours: Neighbour[]): PromptMessage[] {
  const listed = neighbours
    .map((n, i) =>
      `[${i}] (similarity ${n.similarity.toFixed(3)}, ${n.memory_type}${
        isProtected(n) ? ", stated by the user" : ""
      }) ${n.content}`
    )
    .join("\n");
  return [
    {
      role: "system",
      content: [
        "You maintain the long-term memory of a coding agent. Decide how a NEW candidate memory relates to EXISTING memories.",
        "Actions:",
        "- ADD: the candidate is genuinely new knowledge.",
        "- UPDATE: the candidate refines or extends existing memory [target]; give the merged memory in `content` (third person, 1-2 sentences, at most 280 characters). The old one is superseded.",
        "- DELETE: the candidate contradicts existing memory [target], which is outdated; it is invalidated and the candidate stored.",
        "- NOOP: the candidate is already known (same meaning as [target]); nothing changes.",
        "Refer to existing memories ONLY by their number in brackets. Memories stated by the user must not be updated or deleted.",
      ].join("\n"),
    },
    {
      role: "user",
      content:
        `NEW candidate (${candidate.type}, source ${candidate.source}): ${candidate.content}\n\nEXISTING memories:\n${listed}`,
    },
  ];
}

export function resolveDecision(decision: DedupDecision, candidate: Candidate, neighbours: Neighbour[]): Resolution {
  const protectedCandidate = isProtected(candidate);
  const add = (override?: Resolution["override"]): Resolution => ({
    resolved: { action: "ADD", content: candidate.content },
    override,
    decision,
  });
  const t = decision.target;
  const target = typeof t === "number" && Number.isInteger(t) && t >= 0 && t < neighbours.length
    ? neighbours[t]
    : undefined;
  const namedBadTarget = t !== undefined && t !== null && !target;

  switch (decision.action) {
    case "ADD":
      return add();
    case "NOOP":
      if (protectedCandidate) return add("user_stated_always_stored");
      if (namedBadTarget) return add("unknown_target");
      return { resolved: { action: "NOOP", targetId: target?.id }, decision };
    case "UPDATE":
    case "DELETE": {
      if (namedBadTarget) return add("unknown_target");
      if (!target) return add("missing_target");
      if (isProtected(target)) return add("protected_target");
      if (decision.action === "DELETE") {
        return { resolved: { action: "DELETE", targetId: target.id, content: candidate.content }, decision };
      }
      if (protectedCandidate) {
        return { resolved: { action: "UPDATE", targetId: target.id, content: candidate.content }, decision };
      }
      const merged = decision.content ? validateContent(candidate.type, decision.content) : undefined;
      if (!merged?.ok) {
        return {
          resolved: { action: "UPDATE", targetId: target.id, content: candidate.content },
          override: decision.content ? "invalid_merged_content" : undefined,
          decision,
        };
      }
      return { resolved: { action: "UPDATE", targetId: target.id, content: merged.content }, decision };
    }
  }
}

/** Without an LLM: a near-identical neighbour (≥ 0.95) means already known, anything else is new. */
export function decideWithoutLlm(candidate: Candidate, neighbours: Neighbour[], nearIdentical = 0.95): ResolvedAction {
  const best = neighbours[0];
  if (!isProtected(candidate) && best && best.similarity >= nearIdentical) return { action: "NOOP", targetId: best.id };
  return { action: "ADD", content: candidate.content };
}
