// Incremental extraction (pure): how much of a session's transcript earlier extract jobs already
// cover. Each job is keyed by the session and a digest of the transcript up to the end of its part,
// `session:<session_id>:<count>:<digest of messages[0..count)>`, the digests chained so the digest of
// every prefix comes from one pass. A re-post of the same transcript has the same key (the same
// job). A longer, shorter or edited transcript is compared with each earlier job's stored part
// (`offset`, `messages`): the job covers this transcript's messages [offset, offset + t) when the
// transcript agrees with the job's history before `offset` (checked against the key's digest) and
// with its first t messages. The covered prefix is where those ranges, from message 0 on, stop.
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

function nextDigest(previous: string, message: unknown): string {
  return createHash("sha256").update(previous).update(canonicalJson(message)).digest("hex");
}

/** The chain continued from `start` over `messages`: out[0] = start, out[k] after k more messages. */
function chainFrom(start: string, messages: readonly unknown[]): string[] {
  const out = [start];
  for (const m of messages) out.push(nextDigest(out.at(-1)!, m));
  return out;
}

/** digests[k] identifies messages[0..k) (k = 0..n); equal prefixes, equal digests. */
export function prefixDigests(messages: readonly unknown[]): string[] {
  return chainFrom(EMPTY_TRANSCRIPT, messages);
}

/** The idempotency key of an extract job covering the session's transcript up to message `count`. */
export function extractIdempotencyKey(sessionId: string, count: number, digest: string): string {
  return `session:${sessionId}:${count}:${digest}`;
}

/** The key prefix every extract job of the session starts with; other sessions' keys may too ('a' and 'a:b'). */
export function sessionKeyPrefix(sessionId: string): string {
  return `session:${sessionId}:`;
}

/** An earlier extract job of the session that is not dead, as stored. */
export interface EarlierExtractJob {
  idempotencyKey: string;
  /** Index of messages[0] in the job's transcript. */
  offset: number;
  /** The part of its transcript the job extracts from. */
  messages: readonly unknown[];
}

export interface Coverage {
  /** How many leading messages earlier jobs cover (0 when none). */
  covered: number;
  /** Index in `earlier` of the job that covers message covered - 1 (undefined when covered = 0). */
  lastJob: number | undefined;
}

/**
 * How many leading messages of the transcript whose prefix digests are `digests` the `earlier` jobs
 * cover (see the module comment). Jobs of other sessions, even with the same text, and jobs whose
 * history before their offset differs from this transcript cover nothing.
 */
export function coveredPrefix(sessionId: string, digests: readonly string[], earlier: readonly EarlierExtractJob[]): Coverage {
  const n = digests.length - 1;
  const prefix = sessionKeyPrefix(sessionId);
  const ranges: { start: number; end: number; job: number }[] = [];
  earlier.forEach((job, index) => {
    if (!job.idempotencyKey.startsWith(prefix)) return;
    const key = /^(\d+):([0-9a-f]{64})$/.exec(job.idempotencyKey.slice(prefix.length));
    if (!key || Number(key[1]) !== job.offset + job.messages.length || job.offset >= n) return;
    // The job's own chain, assuming its history before `offset` is this transcript's: it ends at the
    // key's digest only if that assumption holds.
    const chain = chainFrom(digests[job.offset]!, job.messages);
    if (chain.at(-1) !== key[2]) return;
    let t = Math.min(job.messages.length, n - job.offset);
    while (t > 0 && chain[t] !== digests[job.offset + t]) t--;
    if (t > 0) ranges.push({ start: job.offset, end: job.offset + t, job: index });
  });
  let covered = 0;
  let lastJob: number | undefined;
  for (;;) {
    let best: (typeof ranges)[number] | undefined;
    for (const r of ranges) if (r.start <= covered && r.end > (best?.end ?? covered)) best = r;
    if (!best) return { covered, lastJob };
    covered = best.end;
    lastJob = best.job;
  }
}
