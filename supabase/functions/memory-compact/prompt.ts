// The compaction prompt (seed 000 "Context Compaction"): one call → merged summary + candidates.
import { z } from "zod";
import type { PromptMessage } from "../_shared/llm.ts";
import { countTokens, messageText } from "../_shared/tokens.ts";
import type { ChatMessage } from "../_shared/llm.ts";
import { CandidateSchema } from "../_shared/candidates.ts";
import { categoryInstruction, namespaceInstruction, renderMessage } from "../_shared/extraction-prompt.ts";
import type { ScopeRequest } from "../_shared/scopes.ts";
import { addCounts, type RedactionCounts, redactSecrets } from "../_shared/redact.ts";
import { redactString } from "../_shared/redact-json.ts";

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

export function compactionMessages(
  chunk: ChatMessage[],
  priorSummary: string | undefined,
  root: string,
  req: ScopeRequest,
  categories: readonly string[] = [],
): PromptMessage[] {
  const transcript = chunk.map((m) => renderMessage(m, PROMPT_MESSAGE_TOKENS)).join("\n\n");
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
      content: `${
        priorSummary ? `PRIOR SUMMARY:\n${redactSecrets(priorSummary).text}\n\n` : ""
      }CONVERSATION TO COMPACT:\n\n${transcript}`,
    },
  ];
}

/**
 * Without an LLM (or when it fails): a deterministic, extractive summary: every user request,
 * every tool call with its outcome's first line, and the last assistant statements, cut to budget.
 * Each text is redacted before it is cut or its whitespace collapsed: the summary is stored and read
 * back into the next compaction's prompt, and a key cut in two, or `password: hunter2` no longer
 * alone on its line, is a secret the redactor no longer recognises (docs/redaction.md). `counts`:
 * the secrets redacted in the lines the summary keeps.
 */
export function extractiveSummary(
  chunk: ChatMessage[],
  priorSummary: string | undefined,
  maxTokens = 4000,
  title = "Extractive summary (no LLM available): requests, tool calls and outcomes of the compacted part.",
): { text: string; counts: RedactionCounts } {
  const lines: { text: string; counts: RedactionCounts }[] = [];
  let counts: RedactionCounts = {};
  const clean = (s: string) => {
    const r = redactString(s);
    counts = addCounts(counts, r.counts);
    return r.text;
  };
  const line = (text: string) => {
    lines.push({ text, counts });
    counts = {};
  };
  if (priorSummary) line(`Earlier: ${clean(priorSummary).slice(0, 4000)}`);
  for (const m of chunk) {
    counts = {};
    // The lines keep at most 300 characters: collapse only the start of a long message.
    const calls = m.role === "assistant" && m.tool_calls?.length ? m.tool_calls : undefined;
    const text = calls ? "" : clean(messageText(m.content)).slice(0, 4000).replace(/\s+/g, " ").trim();
    if (m.role === "user" && text) line(`- User: ${text.slice(0, 300)}`);
    else if (calls) {
      line(
        `- Tool calls: ${
          calls.map((c) => `${clean(c.function.name)}(${clean(c.function.arguments).slice(0, 120)})`).join(", ")
        }`,
      );
    } else if (m.role === "tool" && text) line(`  → ${text.slice(0, 160)}`);
    else if (m.role === "assistant" && text) line(`- Assistant: ${text.slice(0, 200)}`);
  }
  const out: string[] = [title];
  let used = countTokens(out[0]!);
  let keptCounts: RedactionCounts = {};
  // The prior summary's line is kept first: this summary replaces it, so a prior left out here
  // would be lost with everything earlier compactions replaced.
  const earlier = priorSummary ? lines.shift()! : undefined;
  if (earlier) {
    out.push(earlier.text);
    used += countTokens(earlier.text) + 1;
    keptCounts = addCounts(keptCounts, earlier.counts);
  }
  // Keep the most recent lines when over budget: they describe the current state of work.
  const kept: string[] = [];
  for (let i = lines.length - 1; i >= 0; i--) {
    const t = countTokens(lines[i]!.text) + 1;
    if (used + t > maxTokens) break;
    kept.unshift(lines[i]!.text);
    keptCounts = addCounts(keptCounts, lines[i]!.counts);
    used += t;
  }
  if (kept.length < lines.length) out.push(`(${lines.length - kept.length} older lines omitted)`);
  return { text: [...out, ...kept].join("\n"), counts: keptCounts };
}
