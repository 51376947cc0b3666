// What memory-extract reads and writes of a session's earlier extract jobs: each job's part of the
// transcript (memory_extract_parts) and the transcript's digest after each of its messages
// (memory_extract_marks), recorded by the transaction that queued it (migration
// 20261128610000_extract_transcript_marks.sql). Every read is an index lookup by key or by job,
// never a scan of the session, so what a POST reads grows with the POST (docs/extraction.md).
//
// The queries say how each table is reached, not only what they want: marks by their key index
// (the key names the session), parts and jobs by primary key in a LATERAL
// subquery with LIMIT (which Postgres runs once per row, never as a join it may reorder). Written
// as plain joins, a planner misled by the statistics of young tables read every part in the
// database, and the marks of each, for every digest looked up (1,800 rows per probe, measured).
// Keys reach the marks as bytea values, never as decode(...) in a condition: row level security
// keeps a condition with a function that is not leakproof out of the index (the probe then read
// all of the session's marks). A mark's position is compared as `position + 0`: the key names the
// position already (a digest names its count), and a plain `position = n` let the planner AND the
// key's index with a scan of the primary key for that position in every part of every tenant.
//
// A part covers its messages while its job is not dead (queued, running or done: it has extracted,
// or will extract, them), and for good once it is given up: the third job to hold messages that
// died (tries = EXTRACT_MAX_TRIES; migration 20261128830000). A given-up part is read exactly as a
// live one: its messages count as covered, and its death undoes no later part's history. A
// position of a transcript is covered when a covering part has a mark with the transcript's digest
// there: that part holds the same history up to it. Marks hold a key, not the digest: markKey
// names the tenant and session with it, so a lookup reads this session's marks only (the
// migration's comment on memory_extract_marks); the part is checked all the same.
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import type { Tx } from "../_shared/db.ts";
import type { JobStatus } from "../_shared/jobs.ts";
import { CONTEXT_MESSAGES } from "../_shared/extraction.ts";
import { type DeadRun, deadRuns } from "./dead-runs.ts";

/**
 * Stored state the extract path asked for in this process: index lookups (one per digest probed or
 * part row read) and stored messages read. A work counter: tests compare it between requests.
 */
export const storedReads = { lookups: 0, messages: 0 };

/**
 * How many jobs may hold messages that kill their job: the third that dies is given up (the death
 * trigger of migration 20261128830000 says the same number).
 */
export const EXTRACT_MAX_TRIES = 3;

/** A digest as a bytea (a parameter, so the condition on it can use the index). */
const bytes = (hex: string) => Buffer.from(hex, "hex");

/** A session, as the marks' keys name it. */
export interface SessionKey {
  ownerId: string;
  sessionId: string;
}

/**
 * The key of the mark after a transcript whose digest is `digest` (hex) in the session: the first 16
 * bytes of sha256('devai-mark|<owner>|<session>|' ‖ digest), as record_extract_part computes it.
 */
export function markKey(s: SessionKey, digest: string): Buffer {
  return createHash("sha256").update(`devai-mark|${s.ownerId.toLowerCase()}|${s.sessionId}|`).update(bytes(digest))
    .digest().subarray(0, 16);
}

/** A point of a session's transcript: its first `count` messages, whose digest is `digest` (hex). */
export interface TranscriptPoint {
  count: number;
  digest: string;
}

/** The part a point lies in (start < point.count <= end). */
export interface PartThrough {
  jobId: string;
  start: number;
  startDigest: string;
  end: number;
  /** Live or given up: it covers its messages (a dead one not given up covers nothing). */
  covers: boolean;
  payloadBytes: number;
  /** Covers, and no part of the session that starts before it has died (not given up): all of its history is covered. */
  historyCovered: boolean;
  /** The snapshot the lookup read with (a POST's first read: recorded with its part, recordPart). */
  asOf: string;
  /** Asked for (withTail): the stored last messages of a part ending at the point, if one does. */
  tail: unknown[] | null;
}

/** What the session's covering parts cover of a transcript (coveredFrom). */
export interface Coverage {
  /** The first position they do not cover, minus one (the end when they cover it all). */
  through: number;
  /** The job of the covering part that covers its end (live before given up, the one that starts first). */
  job?: { id: string; status: JobStatus };
  /** `to`: after the last uncovered message a dead part (not given up) held; [through, to) in runs (dead-runs.ts). */
  dead?: { to: number; runs: DeadRun[] };
  /** The first position after `dead.to` (or `through`) they do not cover, minus one; the end when none. */
  resumes: number;
  /** The snapshot the lookups read with (a POST's first read: recorded with its part, recordPart). */
  asOf: string;
}

/**
 * How far the session's covering parts cover a transcript from `from` on, given its digests after
 * each message from there (`digests[i]` at position from + i + 1): the first gap, the messages
 * dead parts held among those they do not cover (with how many jobs held them), where the gaps
 * resume after those, and the job covering its end (the one a POST with nothing new answers with).
 * One lookup per digest: each brings the covering part and the dead parts with its mark.
 */
export async function coveredFrom(
  tx: Tx,
  ownerId: string,
  sessionId: string,
  from: number,
  digests: readonly string[],
): Promise<Coverage> {
  storedReads.lookups += digests.length;
  const keys = digests.map((d) => markKey({ ownerId, sessionId }, d).toString("hex"));
  // Each digest's hit: the covering part with its mark (live first, then the one that starts
  // first) and the highest tries of the dead ones (materialized: read once for every answer).
  const [row] = await tx<
    {
      gap: number | null;
      deadTo: number | null;
      deadGaps: [number, string | null, number | null][] | null;
      resumes: number | null;
      id: string | null;
      status: JobStatus | null;
      asOf: string;
    }[]
  >`
    with hits as materialized (
      select k.i::int as i, hit.job_id, hit.dead_tries, hit.dead_job
        from unnest(array(select decode(d.hex, 'hex') from unnest(${keys}::text[]) with ordinality as d(hex, i)
                           order by d.i)) with ordinality as k(key, i)
        cross join lateral (
               select (array_agg(p.job_id order by p.dead, p.start_position, p.job_id) filter (where p.covers))[1]
                        as job_id,
                      max(p.tries) filter (where not p.covers) as dead_tries,
                      (array_agg(p.job_id order by p.tries desc, p.job_id) filter (where not p.covers))[1] as dead_job
                 from public.memory_extract_marks m
                cross join lateral (select p.job_id, p.owner_id, p.session_id, p.dead, p.start_position, p.tries,
                                           not p.dead or p.given_up as covers
                                      from public.memory_extract_parts p where p.job_id = m.job_id limit 1) as p
                where m.key = k.key and m.position + 0 = ${from} + k.i
                  and p.owner_id = ${ownerId} and p.session_id = ${sessionId}) as hit),
    gaps as (select i, dead_tries, dead_job from hits where job_id is null),
    dead as (select max(i) as i from gaps where dead_tries is not null)
    select (select min(i) from gaps) as gap, dead.i as "deadTo",
           (select json_agg(json_build_array(g.i, g.dead_job, g.dead_tries) order by g.i) from gaps g where g.i <= dead.i)
             as "deadGaps",
           (select min(g.i) from gaps g where g.i > coalesce(dead.i, 0)) as resumes,
           j.id, j.status, pg_current_snapshot()::text as "asOf"
      from dead
      left join lateral (
             select j.id, j.status from hits h
              cross join lateral (select * from public.memory_jobs j where j.id = h.job_id limit 1) as j
              where h.i = ${digests.length}) as j on true`;
  const r = row!;
  const end = from + digests.length;
  const job = r.id ? { job: { id: r.id, status: r.status! } } : {};
  if (r.gap === null) {
    if (digests.length > 0 && !r.id) throw new Error(`coveredFrom: no job covers ${end} messages`);
    return { through: end, resumes: end, asOf: r.asOf, ...job };
  }
  return {
    through: from + r.gap - 1,
    resumes: r.resumes === null ? end : from + r.resumes - 1,
    asOf: r.asOf,
    ...job,
    ...(r.deadTo === null ? {} : { dead: { to: from + r.deadTo, runs: deadRuns(from, r.deadGaps!) } }),
  };
}

/**
 * The part the point lies in, a covering one before a dead one (a live one first) and the one
 * starting first; undefined when the session never sent it. Its history is covered when it covers
 * and no part of the session that starts before it was killed, and not given up, by a transaction
 * the POST that queued it did not see: that POST found everything before it covered, and only such
 * a death can have undone it (a death it saw, it took into account; a given-up part still covers).
 * One lookup, and the session's parts that died since the part was queued; withTail, the same lookup brings the tail of a part ending at the point (messagesBefore).
 */
export async function partThrough(
  tx: Tx,
  ownerId: string,
  sessionId: string,
  point: TranscriptPoint,
  withTail = false,
): Promise<PartThrough | undefined> {
  storedReads.lookups++;
  const [part] = await tx<PartThrough[]>`
    with through as materialized (
      select p.job_id, p.start_position, p.start_digest, p.end_position, not p.dead or p.given_up as covers, p.dead,
             p.payload_bytes, p.covered_as_of,
             case when ${withTail} and p.end_position = ${point.count} then p.tail end as tail
        from public.memory_extract_marks m
       cross join lateral (select * from public.memory_extract_parts p where p.job_id = m.job_id limit 1) as p
       where m.key = ${markKey({ ownerId, sessionId }, point.digest)} and m.position + 0 = ${point.count}
         and p.owner_id = ${ownerId} and p.session_id = ${sessionId})
    select p.job_id as "jobId", p.start_position as start, encode(p.start_digest, 'hex') as "startDigest",
           p.end_position as end, p.covers, p.payload_bytes as "payloadBytes",
           p.covers and not exists (
             select 1 from public.memory_extract_parts d
              where d.owner_id = ${ownerId} and d.session_id = ${sessionId} and d.dead and not d.given_up
                and d.died_by >= pg_snapshot_xmin(p.covered_as_of)
                and not pg_visible_in_snapshot(d.died_by, p.covered_as_of)
                and d.start_position < p.start_position) as "historyCovered",
           (select e.tail from through e where e.tail is not null order by e.job_id limit 1) as tail,
           pg_current_snapshot()::text as "asOf"
      from through p
     order by p.covers desc, p.dead, p.start_position, p.job_id
     limit 1`;
  return part;
}

/**
 * The `want` messages (at most CONTEXT_MESSAGES) just before the point, given the part it lies in
 * (partThrough withTail): the tail of a part ending there, else a slice of that part (which reads
 * its payload); undefined when that payload has been cleared (partSlices).
 */
export async function messagesBefore(
  tx: Tx,
  part: PartThrough,
  point: TranscriptPoint,
  want: number,
): Promise<unknown[] | undefined> {
  if (want <= 0) return [];
  if (part.tail) {
    const tail = part.tail.slice(-Math.min(want, CONTEXT_MESSAGES));
    storedReads.messages += tail.length;
    return tail;
  }
  return (await partSlices(tx, [{ jobId: part.jobId, from: point.count - want, to: point.count }]))?.[0];
}

/**
 * Messages [from, to) of the session's transcript out of each part's payload (its context, then
 * its part): from may reach back into the context, at most CONTEXT_MESSAGES before the part.
 * Undefined when any of those payloads has been cleared (payload_cleared_at: devai-job-prune
 * clears a finished job's transcript job_keep_days after it finished, keeping its part and marks;
 * migration 20261128730000) or its job deleted since the POST found the part (an operator's
 * delete takes the part with it): what the part held can no longer be read, only resent.
 */
export async function partSlices(
  tx: Tx,
  slices: readonly { jobId: string; from: number; to: number }[],
): Promise<unknown[][] | undefined> {
  storedReads.lookups += slices.length;
  // offset 0: each part's payload is read once per slice, not once per expression naming it.
  const rows = await tx<{ messages: unknown[] | null; cleared: boolean }[]>`
    select j.payload_cleared_at is not null as cleared,
           case when j.payload_cleared_at is not null then null
                when s.t > s.f
                then jsonb_path_query_array(v.seen, '$[$from to $to]', jsonb_build_object(
                       'from', s.f - p.start_position + v.context_length,
                       'to', s.t - 1 - p.start_position + v.context_length))
                else '[]'::jsonb end as messages
      from unnest(${slices.map((s) => s.jobId)}::uuid[], ${slices.map((s) => s.from)}::int[],
                  ${slices.map((s) => s.to)}::int[]) with ordinality as s(job, f, t, i)
     cross join lateral (select * from public.memory_extract_parts p where p.job_id = s.job limit 1) as p
     cross join lateral (select * from public.memory_jobs j where j.id = s.job limit 1) as j
     cross join lateral (
       select coalesce(j.payload -> 'context', '[]'::jsonb) as context, j.payload -> 'messages' as messages offset 0) as c
     cross join lateral (
       select c.context || c.messages as seen, jsonb_array_length(c.context) as context_length offset 0) as v
     order by s.i`;
  if (rows.length !== slices.length || rows.some((r) => r.cleared)) return undefined;
  const out = rows.map((r) => r.messages!);
  storedReads.messages += out.reduce((n, m) => n + m.length, 0);
  return out;
}

/**
 * Records the part of the job this transaction has just queued: its start, the digest after each
 * of its messages (record_extract_part keys them), the snapshot the POST read coverage with, and
 * how many jobs have held its messages (tries: 1 + the highest of the dead parts that held them).
 */
export async function recordPart(
  tx: Tx,
  jobId: string,
  start: TranscriptPoint,
  digests: readonly string[],
  coveredAsOf: string,
  tries: number,
): Promise<void> {
  await tx`
    select public.record_extract_part(
             ${jobId}, ${start.count}, decode(${start.digest}, 'hex'),
             (select array_agg(decode(d.hex, 'hex') order by d.i)
                from unnest(${digests as string[]}::text[]) with ordinality as d(hex, i)),
             ${CONTEXT_MESSAGES}, ${coveredAsOf}::pg_snapshot, ${tries})`;
}

/** An extract job's part as its status shows it (GET memory-extract?job_id=); null when it has none. */
export async function partOfJob(
  tx: Tx,
  jobId: string,
): Promise<{ start: number; end: number; tries: number; given_up: boolean } | null> {
  const [part] = await tx<{ start: number; end: number; tries: number; given_up: boolean }[]>`
    select start_position as start, end_position as "end", tries, given_up
      from public.memory_extract_parts where job_id = ${jobId}`;
  return part ?? null;
}
