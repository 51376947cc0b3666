// Incremental extraction (pure): the digests that name a session's transcript. The digest of
// messages[0..k) is chained from the digest of messages[0..k-1), so one pass gives the digest of
// every prefix, a transcript that continues another continues its chain (`after`), and two
// transcripts with the same digest at k agree on their first k messages. An extract job is keyed by
// the session and the digest at the end of its part, `session:<session_id>:<count>:<digest>`, so a
// re-post of the same transcript is the same job. What earlier jobs cover is looked up by these
// digests in the database (session-parts.ts; docs/extraction.md).
import { createHash } from "node:crypto";

/**
 * JSON with object keys sorted, so a message digests the same after a jsonb round trip (jsonb
 * reorders keys) and whichever order a client writes its keys in.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v ?? null)).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

const EMPTY_TRANSCRIPT = createHash("sha256").update("devai-transcript").digest("hex");

/** Messages digested so far in this process: a work counter (a test compares it between requests). */
export const digestWork = { messages: 0 };

function nextDigest(previous: string, message: unknown): string {
  digestWork.messages++;
  return createHash("sha256").update(previous).update(canonicalJson(message)).digest("hex");
}

/** The digests of a transcript that continues one whose digest is `start`: out[0] = start, out[k] after k more messages. */
export function continueDigests(start: string, messages: readonly unknown[]): string[] {
  const out = [start];
  for (const m of messages) out.push(nextDigest(out.at(-1)!, m));
  return out;
}

/** digests[k] identifies messages[0..k) (k = 0..n); equal prefixes, equal digests. */
export function prefixDigests(messages: readonly unknown[]): string[] {
  return continueDigests(EMPTY_TRANSCRIPT, messages);
}

/** The idempotency key of an extract job covering the session's transcript up to message `count`. */
export function extractIdempotencyKey(sessionId: string, count: number, digest: string): string {
  return `session:${sessionId}:${count}:${digest}`;
}
