// Which parts of a POSTed transcript memory-extract queues (docs/extraction.md): the messages from
// the first one no covering earlier part of the session covers (live, or given up), each part with
// up to CONTEXT_MESSAGES before it as context; or, when they cover it all, the job that covers its
// end. Messages dead parts held are queued again apart (`again`): the uncovered ones each dead
// part held last as a part of their own, and the messages after them nothing covers as another: a
// message that always kills its job then kills only the jobs of what its own dead part held,
// never the new messages' nor another dead part's (before, one job took them all, and one such
// message stopped the session's extraction for good; then, one job took every dead part's, and
// messages an outage killed were given up with it). Each `again` part records 1 + the highest
// tries of the dead parts that held its messages; the third to die is given up and covers them
// (session-parts.ts).
//
// A whole transcript brings every message it is about: its digests are probed, one lookup each.
// With `after`, the messages only follow a point the session sent before, and what precedes that
// point is found by walking back the parts on its path (session-parts.ts), part by part, to one
// whose whole history is covered: the part `after` ends, unless a job of the session died since
// it was queued (a given-up part's death does not count). Dead parts on the way are queued again
// (apart) from their first uncovered message, read from the parts' payloads, when that is at most
// MAX_MESSAGES_PER_REQUEST messages in at most maxRebuildBytes of payloads and the walk takes at
// most MAX_PATH_PARTS parts. Beyond that, what precedes `after` is not known to be covered, and
// the POST says so (`historyUnknown`: the handler answers 409, resend the whole transcript) rather
// than queue its own messages and skip the dead. The same when a payload it must read has been
// cleared (`payloadCleared`: a finished job's transcript is cleared job_keep_days after it
// finished): the context of an `after` inside a part, or a dead part's messages. A whole
// transcript reads no payload: it brings its messages.
import { CONTEXT_MESSAGES } from "../_shared/extraction.ts";
import type { Tx } from "../_shared/db.ts";
import type { JobStatus } from "../_shared/jobs.ts";
import { MAX_MESSAGES_PER_REQUEST } from "../_shared/llm.ts";
import { continueDigests, prefixDigests } from "./transcript-prefix.ts";
import { type DeadRun, failedOnTheirOwn } from "./dead-runs.ts";
import {
  type Coverage,
  coveredFrom,
  EXTRACT_MAX_TRIES,
  messagesBefore,
  partSlices,
  type PartThrough,
  partThrough,
  type TranscriptPoint,
} from "./session-parts.ts";

/** How many parts a POST with `after` walks back at most to learn what precedes it. */
export const MAX_PATH_PARTS = 32;

/** The largest position a part records (a Postgres integer): a point past it is one no session sent. */
const MAX_POSITION = 2 ** 31 - 1;

/** A part to queue: transcript messages [offset, count), the digests that key and mark it. */
export interface NextPart {
  offset: number;
  messages: unknown[];
  context: unknown[];
  /** The transcript's digest at `offset`, then after each message of the part (the last: at `count`). */
  start: TranscriptPoint;
  digests: string[];
  count: number;
  digest: string;
  /** How many jobs have held its messages, this one included (1 unless dead parts held some). */
  tries: number;
  /**
   * The snapshot of the POST's first coverage read: a part that dies in a transaction it does not
   * see may have covered what the POST took as covered (recorded with the part: partThrough).
   */
  coveredAsOf: string;
}

/**
 * What to queue for a transcript ending at (count, digest): the part that ends there (a retry when
 * it holds the end of a dead part's messages) or, when nothing there is to queue, the job covering
 * the end; and before it, apart, the messages dead parts held (`again`, one part per dead part that
 * held them last), if any. A retry is keyed `...:try<tries>` (queue-plan.ts): its plain key is a dead part's.
 */
export type PartPlan =
  & { count: number; digest: string; again: NextPart[] }
  & ({ covered: true; job: { id: string; status: JobStatus } } | { covered: false; part: NextPart });

/** Why a POST with `after` cannot tell what precedes it is covered: its walk or its read-back passed a bound. */
export interface HistoryUnknown {
  historyUnknown: true;
}

/** Why a POST with `after` cannot be planned: a payload it must read has been cleared (session-parts.ts partSlices). */
export interface PayloadCleared {
  payloadCleared: true;
}
const payloadCleared: PayloadCleared = { payloadCleared: true };

interface Session {
  tx: Tx;
  ownerId: string;
  sessionId: string;
}

/** What a POST of the whole transcript queues. */
export async function partOfWhole(s: Session, messages: unknown[]): Promise<PartPlan> {
  const digests = await prefixDigests(messages);
  const covered = await coveredFrom(s.tx, s.ownerId, s.sessionId, 0, digests.slice(1));
  return planFrom({ from: 0, messages, digests }, covered, covered.asOf, [], await lastAlone(s, covered));
}

/**
 * What a POST of the messages after `after` queues; undefined when the session never sent `after`,
 * HistoryUnknown when what precedes it cannot be established within the bounds, PayloadCleared
 * when the messages it needs from an earlier part are no longer stored.
 */
export async function partAfter(
  s: Session,
  after: TranscriptPoint,
  messages: unknown[],
  maxRebuildBytes: number,
): Promise<PartPlan | HistoryUnknown | PayloadCleared | undefined> {
  if (after.count > MAX_POSITION) return undefined;
  const path = await pathBack(s, after);
  if (path.length === 0) return undefined;
  // The first read: what the POST took as covered is as of its snapshot.
  const asOf = path[0]!.asOf;
  const last = path.at(-1)!;
  if (!last.historyCovered && last.start !== 0) return { historyUnknown: true };
  const digests = await continueDigests(after.digest, messages);
  if (path.some((p) => !p.covers)) {
    const again = await readBack(s, after, path, maxRebuildBytes);
    if (!again) return { historyUnknown: true };
    if ("payloadCleared" in again) return again;
    const known = { from: again.from, messages: [...again.messages, ...messages] };
    const all = [...again.digests, ...digests.slice(1)];
    const covered = await coveredFrom(s.tx, s.ownerId, s.sessionId, known.from, all.slice(1));
    return planFrom({ ...known, digests: all }, covered, asOf, again.before, await lastAlone(s, covered));
  }
  const covered = await coveredFrom(s.tx, s.ownerId, s.sessionId, after.count, digests.slice(1));
  const want = Math.min(after.count, CONTEXT_MESSAGES - (covered.through - after.count));
  const before = covered.through === after.count + messages.length
    ? []
    : await messagesBefore(s.tx, path[0]!, after, want);
  if (!before) return payloadCleared;
  return planFrom({ from: after.count, messages, digests }, covered, asOf, before, await lastAlone(s, covered));
}

/**
 * The dead runs whose last job (tries EXTRACT_MAX_TRIES) goes without the context: a job with
 * context asks without it before a failure kills it (extraction.ts answerChunk), unless it is
 * stopped first. A worker killed, or past its wall-clock limit (150-400 s hosted, while a
 * request's timeouts take 4 minutes), loses that request's answer, and the part just after a
 * message the provider fails would be given up though it holds nothing that fails. So when the
 * job before did not record that its request without the context failed too (dead-runs.ts), the
 * last job asks without it from the start, as a job of its own.
 */
async function lastAlone(s: Session, coverage: Coverage): Promise<(run: DeadRun) => boolean> {
  const last = (coverage.dead?.runs ?? []).filter((r) => r.tries >= EXTRACT_MAX_TRIES);
  const own = await failedOnTheirOwn(s.tx, last.flatMap((r) => r.job ? [r.job] : []));
  return (run) => run.tries >= EXTRACT_MAX_TRIES && !(run.job && own.has(run.job));
}

/**
 * The plan once what is covered is known, from the transcript's messages [from, n) and its digests
 * at from..n; `before` holds the messages just before `from` the context may need.
 */
function planFrom(
  known: { from: number; messages: unknown[]; digests: string[] },
  coverage: Coverage,
  coveredAsOf: string,
  before: unknown[],
  alone: (run: DeadRun) => boolean,
): PartPlan {
  const count = known.from + known.messages.length;
  const digest = known.digests.at(-1)!;
  // Messages [start, to) as a part (positions of the transcript).
  const part = (start: number, to: number, tries: number, withoutContext = false): NextPart => {
    const i = start - known.from;
    const j = to - known.from;
    return {
      offset: start,
      messages: known.messages.slice(i, j),
      // (Only the last CONTEXT_MESSAGES are copied: a POST queues a part per dead part it re-queues.)
      context: withoutContext
        ? []
        : [...before, ...known.messages.slice(Math.max(0, i - CONTEXT_MESSAGES), i)].slice(-CONTEXT_MESSAGES),
      start: { count: start, digest: known.digests[i]! },
      digests: known.digests.slice(i + 1, j + 1),
      count: to,
      digest: known.digests[j]!,
      tries,
      coveredAsOf,
    };
  };
  const again = (coverage.dead?.runs ?? []).map((run) => part(run.from, run.to, run.tries, alone(run)));
  const plan = { count, digest };
  // Nothing after the dead parts' messages to queue: the job covering the end answers.
  if (coverage.resumes === count && coverage.job) return { ...plan, covered: true, job: coverage.job, again };
  // The dead parts' messages reach the end (the transcript a dead job ends at, sent again): the last
  // of them is the part that ends there, a retry as the others (the answer's job).
  if (coverage.dead?.to === count) return { ...plan, covered: false, part: again.at(-1)!, again: again.slice(0, -1) };
  return { ...plan, covered: false, part: part(coverage.resumes, count, 1), again };
}

/** The parts on the path to `point`, newest first, back to one whose history is covered (or position 0). */
async function pathBack(s: Session, point: TranscriptPoint): Promise<(PartThrough & { upTo: number })[]> {
  const path: (PartThrough & { upTo: number })[] = [];
  let at: TranscriptPoint | undefined = point;
  while (at && path.length < MAX_PATH_PARTS) {
    // The first part brings the tail before `after` too (messagesBefore): the point is not looked up again.
    const part = await partThrough(s.tx, s.ownerId, s.sessionId, at, path.length === 0);
    if (!part) break;
    path.push({ ...part, upTo: at.count });
    at = part.historyCovered || part.start === 0 ? undefined : { count: part.start, digest: part.startDigest };
  }
  return path;
}

/**
 * When a dead part lies on the path to `after`: the messages from the oldest dead part's first one
 * up to `after`, read back from the parts' payloads, with the transcript's digests from there (to
 * find what live parts cover of them again, and to check they lead to `after`) and the messages
 * before it (context). Undefined when the read-back would pass the bounds in the module comment,
 * PayloadCleared when a payload it reads has been cleared.
 */
async function readBack(
  s: Session,
  after: TranscriptPoint,
  path: (PartThrough & { upTo: number })[],
  maxRebuildBytes: number,
): Promise<{ from: number; messages: unknown[]; digests: string[]; before: unknown[] } | PayloadCleared | undefined> {
  const read = path.slice(0, path.findLastIndex((p) => !p.covers) + 1).reverse();
  const dead = read[0]!;
  if (read.reduce((n, p) => n + p.payloadBytes, 0) > maxRebuildBytes) return undefined;
  if (after.count - dead.start > MAX_MESSAGES_PER_REQUEST) return undefined;
  const from = Math.max(0, dead.start - CONTEXT_MESSAGES);
  const slices = await partSlices(
    s.tx,
    read.map((p, i) => ({ jobId: p.jobId, from: i === 0 ? from : p.start, to: p.upTo })),
  );
  if (!slices) return payloadCleared;
  const seen = slices.flat();
  const messages = seen.slice(dead.start - from);
  const digests = await continueDigests(dead.startDigest, messages);
  // The messages read back lead from the dead part's start to `after`, or the parts do not say what was sent.
  if (digests.at(-1) !== after.digest) return undefined;
  return { from: dead.start, messages, digests, before: seen.slice(0, dead.start - from) };
}
