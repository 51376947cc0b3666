// Exact token counts with gpt-tokenizer (o200k_base, the GPT-4o family's encoding), so budgets are
// enforced against the same numbers a model sees.
//
// In time linear in the text. The library splits text into pieces (words, number groups,
// punctuation and whitespace runs) and byte-pair merges each piece in time quadratic in its length:
// 100,000 spaces or one 100 KB "word" took 15-25 s, and a 4 MB run of CJK letters overflowed the
// stack of its splitting regex. So the text goes to the library in segments of at most
// SEGMENT_CHARS characters, each a run of whole pieces: cut where no piece spans the cut, the counts
// are exactly the library's. Only a single piece longer than SEGMENT_CHARS (a run of 256 letters,
// spaces or symbols with no break, which no prose or code has) is cut inside, where the count may
// differ from the library's by a token per cut. A window whose characters show that none of its
// pieces can be that long is counted whole (no segments, the same count). Special-token text such
// as `<|endoftext|>` counts as the plain text it is (it would make the library throw).
import { EventLoopSlice } from "./event-loop-slice.ts";
import { countTokens as countPieceTokens, decode, encode, setMergeCacheSize } from "gpt-tokenizer";
import { O200K_TOKEN_SPLIT_REGEX } from "gpt-tokenizer/encodingParams/constants";
import { cutBetweenCharacters, isWhitespace } from "./text-scan.ts";
import { lastCertainBoundary, leastTokens, piecesAreShort, SEGMENT_CHARS, windowBounds } from "./token-windows.ts";

export { SEGMENT_CHARS };

const AS_TEXT = { disallowedSpecial: new Set<string>() };

/**
 * Pieces whose merges the library keeps, least recently used dropped first
 * (docs/operations.md#process-memory-bounds). Its default, 100,000, let text a client chose fill a
 * process: 120,000 distinct 256-letter words took 149 MB of heap, held for the process's life. A
 * piece is at most SEGMENT_CHARS characters, but its tokens are kept with it: this many 256-letter
 * words take 15 MB, pieces of 256 rare CJK letters (763 tokens each) 75 MB, the most a piece can
 * cost. The docs' 424,000 characters have 8,300 distinct pieces, and counted as fast (2,000 would
 * bound it at 15 MB but count them 1.85 times slower).
 */
export const TOKENIZER_MERGE_CACHE_ENTRIES = 10_000;
setMergeCacheSize(TOKENIZER_MERGE_CACHE_ENTRIES);

/**
 * Characters split into segments by this module's own pass of the splitting regex, and characters
 * handed to the library to count (tests count them).
 */
export const tokenizerWork = { segmentedChars: 0, countedChars: 0 };

/**
 * Tests set `whole` to count every text to its end whatever the limit given, as packing did
 * before counts stopped at the room left (the reference the packed texts must equal).
 */
export const tokenCounting = { whole: false };

export function countTokens(text: string): number {
  return countTokensUpTo(text, Number.POSITIVE_INFINITY).tokens;
}

/** A count of text's first characters, or of all of it. */
export interface PartialCount {
  /** The tokens of the first `chars` characters. */
  readonly tokens: number;
  /** text.length when counted whole; otherwise where one of its windows ends. */
  readonly chars: number;
  /** `tokens` when counted whole; otherwise a lower bound of the whole count above the limit it was counted to. */
  readonly atLeast: number;
}

/** Characters per token a window's part is sized by (prose has 4-7; fewer only makes a part longer than needed). */
const PART_CHARS_PER_TOKEN = 4;

/**
 * countTokens until the count passes `limit` (then `atLeast` > limit, and the rest is not read).
 * `from`, a partial count of the same text, is counted on from its `chars`: a window's cut depends
 * only on where it starts, so the windows after it, and the total, are those of a whole count.
 * Under a finite limit a window whose pieces are short is counted in parts, each about as long as
 * the tokens left could fill, cut where no piece spans the cut: their counts add up to the
 * window's, and a line far longer than the room left is read only a little past it.
 */
export function countTokensUpTo(text: string, limit: number, from?: PartialCount): PartialCount {
  if (tokenCounting.whole) limit = Number.POSITIVE_INFINITY;
  if (text.length <= SEGMENT_CHARS) {
    tokenizerWork.countedChars += text.length;
    const n = text.length === 0 ? 0 : countPieceTokens(text, AS_TEXT);
    return { tokens: n, chars: text.length, atLeast: n };
  }
  let total = from?.tokens ?? 0;
  const rest = from?.chars ?? 0;
  if (limit !== Number.POSITIVE_INFINITY) {
    const least = total + leastTokens(text, rest, limit - total);
    if (least > limit) return { tokens: total, chars: rest, atLeast: least };
  }
  for (const [start, end] of windowBounds(text, rest)) {
    const window = text.slice(start, end);
    // A window whose pieces are all short goes to the library whole: its segments would be runs of
    // those same pieces, so the count is the same, without a pass of the splitting regex of our
    // own (two thirds of the time of counting a 4 KB retrieval block).
    if (!piecesAreShort(window)) {
      tokenizerWork.countedChars += window.length;
      for (const segment of windowSegments(window)) total += countPieceTokens(segment, AS_TEXT);
    } else if (limit === Number.POSITIVE_INFINITY) {
      tokenizerWork.countedChars += window.length;
      total += countPieceTokens(window, AS_TEXT);
    } else {
      let n = 0;
      for (let a = start; a < end;) {
        const want = a + Math.max(SEGMENT_CHARS, PART_CHARS_PER_TOKEN * (limit - total - n + 1));
        const cut = want >= end ? end : lastCertainBoundary(text, a, want);
        const partEnd = cut < 0 ? end : cut;
        tokenizerWork.countedChars += partEnd - a;
        n += countPieceTokens(text.slice(a, partEnd), AS_TEXT);
        a = partEnd;
        if (total + n > limit && a < end) return { tokens: total, chars: start, atLeast: total + n };
      }
      total += n;
    }
    if (total > limit && end < text.length) return { tokens: total, chars: end, atLeast: total };
  }
  return { tokens: total, chars: text.length, atLeast: total };
}

/** The tokens of text (segment by segment, as countTokens counts them). */
export function encodeText(text: string, maxTokens = Number.POSITIVE_INFINITY): number[] {
  const out: number[] = [];
  for (const segment of tokenizerSegments(text)) {
    for (const t of encode(segment, AS_TEXT)) out.push(t);
    if (out.length > maxTokens) break;
  }
  return out;
}

/** The longest prefix of text that fits in maxTokens tokens. */
export function truncateToTokens(text: string, maxTokens: number): string {
  if (maxTokens <= 0) return "";
  const tokens = encodeText(text, maxTokens);
  return tokens.length <= maxTokens ? text : decode(tokens.slice(0, maxTokens));
}

/**
 * The segments text is tokenized in, in order (their concatenation is text): runs of the
 * library's pieces of at most SEGMENT_CHARS characters, cut after a piece that does not end in a
 * space (a whitespace piece's extent depends on what follows it); a longer piece is sliced.
 */
export function* tokenizerSegments(text: string): Generator<string> {
  for (const window of windows(text)) yield* windowSegments(window);
}

/**
 * The windows of text (token-windows.ts) the library's splitting regex runs on.
 */
function* windows(text: string): Generator<string> {
  for (const [start, end] of windowBounds(text, 0)) yield text.slice(start, end);
}

/** tokenizerSegments of one window. */
function* windowSegments(window: string): Generator<string> {
  tokenizerWork.segmentedChars += window.length;
  let start = 0; // of the segment being grown, in window
  let cut = 0; // where it may end: after its last piece that does not end in a space
  for (const piece of window.matchAll(O200K_TOKEN_SPLIT_REGEX)) {
    const pieceEnd = piece.index! + piece[0].length;
    if (pieceEnd - start > SEGMENT_CHARS && cut > start) {
      yield window.slice(start, cut);
      start = cut;
    }
    while (pieceEnd - start > SEGMENT_CHARS) {
      const at = cutBetweenCharacters(window, start + SEGMENT_CHARS);
      yield window.slice(start, at);
      start = at;
    }
    const last = window.charCodeAt(pieceEnd - 1);
    if (last === 10 || !isWhitespace(last)) cut = pieceEnd;
  }
  if (start < window.length) yield window.slice(start);
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

/** The texts of a message that count: role, content, name, tool calls, tool call id. */
function countedParts(message: ChatMessageLike): string[] {
  const parts = [message.role, messageText(message.content)];
  if (message.name) parts.push(message.name);
  if (message.tool_calls) parts.push(JSON.stringify(message.tool_calls));
  if (message.tool_call_id) parts.push(message.tool_call_id);
  return parts;
}

export function countMessageTokens(message: ChatMessageLike): number {
  return countedParts(message).reduce((sum, part) => sum + countTokens(part), MESSAGE_OVERHEAD_TOKENS);
}

export function countConversationTokens(messages: readonly ChatMessageLike[], tokensOf = countMessageTokens): number {
  return messages.reduce((sum, m) => sum + tokensOf(m), 3);
}

/**
 * countTokens for text that may be megabytes long (a compaction body is up to 8 MiB, about a second
 * of counting): every SLICE_MS it gives the event loop back (event-loop-slice.ts), so the requests
 * of other tenants on the same server are answered meanwhile instead of waiting for the whole
 * count. `slice`: the request's, when it counts many texts.
 */
export async function countTokensYielding(text: string, slice = new EventLoopSlice()): Promise<number> {
  let total = 0;
  for (const segment of tokenizerSegments(text)) {
    total += countPieceTokens(segment, AS_TEXT);
    if (slice.due()) await slice.yield();
  }
  return total;
}

export interface MessageTokenCounter {
  /** countMessageTokens, each message object counted once (a request counts its messages several times). */
  (message: ChatMessageLike): number;
  /** Counts the messages not counted yet, yielding the event loop as countTokensYielding does. */
  prefill(messages: readonly ChatMessageLike[]): Promise<void>;
}

export function messageTokenCounter(): MessageTokenCounter {
  const counted = new WeakMap<ChatMessageLike, number>();
  const tokensOf = (message: ChatMessageLike) => {
    let n = counted.get(message);
    if (n === undefined) counted.set(message, n = countMessageTokens(message));
    return n;
  };
  tokensOf.prefill = async (messages: readonly ChatMessageLike[]) => {
    const slice = new EventLoopSlice();
    for (const message of messages) {
      if (counted.has(message)) continue;
      let n = MESSAGE_OVERHEAD_TOKENS;
      for (const part of countedParts(message)) n += await countTokensYielding(part, slice);
      counted.set(message, n);
    }
  };
  return tokensOf;
}

/** Text of a message's content: a string, or OpenAI's array of parts (text parts only). */
export function messageText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((
        p,
      ) => (p && typeof p === "object" && typeof (p as { text?: unknown }).text === "string"
        ? (p as { text: string }).text
        : "")
      )
      .join("\n");
  }
  return "";
}
