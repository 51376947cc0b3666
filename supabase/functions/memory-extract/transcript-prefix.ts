// Incremental extraction (pure): the digests that name a session's transcript. The digest of
// messages[0..k) is chained from the digest of messages[0..k-1), so one pass gives the digest of
// every prefix, a transcript that continues another continues its chain (`after`), and two
// transcripts with the same digest at k agree on their first k messages. An extract job is keyed by
// the session and the digest at the end of its part, `session:<session_id>:<count>:<digest>`, so a
// re-post of the same transcript is the same job. What earlier jobs cover is looked up by these
// digests in the database (session-parts.ts; docs/extraction.md).
import { createHash } from "node:crypto";
import { EventLoopSlice } from "../_shared/event-loop-slice.ts";

/**
 * JSON with object keys sorted, so a message digests the same after a jsonb round trip (jsonb
 * reorders keys) and whichever order a client writes its keys in.
 */
export function canonicalJson(value: unknown): string {
  let out = "";
  for (const piece of canonicalPieces(value)) out += piece;
  return out;
}

/**
 * canonicalJson's text a token at a time, so a digest can hash it in parts and give the event loop
 * back between them. Keys sort by UTF-16 code units, as `<` compares strings (Array#sort's default).
 */
function* canonicalPieces(value: unknown): Generator<string> {
  if (Array.isArray(value)) {
    yield "[";
    for (let i = 0; i < value.length; i++) {
      if (i > 0) yield ",";
      yield* canonicalPieces(value[i] ?? null);
    }
    yield "]";
  } else if (value !== null && typeof value === "object") {
    const keys = Object.keys(value).filter((k) => (value as Record<string, unknown>)[k] !== undefined).sort();
    yield "{";
    for (let i = 0; i < keys.length; i++) {
      yield `${i > 0 ? "," : ""}${JSON.stringify(keys[i])}:`;
      yield* canonicalPieces((value as Record<string, unknown>)[keys[i]!]);
    }
    yield "}";
  } else yield JSON.stringify(value) ?? "null";
}

const EMPTY_TRANSCRIPT = createHash("sha256").update("devai-transcript").digest("hex");

/** Messages digested so far in this process: a work counter (a test compares it between requests). */
export const digestWork = { messages: 0 };

/** Pieces hashed between two looks at the clock, and characters gathered before one hash update. */
const PIECES_A_LOOK = 256;
const HASH_BUFFER = 1 << 16;

/**
 * The digests of a transcript that continues one whose digest is `start`: out[0] = start, out[k]
 * after k more messages. A slice at a time (event-loop-slice.ts), within a message too: in one
 * stretch, the digests of 18,000 short messages held other tenants' requests 470 ms, those of one
 * message of 80,000 keys 550 ms (bench/event-loop-stretches.ts). Hashed in parts, the digest is
 * the same as of the whole text.
 */
export async function continueDigests(
  start: string,
  messages: readonly unknown[],
  slice = new EventLoopSlice(),
): Promise<string[]> {
  const out = [start];
  let pieces = 0;
  for (const m of messages) {
    digestWork.messages++;
    const hash = createHash("sha256").update(out.at(-1)!);
    let text = "";
    for (const piece of canonicalPieces(m)) {
      text += piece;
      if (text.length >= HASH_BUFFER) hash.update(text), text = "";
      if (++pieces % PIECES_A_LOOK === 0 && slice.due()) await slice.yield();
    }
    out.push(hash.update(text).digest("hex"));
  }
  return out;
}

/** digests[k] identifies messages[0..k) (k = 0..n); equal prefixes, equal digests. */
export function prefixDigests(messages: readonly unknown[], slice?: EventLoopSlice): Promise<string[]> {
  return continueDigests(EMPTY_TRANSCRIPT, messages, slice);
}

/** The idempotency key of an extract job covering the session's transcript up to message `count`. */
export function extractIdempotencyKey(sessionId: string, count: number, digest: string): string {
  return `session:${sessionId}:${count}:${digest}`;
}
