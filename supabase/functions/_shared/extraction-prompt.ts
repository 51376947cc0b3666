// The extraction prompt (seed 000 "Memory Extraction") and the transcript the LLM reads.
import { z } from "zod";
import { CandidateSchema } from "./candidates.ts";
import { countTokensYielding, messageText, truncateToTokens } from "./tokens.ts";
import { EventLoopSlice } from "./event-loop-slice.ts";
import type { PromptMessage } from "./llm.ts";
import { projectScope } from "./schemas.ts";
import { redactString } from "./redact-json.ts";
import type { ScopeRequest } from "./scopes.ts";

export const ExtractionOutputSchema = z.object({
  stored: z.array(CandidateSchema).max(20),
  filtered: z.array(z.object({ content: z.string(), reason: z.string() })).max(50).default([]),
});
export type ExtractionOutput = z.infer<typeof ExtractionOutputSchema>;

/** The prompt line offering the configured categories (seed 001 §5); none configured, no line. */
export function categoryInstruction(categories: readonly string[]): string {
  if (categories.length === 0) return "";
  return `- category (optional): the one of these that fits best, or omit it: ${categories.join(", ")}.`;
}

/**
 * The prompt line saying where a memory may go: only the scopes the request allows (scopes.ts), so
 * a session that names no project is never offered the global scope unless it asked for it.
 */
export function namespaceInstruction(root: string, req: ScopeRequest): string {
  const options: string[] = [];
  if (req.project !== undefined) {
    options.push(`${projectScope(root, req.project)}/<topic> for knowledge about project ${req.project}`);
  }
  options.push(
    `${root}/user/preferences for the user's preferences`,
    `${root}/user/<topic> for what holds for this user in every project`,
  );
  if (req.scope === "global") options.push(`${root}/global/<topic> for universal lessons`);
  return `- namespace: one of ${options.join("; ")}.`;
}

export function extractionSystemPrompt(root: string, req: ScopeRequest, categories: readonly string[] = []): string {
  return [
    "You review a finished conversation between a user and DevAI, a coding agent, and extract long-term memories.",
    "Question to answer: What from this conversation would help you do a better job next time?",
    "",
    "Priority levels (weight user corrections HIGHEST):",
    '1. highest: user-stated ("remember this", corrections made mid-task such as "no, that path is X not Y"). source: user_stated or correction. Always store.',
    "2. high: error-to-resolution pairs (something failed, then got fixed). source: error_resolution.",
    "3. medium: successful patterns (multi-step tool chains that completed cleanly). source: pattern.",
    "4. low: discovered facts (project structure, file locations, config details). source: discovery.",
    "",
    "Store: successful multi-step tool chains (the how), user corrections, errors and how they were resolved, architectural facts about the project, tool argument patterns that worked.",
    "Filter out (list them under `filtered` with a reason): casual conversation and greetings, intermediate reasoning that led nowhere, verbose tool output (file contents, log dumps), information already in project docs.",
    "",
    "Writing rules for every stored memory:",
    "- semantic: a complete, self-contained, third-person statement with no pronouns (never I, we, you); neutral tone; 1-2 sentences; at most 280 characters.",
    "- episodic: past tense; 1-2 sentences; what was discussed, decided or done.",
    "- procedural: the steps of a workflow in imperative mood, 1-2 sentences.",
    "- importance: 1 (trivia) to 5 (critical).",
    "- summary: the memory in at most 15 words; compressed: a few words as `topic: key→value (reason)`, e.g. `auth: JWT→sessions (token size)`; index_key: 1-3 words in snake_case naming its topic, e.g. `auth_refactor`.",
    categoryInstruction(categories),
    namespaceInstruction(root, req),
    "- At most 5 stored memories, the most useful first. An empty list is a fine answer.",
  ].filter((line) => line !== "").join("\n");
}

interface MessageLike {
  role: string;
  content?: unknown;
  tool_calls?: unknown;
  tool_call_id?: string;
  name?: string;
}

/**
 * One line block per message; verbose contents cut (the prompt tells the model to drop them anyway).
 * Every transcript a model reads goes through here, so no secret reaches a model (redact.ts).
 */
export function renderMessage(
  m: MessageLike,
  maxTokensPerMessage = 2000,
  clean: (s: string) => string = (s) => redactString(s).text,
): string {
  // Every caller-given string shown to the model is redacted, ids and names too. `clean`: how
  // (compaction passes messages it redacted once for the whole request, memory-compact/redacted.ts).
  const text = truncateWithNote(clean(messageText(m.content)), maxTokensPerMessage);
  if (m.role === "assistant" && Array.isArray(m.tool_calls) && m.tool_calls.length > 0) {
    const calls = m.tool_calls.map((c: { id?: string; function?: { name?: string; arguments?: string } }) =>
      `${clean(c.function?.name ?? "tool")}(${truncateWithNote(clean(c.function?.arguments ?? ""), 300)}) [call ${
        clean(c.id ?? "?")
      }]`
    ).join("; ");
    return `[assistant]${text ? ` ${text}` : ""}\n[assistant → tool calls] ${calls}`;
  }
  if (m.role === "tool") return `[tool result for ${clean(m.tool_call_id ?? "?")}] ${text}`;
  return `[${m.role}] ${text}`;
}

/**
 * The first maxTokens tokens of text, and how much was cut. Only the kept part is tokenized, so a
 * message of megabytes costs no more than one of maxTokens tokens.
 */
function truncateWithNote(text: string, maxTokens: number): string {
  const kept = truncateToTokens(text, maxTokens);
  return kept.length === text.length ? text : `${kept} …[${text.length - kept.length} characters cut]`;
}

/**
 * Splits a transcript into chunks of about maxTokens, on message boundaries. Counting a queued
 * transcript of megabytes takes the worker seconds (a 7 MB one, 0.7-1.5 s; of rare words, 20 s): it
 * gives the event loop back every SLICE_MS (event-loop-slice.ts), as the requests' passes do.
 */
export async function chunkTranscript(
  messages: MessageLike[],
  maxTokens = 60_000,
  slice = new EventLoopSlice(),
): Promise<string[]> {
  const chunks: string[] = [];
  let current: string[] = [];
  let size = 0;
  for (const m of messages) {
    if (m.role === "system" || m.role === "developer") continue; // the agent's own prompt: not conversation
    const block = renderMessage(m);
    const t = await countTokensYielding(block, slice);
    if (size + t > maxTokens && current.length > 0) {
      chunks.push(current.join("\n\n"));
      current = [];
      size = 0;
    }
    current.push(block);
    size += t;
  }
  if (current.length > 0) chunks.push(current.join("\n\n"));
  return chunks;
}

/** The model's view of a job's transcript: its chunks, and the context shown before each. */
export interface TranscriptChunks {
  chunks: string[];
  context?: string;
}

/** Chunks an extract job's messages (and its context) for the model: a pass over the whole transcript (extract-job.ts takes a turn for it). */
export async function transcriptChunks(
  payload: { messages: MessageLike[]; context?: MessageLike[] },
  chunkTokens = 60_000,
  slice = new EventLoopSlice(),
): Promise<TranscriptChunks> {
  const chunks = await chunkTranscript(payload.messages, chunkTokens, slice);
  const context = payload.context && payload.context.length > 0
    ? (await chunkTranscript(payload.context, 4_000, slice)).at(-1)
    : undefined;
  return { chunks, context };
}

/**
 * The extraction request for one chunk. `context` (rendered earlier messages that an earlier job
 * already extracted from) is shown before it so the chunk makes sense, marked as not to extract from.
 */
export function extractionMessages(
  chunk: string,
  root: string,
  req: ScopeRequest,
  categories: readonly string[] = [],
  context?: string,
): PromptMessage[] {
  const header = `Conversation${req.project !== undefined ? ` (project: ${req.project})` : ""}`;
  const body = context
    ? `EARLIER IN THIS CONVERSATION (already reviewed: context only, extract nothing from it):\n\n${context}\n\n${header}, the new part to review:\n\n${chunk}`
    : `${header}:\n\n${chunk}`;
  return [
    { role: "system", content: extractionSystemPrompt(root, req, categories) },
    { role: "user", content: body },
  ];
}
