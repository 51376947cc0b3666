// Phase 1 of the write path, run by the worker for an 'extract' job: rules + (when configured) one
// LLM call per ~60k-token chunk → validated, scoped, capped candidates for the dedup queue.
//
// Extraction is incremental per session: memory-extract queues only the messages no earlier job of
// the session covers (`messages`, starting at `offset` in the session's transcript), plus a few
// messages before them as `context`. The model reads the context to understand the new part but is
// told to extract nothing from it; the rule-based extractor never sees it.
import { z } from "zod";
import type { Llm, LlmUsage } from "./llm.ts";
import { ChatMessageSchema } from "./llm.ts";
import { codeOrigin, projectName, sessionId, threadId } from "./schemas.ts";
import { type Candidate, prepareCandidates, type PreparedCandidates } from "./candidates.ts";
import { chunkTranscript, extractionMessages, ExtractionOutputSchema } from "./extraction-prompt.ts";
import { extractByRules } from "./rule-extractor.ts";
import { defaultScope, writeScope } from "./scopes.ts";

/** How many already-extracted messages an incremental job carries as context. */
export const CONTEXT_MESSAGES = 6;

/** Payload of an 'extract' job (queued by memory-extract). */
export const ExtractJobPayloadSchema = z.object({
  session_id: sessionId,
  /** The messages to extract from: the part of the transcript no earlier job covered. */
  messages: z.array(ChatMessageSchema).min(1).max(1_000_000),
  /** Already-extracted messages just before `messages`, for context only. */
  context: z.array(ChatMessageSchema).max(CONTEXT_MESSAGES).default([]),
  /** Index of messages[0] in the session's transcript (0: the whole transcript). */
  offset: z.number().int().min(0).default(0),
  project: projectName.optional(),
  /** Where the session's memories go without a namespace of their own (scopes.ts). */
  scope: writeScope.optional(),
  thread_id: threadId.optional(),
  /** Repository, branch and commit the session's memories come from. */
  lineage: codeOrigin.optional(),
}).strict();
export type ExtractJobPayload = z.input<typeof ExtractJobPayloadSchema>;

export interface ExtractionResult {
  candidates: Candidate[];
  stats: PreparedCandidates["stats"] & { chunks: number; llm_calls: number; rule_candidates: number; llm_candidates: number; filtered_by_llm: number };
  mode: "llm+rules" | "rules";
  usage?: LlmUsage;
}

export async function runExtraction(
  payload: ExtractJobPayload,
  deps: { llm?: Llm; namespaceRoot: string; categories: readonly string[]; chunkTokens?: number },
): Promise<ExtractionResult> {
  const rules = extractByRules(payload.messages, { namespace: defaultScope(deps.namespaceRoot, payload) });
  const fromLlm: Candidate[] = [];
  let llmCalls = 0;
  let filtered = 0;
  const usage: LlmUsage = { promptTokens: 0, completionTokens: 0, totalTokens: 0, requests: 0 };
  const chunks = chunkTranscript(payload.messages, deps.chunkTokens ?? 60_000);
  const context = payload.context && payload.context.length > 0 ? chunkTranscript(payload.context, 4_000).at(-1) : undefined;
  const perChunk: Candidate[][] = [];
  if (deps.llm) {
    for (const chunk of chunks) {
      llmCalls++;
      const out = await deps.llm.completeJson(ExtractionOutputSchema, extractionMessages(chunk, deps.namespaceRoot, payload, deps.categories, context), {
        name: "memory_extraction",
      });
      usage.promptTokens += out.usage.promptTokens;
      usage.completionTokens += out.usage.completionTokens;
      usage.totalTokens += out.usage.totalTokens;
      usage.requests += out.usage.requests;
      filtered += out.value.filtered.length;
      perChunk.push(out.value.stored);
      fromLlm.push(...out.value.stored);
    }
  }
  // Rules find the user's own words (user-stated, uncapped); each chunk's LLM proposals are capped
  // on their own (≤ 5 per chunk) and can never be user-stated.
  const prepared = prepareCandidates({ stated: rules, proposed: perChunk }, {
    root: deps.namespaceRoot,
    project: payload.project,
    scope: payload.scope,
    categories: deps.categories,
  });
  return {
    candidates: prepared.candidates,
    stats: { ...prepared.stats, chunks: chunks.length, llm_calls: llmCalls, rule_candidates: rules.length, llm_candidates: fromLlm.length, filtered_by_llm: filtered },
    mode: deps.llm ? "llm+rules" : "rules",
    usage: deps.llm ? usage : undefined,
  };
}
