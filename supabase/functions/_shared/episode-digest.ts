// An episode's digest: what makes a resent message one episode (docs/graph.md#episodes). The
// digest is sha256 of the role, the content as stored (its secrets redacted: the digest is stored
// and shown, and one of the text as sent let anyone who read it test guesses at a redacted
// password) and the instant `at` names, so a message is recognised however its time is written.
import { createHash } from "node:crypto";

type SentMessage = { role: string; content: string; at?: string };

function digestOf(role: string, content: string, at: string | null): string {
  return createHash("sha256").update(JSON.stringify([role, content, at])).digest("hex");
}

/**
 * The message's digest: `at` as the instant it names, to the millisecond, so `…10:00:00Z`,
 * `…10:00:00.000Z` and `…11:00:00+01:00` are one message.
 */
export function episodeDigest(m: SentMessage): string {
  return digestOf(m.role, m.content, m.at === undefined ? null : new Date(m.at).toISOString());
}

/**
 * The digest with `at` as written, which episodes stored before 2026-11-28 carry (those whose
 * text had a secret redacted had theirs replaced: migration 20261128880000).
 */
export function digestAsWritten(m: SentMessage): string {
  return digestOf(m.role, m.content, m.at ?? null);
}

/**
 * The stored episode of each message, keyed by the message's digest: found by that digest, or
 * (stored before 2026-11-28) by its digest as written, so a resend of an older episode is still
 * recognised.
 */
export function storedByDigest<R extends { digest: string }>(
  digests: readonly string[],
  asWritten: readonly string[],
  rows: readonly R[],
): Map<string, R> {
  const byDigest = new Map(rows.map((r) => [r.digest, r]));
  return new Map(digests.flatMap((d, i) => {
    const row = byDigest.get(d) ?? byDigest.get(asWritten[i]!);
    return row ? [[d, row] as const] : [];
  }));
}
