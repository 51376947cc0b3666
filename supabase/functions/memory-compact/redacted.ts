// What compaction reads of the request's messages, redacted once a request and only as far as it is
// read. The model's prompt shows at most 4,000 tokens of a message and the extractive summary 300
// characters of one, yet every message was redacted whole for the prompt (shown, or as the older
// part's lines) and again by the fallback summary when the model failed: an 8 MiB list of small
// JSON messages spent 1.7 s a pass in redactString, in one synchronous stretch (other tenants'
// requests on the instance waited), and a single 8 MiB tool output took 1.9 s in one call. Here a message is redacted
// on first use and kept for the request, each text at most READ_CHARS + TAIL_CHARS long (a few ms
// of work), and the event loop is given back between texts every SLICE_MS (event-loop-slice.ts).
import type { ChatMessage } from "../_shared/llm.ts";
import { addCounts, type RedactionCounts } from "../_shared/redact.ts";
import { redactString } from "../_shared/redact-json.ts";
import { EventLoopSlice } from "../_shared/event-loop-slice.ts";
import { messageText } from "../_shared/tokens.ts";
import { cutBetweenCharacters } from "../_shared/text-scan.ts";

/** Characters of a text compaction may show: 4,000 tokens of a message are seldom more than 16k. */
export const READ_CHARS = 32 * 1024;
/**
 * Characters after READ_CHARS that are redacted with them and then dropped: a secret the cut splits
 * is no longer one the redactor knows (a JWT without its signature, 19 characters of a key), and
 * what it leaves in the text is at its end, at most the longest secret's length (a JWT, 16k).
 */
export const TAIL_CHARS = 32 * 1024;

/** Texts up to this long are kept by value for the request (V8 hashes them by their characters). */
const SHORT_TEXT = 1024;

/** A message as compaction reads it: every string it shows, redacted (`renderMessage` needs no more). */
export interface RedactedMessage {
  readonly redacted: true;
  role: string;
  content: string;
  tool_calls?: { id: string; type: "function"; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
  /** Secrets replaced in the content, and in the tool calls' names and arguments. */
  counts: { content: RedactionCounts; calls: RedactionCounts };
}

export interface RedactedText {
  text: string;
  /** Secrets replaced in the part read (the dropped tail's included). */
  counts: RedactionCounts;
}

export class MessageRedactor {
  /** Work done for this request: texts and characters passed to the redactor. */
  readonly work = { texts: 0, chars: 0 };
  #messages = new WeakMap<ChatMessage, RedactedMessage>();
  /**
   * Short texts (tool names, call ids) by value. Not long ones: V8 hashes a string of over 16k
   * characters by its length alone, so a map of hundreds of such texts of one length compares
   * each new one with all of them (200 texts of 40k characters: 130 ms, 400: 430 ms).
   */
  #texts = new Map<string, RedactedText>();
  /** The last long text (the prior summary is read by the prompt and by the fallback summary). */
  #long?: { text: string; out: RedactedText };
  #slice = new EventLoopSlice();

  /** `m` redacted (once a request). */
  async message(m: ChatMessage): Promise<RedactedMessage> {
    const done = this.#messages.get(m);
    if (done) return done;
    const content = await this.text(messageText(m.content));
    const calls = m.role === "assistant" && m.tool_calls?.length ? m.tool_calls : undefined;
    const callCounts: RedactionCounts = {};
    const tool_calls = [];
    for (const c of calls ?? []) {
      const name = await this.text(c.function.name);
      const args = await this.text(c.function.arguments);
      addCounts(addCounts(callCounts, name.counts), args.counts);
      const id = (await this.text(c.id)).text;
      tool_calls.push({ id, type: "function" as const, function: { name: name.text, arguments: args.text } });
    }
    const out: RedactedMessage = {
      redacted: true,
      role: m.role,
      content: content.text,
      ...(calls ? { tool_calls } : {}),
      ...(m.role === "tool" ? { tool_call_id: (await this.text(m.tool_call_id)).text } : {}),
      counts: { content: content.counts, calls: callCounts },
    };
    this.#messages.set(m, out);
    return out;
  }

  async messages(ms: readonly ChatMessage[]): Promise<RedactedMessage[]> {
    const out: RedactedMessage[] = [];
    for (const m of ms) out.push(await this.message(m));
    return out;
  }

  /** A text redacted (once a request), its first READ_CHARS characters at most. */
  async text(text: string): Promise<RedactedText> {
    const short = text.length <= SHORT_TEXT;
    const done = short ? this.#texts.get(text) : this.#long?.text === text ? this.#long.out : undefined;
    if (done) return done;
    if (this.#slice.due()) await this.#slice.yield();
    const read = readPart(text);
    this.work.texts++;
    this.work.chars += read.length;
    const r = redactString(read);
    const out = { text: read.length === text.length ? r.text : withoutTail(read, r.text), counts: r.counts };
    if (short) this.#texts.set(text, out);
    else this.#long = { text, out };
    return out;
  }
}

/**
 * The text's first READ_CHARS + TAIL_CHARS characters, as the redactor must see them: a JSON string
 * the cut leaves open is closed (a file's lines inside it, `\npassword=…`, are read as what they
 * say only in a literal that ends), without half an escape or half a surrogate pair.
 */
function readPart(text: string): string {
  const max = READ_CHARS + TAIL_CHARS;
  if (text.length <= max) return text;
  let part = text.slice(0, cutBetweenCharacters(text, max));
  let open = false;
  let escape = -1;
  for (let i = part.lastIndexOf("\n") + 1; i < part.length; i++) {
    if (part[i] === '"') open = !open;
    else if (open && part[i] === "\\") escape = i++;
  }
  if (!open) return part;
  // `\` or `\u` and up to 3 hex digits at the end: half an escape, dropped.
  if (escape >= 0 && (escape === part.length - 1 || (part[escape + 1] === "u" && part.length - escape < 6))) {
    part = part.slice(0, escape);
  }
  return `${part}"`;
}

/**
 * `redacted` (the redaction of `read`) without its tail. A secret the cut split is at the end, left
 * as it was: within the last TAIL_CHARS, and within the stretch the redactor changed nothing of
 * (the end both texts share). Either cut drops it; the later one keeps the start of the message
 * where the tail's secrets made its redaction shorter (a log of bearer tokens: 100k characters
 * redacted to 9k, of which dropping the last 32k left nothing for the prompt or the summary).
 */
function withoutTail(read: string, redacted: string): string {
  let same = 0;
  const most = Math.min(read.length, redacted.length);
  while (same < most && read.charCodeAt(read.length - 1 - same) === redacted.charCodeAt(redacted.length - 1 - same)) {
    same++;
  }
  const end = Math.max(0, redacted.length - TAIL_CHARS, Math.min(READ_CHARS, redacted.length - same));
  return redacted.slice(0, cutBetweenCharacters(redacted, end));
}
