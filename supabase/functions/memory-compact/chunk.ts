// Which messages a compaction replaces (pure). The oldest ~60k tokens after the system prompt go,
// cut only between "units": an assistant message with tool_calls stays with the tool results that
// answer it (OpenAI rejects a tool message whose call is gone, and a call without its result).
// System/developer messages at the head are never compacted; earlier [Context compacted] markers
// are replaced (their summary is the prior summary the LLM merges).
import { countMessageTokens, messageText } from "../_shared/tokens.ts";
import type { ChatMessage } from "../_shared/llm.ts";

export const MARKER = "[Context compacted]";

export function isMarker(m: ChatMessage): boolean {
  return m.role === "user" && typeof m.content === "string" && m.content.startsWith(MARKER);
}

/** Consecutive messages that must stay together: [assistant with tool_calls, ...its tool results]. */
export function groupUnits(messages: ChatMessage[]): ChatMessage[][] {
  const units: ChatMessage[][] = [];
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    if (m.role === "assistant" && Array.isArray(m.tool_calls) && m.tool_calls.length > 0) {
      const ids = new Set(m.tool_calls.map((c) => c.id));
      const unit: ChatMessage[] = [m];
      while (i + 1 < messages.length) {
        const next = messages[i + 1]!;
        if (next.role !== "tool" || !ids.has(next.tool_call_id)) break;
        unit.push(next);
        i++;
      }
      units.push(unit);
    } else {
      units.push([m]);
    }
  }
  return units;
}

export interface CompactionPlan {
  head: ChatMessage[];
  /** Text of earlier markers (prior summaries carried in the conversation). */
  inlinePriorSummary?: string;
  chunk: ChatMessage[];
  rest: ChatMessage[];
  chunkTokens: number;
}

export interface PlanOptions {
  totalTokens: number;
  triggerTokens: number;
  targetChunkTokens: number;
  /** Room the summary will take, so the result ends under the trigger. */
  summaryReserveTokens: number;
  /** How a message is counted (default countMessageTokens; the handler passes a memoized one). */
  tokensOf?: (m: ChatMessage) => number;
}

/** Undefined when nothing can be compacted (only the head and a single unit). */
export function planCompaction(messages: ChatMessage[], opts: PlanOptions): CompactionPlan | undefined {
  let i = 0;
  const head: ChatMessage[] = [];
  while (i < messages.length && (messages[i]!.role === "system" || messages[i]!.role === "developer")) {
    head.push(messages[i++]!);
  }
  const markers: string[] = [];
  const body: ChatMessage[] = [];
  for (; i < messages.length; i++) {
    const m = messages[i]!;
    if (isMarker(m)) markers.push(messageText(m.content).slice(MARKER.length).trim());
    else body.push(m);
  }
  const units = groupUnits(body);
  if (units.length < 2) return undefined;
  // Enough to get back under the trigger even when the chunk target alone would not be.
  const tokensOf = opts.tokensOf ?? countMessageTokens;
  const markerTokens = messages.filter(isMarker).reduce((s, m) => s + tokensOf(m), 0);
  const need = Math.max(
    opts.targetChunkTokens,
    opts.totalTokens - markerTokens - opts.triggerTokens + opts.summaryReserveTokens,
  );
  let taken = 0;
  let chunkTokens = 0;
  // Always keep the last unit (the turn being answered).
  while (taken < units.length - 1 && chunkTokens < need) {
    chunkTokens += units[taken]!.reduce((s, m) => s + tokensOf(m), 0);
    taken++;
  }
  return {
    head,
    inlinePriorSummary: markers.length > 0 ? markers.join("\n\n") : undefined,
    chunk: units.slice(0, taken).flat(),
    rest: units.slice(taken).flat(),
    chunkTokens,
  };
}

/** Tokens a message of the model's part keeps at least when one unit alone is over the part: its start. */
export const MIN_SHOWN_TOKENS = 200;
/** What a message's block adds to its text in the prompt (its role, call id, a cut's note). */
export const BLOCK_OVERHEAD_TOKENS = 20;

export interface ModelPart {
  /** The chunk's part too old for the model to read whole (given to it as lines). */
  older: ChatMessage[];
  shown: ChatMessage[];
  /** Tokens each shown message keeps at most (its block: BLOCK_OVERHEAD_TOKENS more). */
  messageTokens: number;
}

/**
 * The part of a chunk the model is shown: its newest units within maxTokens, and the older ones
 * before them. A list far over the trigger makes a chunk far over the target (planCompaction takes
 * what brings it back under), and a prompt of all of it is one no model's window takes (a 403k-token
 * list made a 249k-token prompt): the older units are summarised without the model and given to it
 * as prior context instead. When the newest unit alone is over maxTokens (one turn whose tool calls
 * brought back dozens of long results: 40 made a 129k-token prompt for a target of 8k), its messages
 * are shown cut to their start, each at least MIN_SHOWN_TOKENS, the newest that fit, and the rest of
 * it goes with the older part. `tokensOf`: a message as the prompt shows it, at most
 * `maxMessageTokens`.
 */
export function splitForModel(
  chunk: ChatMessage[],
  maxTokens: number,
  tokensOf: (m: ChatMessage) => number,
  maxMessageTokens: number,
): ModelPart {
  const units = groupUnits(chunk);
  let first = units.length;
  let tokens = 0;
  while (first > 0) {
    const unitTokens = units[first - 1]!.reduce((s, m) => s + tokensOf(m) + BLOCK_OVERHEAD_TOKENS, 0);
    if (first < units.length && tokens + unitTokens > maxTokens) break;
    tokens += unitTokens;
    first--;
  }
  if (first < units.length - 1 || tokens <= maxTokens) {
    return { older: units.slice(0, first).flat(), shown: units.slice(first).flat(), messageTokens: maxMessageTokens };
  }
  const unit = units.at(-1)!;
  const shownCount = Math.min(
    unit.length,
    Math.max(1, Math.floor(maxTokens / (MIN_SHOWN_TOKENS + BLOCK_OVERHEAD_TOKENS))),
  );
  const messageTokens = Math.floor(maxTokens / shownCount) - BLOCK_OVERHEAD_TOKENS;
  return {
    older: [...units.slice(0, -1).flat(), ...unit.slice(0, unit.length - shownCount)],
    shown: unit.slice(unit.length - shownCount),
    messageTokens: Math.max(MIN_SHOWN_TOKENS, Math.min(maxMessageTokens, messageTokens)),
  };
}
