// Phase 1 of the write path, run by the worker for an 'extract' job: rules + (when configured) one
// LLM call per ~60k-token chunk → validated, scoped, capped candidates for the dedup queue.
import { z } from "zod";
import type { Llm, LlmUsage } from "./llm.ts";
import { ChatMessageSchema } from "./llm.ts";
import { projectName, sessionId, threadId } from "./schemas.ts";
import { type Candidate, prepareCandidates, type PreparedCandidates } from "./candidates.ts";
import { chunkTranscript, extractionMessages, ExtractionOutputSchema } from "./extraction-prompt.ts";
import { extractByRules } from "./rule-extractor.ts";

/** POST body of memory-extract, stored as the job payload. */
export const ExtractRequestSchema = z.object({
  session_id: sessionId,
  messages: z.array(ChatMessageSchema).min(1, "messages must not be empty").max(5000),
  project: projectName.optional(),
  thread_id: threadId.optional(),
}).strict();
export type ExtractRequest = z.infer<typeof ExtractRequestSchema>;

export interface ExtractionResult {
  candidates: Candidate[];
  stats: PreparedCandidates["stats"] & { chunks: number; llm_calls: number; rule_candidates: number; llm_candidates: number; filtered_by_llm: number };
  mode: "llm+rules" | "rules";
  usage?: LlmUsage;
}

export async function runExtraction(
  payload: ExtractRequest,
  deps: { llm?: Llm; namespaceRoot: string; categories: readonly string[]; chunkTokens?: number },
): Promise<ExtractionResult> {
  const rules = extractByRules(payload.messages, { project: payload.project });
  const fromLlm: Candidate[] = [];
  let llmCalls = 0;
  let filtered = 0;
  const usage: LlmUsage = { promptTokens: 0, completionTokens: 0, totalTokens: 0, requests: 0 };
  const chunks = chunkTranscript(payload.messages, deps.chunkTokens ?? 60_000);
  const perChunk: Candidate[][] = [];
  if (deps.llm) {
    for (const chunk of chunks) {
      llmCalls++;
      const out = await deps.llm.completeJson(ExtractionOutputSchema, extractionMessages(chunk, deps.namespaceRoot, payload.project, deps.categories), {
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
    categories: deps.categories,
  });
  return {
    candidates: prepared.candidates,
    stats: { ...prepared.stats, chunks: chunks.length, llm_calls: llmCalls, rule_candidates: rules.length, llm_candidates: fromLlm.length, filtered_by_llm: filtered },
    mode: deps.llm ? "llm+rules" : "rules",
    usage: deps.llm ? usage : undefined,
  };
}
