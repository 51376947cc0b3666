// Incremental extraction (pure): how much of a session's transcript earlier extract jobs already
// cover. Each job is keyed by the session and a digest of the transcript up to the end of its part,
// `session:<session_id>:<count>:<digest of messages[0..count)>`, the digests chained so the digest of
// every prefix comes from one pass. A re-post of the same transcript has the same key (the same
// job). A longer, shorter or edited transcript is compared with each earlier job's stored part
// (`offset`, `messages`): the job covers this transcript's messages [offset, offset + t) when the
// transcript agrees with the job's history before `offset` (checked against the key's digest) and
// with its first t messages. The covered prefix is where those ranges, from message 0 on, stop.
//
// A client may also send only what follows a transcript the session already sent, named by its
// length and digest (`after: {count, digest}`): knownTranscript rebuilds those messages from the
// session's jobs (every job's part, verified against its key), so the request is then the same as
// a post of the whole transcript.
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

/** The chain continued from `start` over `messages`: out[0] = start, out[k] after k more messages. */
function chainFrom(start: string, messages: readonly unknown[]): string[] {
  const out = [start];
  for (const m of messages) out.push(nextDigest(out.at(-1)!, m));
  return out;
}

/** The digests of a transcript that continues one whose digest is `start`: out[k] after k more messages. */
export function continueDigests(start: string, messages: readonly unknown[]): string[] {
  return chainFrom(start, messages);
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
export function coveredPrefix(
  sessionId: string,
  digests: readonly string[],
  earlier: readonly EarlierExtractJob[],
): Coverage {
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

interface Node {
  previous: string | undefined;
  message: unknown;
}

const nodeKey = (count: number, digest: string) => `${count}:${digest}`;

/**
 * The first `count` messages of a transcript this session sent before, whose digest is `digest`,
 * rebuilt from the session's jobs (dead ones too: their messages were sent all the same); undefined
 * when no job's verified history passes through that point. A job's part counts only when the
 * chain from a known point at its offset ends at its key's digest, so a rebuilt transcript is one
 * the client really sent.
 */
export function knownTranscript(
  sessionId: string,
  jobs: readonly EarlierExtractJob[],
  count: number,
  digest: string,
): unknown[] | undefined {
  const prefix = sessionKeyPrefix(sessionId);
  const nodes = new Map<string, Node>();
  const at = new Map<number, Set<string>>([[0, new Set([EMPTY_TRANSCRIPT])]]);
  const ordered = [...jobs].filter((j) => j.idempotencyKey.startsWith(prefix)).sort((a, b) => a.offset - b.offset);
  for (const job of ordered) {
    const key = /^(\d+):([0-9a-f]{64})$/.exec(job.idempotencyKey.slice(prefix.length));
    if (!key || Number(key[1]) !== job.offset + job.messages.length) continue;
    for (const start of at.get(job.offset) ?? []) {
      const chain = chainFrom(start, job.messages);
      if (chain.at(-1) !== key[2]) continue;
      chain.forEach((d, i) => {
        if (i === 0) return;
        const pos = job.offset + i;
        const k = nodeKey(pos, d);
        if (nodes.has(k)) return;
        nodes.set(k, { previous: nodeKey(pos - 1, chain[i - 1]!), message: job.messages[i - 1] });
        if (!at.has(pos)) at.set(pos, new Set());
        at.get(pos)!.add(d);
      });
      break;
    }
  }
  if (count === 0) return digest === EMPTY_TRANSCRIPT ? [] : undefined;
  const out: unknown[] = [];
  let k: string | undefined = nodeKey(count, digest);
  while (out.length < count) {
    const node: Node | undefined = k === undefined ? undefined : nodes.get(k);
    if (!node) return undefined;
    out.push(node.message);
    k = node.previous;
  }
  return out.reverse();
}
