// Exact token counts with gpt-tokenizer (o200k_base, the GPT-4o family's encoding), so budgets are
// enforced against the same numbers a model sees.
import { countTokens as countTextTokens, decode, encode } from "gpt-tokenizer";

export function countTokens(text: string): number {
  return text.length === 0 ? 0 : countTextTokens(text);
}

/** The longest prefix of text that fits in maxTokens tokens. */
export function truncateToTokens(text: string, maxTokens: number): string {
  if (maxTokens <= 0) return "";
  const tokens = encode(text);
  return tokens.length <= maxTokens ? text : decode(tokens.slice(0, maxTokens));
}

export interface ChatMessageLike {
  role: string;
  content?: unknown;
  name?: string;
  tool_calls?: unknown;
  tool_call_id?: string;
}

/** OpenAI's accounting: every message costs ~4 tokens of framing plus its content and tool calls. */
const MESSAGE_OVERHEAD_TOKENS = 4;

export function countMessageTokens(message: ChatMessageLike): number {
  let total = MESSAGE_OVERHEAD_TOKENS + countTokens(message.role);
  total += countTokens(messageText(message.content));
  if (message.name) total += countTokens(message.name);
  if (message.tool_calls) total += countTokens(JSON.stringify(message.tool_calls));
  if (message.tool_call_id) total += countTokens(message.tool_call_id);
  return total;
}

export function countConversationTokens(messages: readonly ChatMessageLike[]): number {
  return messages.reduce((sum, m) => sum + countMessageTokens(m), 3);
}

/** Text of a message's content: a string, or OpenAI's array of parts (text parts only). */
export function messageText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((p) => (p && typeof p === "object" && typeof (p as { text?: unknown }).text === "string" ? (p as { text: string }).text : ""))
      .join("\n");
  }
  return "";
}
