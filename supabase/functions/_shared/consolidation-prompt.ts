// The consolidation prompt: the extraction prompt (same priorities, writing rules, categories and
// scopes as memory-extract, extraction-prompt.ts) over a session's episodes shown as numbered
// messages [#n], plus two fields per stored memory: `sources`, the numbers of the messages it comes
// from (mapped back to episode ids server-side, so the model can neither invent nor reach an id),
// and `entities`, what it names. docs/graph.md#consolidation.
import { z } from "zod";
import { CandidateSchema } from "./candidates.ts";
import { EntityMentionSchema } from "./entities.ts";
import { extractionSystemPrompt, renderMessage } from "./extraction-prompt.ts";
import type { PromptMessage } from "./llm.ts";
import { countTokensYielding } from "./tokens.ts";
import { EventLoopSlice } from "./event-loop-slice.ts";

export const ConsolidationOutputSchema = z.object({
  stored: z.array(CandidateSchema.extend({
    sources: z.array(z.number().int()).max(50).default([]),
    entities: z.array(EntityMentionSchema).max(20).default([]),
  })).max(20),
  filtered: z.array(z.object({ content: z.string(), reason: z.string() })).max(50).default([]),
});
export type ConsolidationOutput = z.infer<typeof ConsolidationOutputSchema>;

export interface EpisodeText {
  role: string;
  content: string;
}

/**
 * Numbered episodes in chunks of about maxTokens; each chunk knows the numbers it shows. Counted a
 * slice at a time (a session's 2,000 episodes of up to 4,000 characters: 8 M), as chunkTranscript counts.
 */
export async function chunkEpisodes(
  episodes: readonly EpisodeText[],
  maxTokens = 60_000,
  slice = new EventLoopSlice(),
): Promise<{ text: string; first: number; last: number }[]> {
  const chunks: { text: string; first: number; last: number }[] = [];
  let lines: string[] = [];
  let size = 0;
  let first = 0;
  for (const [i, e] of episodes.entries()) {
    const line = `[#${i}] ${renderMessage(e)}`;
    const t = await countTokensYielding(line, slice);
    if (size + t > maxTokens && lines.length > 0) {
      chunks.push({ text: lines.join("\n\n"), first, last: i - 1 });
      lines = [];
      size = 0;
      first = i;
    }
    lines.push(line);
    size += t;
  }
  if (lines.length > 0) chunks.push({ text: lines.join("\n\n"), first, last: episodes.length - 1 });
  return chunks;
}

export function consolidationMessages(
  chunk: string,
  root: string,
  project?: string,
  categories: readonly string[] = [],
): PromptMessage[] {
  return [
    {
      role: "system",
      content: [
        extractionSystemPrompt(root, { project }, categories),
        "",
        "The conversation is given as numbered messages [#n]. For every stored memory also give:",
        "- sources: the numbers n of the messages it comes from (at least one; only numbers shown).",
        "- entities: what it names, each as {name, type} with type one of person, project, organization, place, concept, tool, file, package, service, function, command, error.",
        "Store facts, procedures and the user's preferences (semantic, in the user's preferences scope) that will still matter in a later session.",
      ].join("\n"),
    },
    { role: "user", content: `Conversation${project ? ` (project: ${project})` : ""}:\n\n${chunk}` },
  ];
}
