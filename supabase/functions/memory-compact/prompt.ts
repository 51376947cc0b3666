// The compaction prompt (seed 000 "Context Compaction"): one call → merged summary + candidates.
import { z } from "zod";
import type { PromptMessage } from "../_shared/llm.ts";
import { countTokens, messageText, truncateToTokens } from "../_shared/tokens.ts";
import { BLOCK_OVERHEAD_TOKENS } from "./chunk.ts";
import type { ChatMessage } from "../_shared/llm.ts";
import { CandidateSchema } from "../_shared/candidates.ts";
import { categoryInstruction, namespaceInstruction, renderMessage } from "../_shared/extraction-prompt.ts";
import type { ScopeRequest } from "../_shared/scopes.ts";
import { addCounts, type RedactionCounts } from "../_shared/redact.ts";
import type { MessageRedactor, RedactedMessage } from "./redacted.ts";

export const COMPACTION_MARK = "You compact the oldest part of a coding agent's conversation";
/** Heads the lines of a chunk's part too old for the model to read whole (handler.ts). */
export const OLDER_TITLE = "Requests, tool calls and outcomes of the oldest part of the conversation to compact:";
/** A message's tokens at most, as the prompt shows it (renderMessage cuts the rest). */
export const PROMPT_MESSAGE_TOKENS = 4000;

export const CompactionOutputSchema = z.object({
  summary: z.string().min(1).max(60_000),
  candidates: z.array(CandidateSchema).max(20).default([]),
});
export type CompactionOutput = z.infer<typeof CompactionOutputSchema>;

/** `chunk` and `priorSummary` redacted already (redacted.ts): the model is shown no secret. */
export function compactionMessages(
  chunk: RedactedMessage[],
  priorSummary: string | undefined,
  root: string,
  req: ScopeRequest,
  categories: readonly string[] = [],
  messageTokens = PROMPT_MESSAGE_TOKENS,
): PromptMessage[] {
  const transcript = chunk.map((m) => shownBlock(m, messageTokens)).join("\n\n");
  return [
    {
      role: "system",
      content: [
        `${COMPACTION_MARK} into a summary that replaces it, and extract long-term memories from it.`,
        "Summary (about 3,000-5,000 tokens) keeps: key decisions made and why; tool calls that succeeded or failed and their outcomes; unresolved questions and pending tasks; the current state of work (what is done, what is next).",
        "Summary drops: full file contents from read calls, verbose bash/tool output, repeated failed attempts (keep only the final working version).",
        priorSummary
          ? "A PRIOR SUMMARY of even older context is given: produce ONE merged summary covering both (progressive compression)."
          : "",
        "Candidates: what from this part would help do a better job next time (corrections by the user weigh highest); at most 5; same fields and writing rules as memory extraction:",
        "semantic = third person, no pronouns, 1-2 sentences, at most 280 characters; episodic = past tense; procedural = imperative steps.",
        namespaceInstruction(root, req),
        categoryInstruction(categories),
      ].filter(Boolean).join("\n"),
    },
    {
      role: "user",
      content: `${priorSummary ? `PRIOR SUMMARY:\n${priorSummary}\n\n` : ""}CONVERSATION TO COMPACT:\n\n${transcript}`,
    },
  ];
}

/**
 * A message as the model is shown it, within `tokens` and its block's overhead: a tool call's
 * arguments are cut at 300 tokens each (renderMessage), so a message of 40 calls held 12k tokens
 * past the message's 4,000.
 */
function shownBlock(m: RedactedMessage, tokens: number): string {
  const block = renderMessage(m, tokens, (s) => s);
  const kept = truncateToTokens(block, tokens + BLOCK_OVERHEAD_TOKENS - 5);
  return kept.length === block.length ? block : `${kept} …[cut]`;
}

/**
 * Without an LLM (or when it fails): a deterministic, extractive summary: the prior summary's first
 * 4,000 characters, then every user request, every tool call with its outcome's first line, and the
 * last assistant statements, the most recent within budget (they describe the current state of
 * work). Each text is redacted before it is cut or its whitespace collapsed: the summary is stored
 * and read back into the next compaction's prompt, and a key cut in two, or `password: hunter2` no
 * longer alone on its line, is a secret the redactor no longer recognises (docs/redaction.md).
 * Lines are made newest first and only until the budget is full: a message whose line would not be
 * kept is not redacted (`redactor` holds what the request redacted already). `counts`: the secrets
 * redacted in the lines the summary keeps.
 */
export async function extractiveSummary(
  chunk: ChatMessage[],
  priorSummary: string | undefined,
  redactor: MessageRedactor,
  maxTokens = 4000,
  title = "Extractive summary (no LLM available): requests, tool calls and outcomes of the compacted part.",
): Promise<{ text: string; counts: RedactionCounts }> {
  const out: string[] = [title];
  let used = countTokens(title);
  const counts: RedactionCounts = {};
  // The prior summary's line is kept first: this summary replaces it, so a prior left out here
  // would be lost with everything earlier compactions replaced.
  if (priorSummary) {
    const prior = await redactor.text(priorSummary);
    const earlier = `Earlier: ${prior.text.slice(0, 4000)}`;
    out.push(earlier);
    used += countTokens(earlier) + 1;
    addCounts(counts, prior.counts);
  }
  const kept: string[] = [];
  let omitted = 0;
  for (let i = chunk.length - 1; i >= 0; i--) {
    if (!hasLine(chunk[i]!)) continue;
    if (omitted > 0) {
      omitted++;
      continue;
    }
    const m = await redactor.message(chunk[i]!);
    const text = summaryLine(m);
    if (!text) continue; // blank where the line would read it
    const t = countTokens(text) + 1;
    if (used + t > maxTokens) {
      omitted++;
      continue;
    }
    kept.unshift(text);
    addCounts(counts, m.tool_calls ? m.counts.calls : m.counts.content);
    used += t;
  }
  if (omitted > 0) out.push(`(${omitted} older lines omitted)`);
  return { text: [...out, ...kept].join("\n"), counts };
}

/** Whether `m` has a line in the extractive summary (read as sent: redaction keeps text text). */
function hasLine(m: ChatMessage): boolean {
  if (m.role === "assistant" && m.tool_calls?.length) return true;
  return (m.role === "user" || m.role === "tool" || m.role === "assistant") && /\S/.test(messageText(m.content));
}

/** Characters of a summary line's tool calls (a user's line keeps 300). */
const CALLS_LINE_CHARS = 600;

function summaryLine(m: RedactedMessage): string | undefined {
  if (m.tool_calls) {
    // At most CALLS_LINE_CHARS of calls: a line over the budget was left out, and every line
    // before it (200 calls: the summary kept nothing of the part, its request included).
    const calls = m.tool_calls.map((c) => `${c.function.name}(${c.function.arguments.slice(0, 120)})`);
    let shown = 1;
    for (let chars = calls[0]!.length; shown < calls.length && chars + calls[shown]!.length <= CALLS_LINE_CHARS;) {
      chars += calls[shown++]!.length + 2;
    }
    const more = calls.length - shown;
    return `- Tool calls: ${calls.slice(0, shown).join(", ")}${more > 0 ? ` (+${more} more)` : ""}`;
  }
  // The lines keep at most 300 characters: collapse only the start of a long message.
  const text = m.content.slice(0, 4000).replace(/\s+/g, " ").trim();
  if (!text) return undefined;
  if (m.role === "user") return `- User: ${text.slice(0, 300)}`;
  if (m.role === "tool") return `  → ${text.slice(0, 160)}`;
  return `- Assistant: ${text.slice(0, 200)}`;
}
