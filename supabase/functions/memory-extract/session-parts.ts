// What memory-extract reads and writes of a session's earlier extract jobs: each job's part of the
// transcript (memory_extract_parts) and the transcript's digest after each of its messages
// (memory_extract_marks), recorded by the transaction that queued it (migration
// 20261128610000_extract_transcript_marks.sql). Every read is an index lookup by digest or by job,
// never a scan of the session, so what a POST reads grows with the POST (docs/extraction.md).
//
// The queries say how each table is reached, not only what they want: marks by their digest index
// (the only index they have that names a session), parts and jobs by primary key in a LATERAL
// subquery with LIMIT (which Postgres runs once per row, never as a join it may reorder). Written
// as plain joins, a planner misled by the statistics of young tables read every part in the
// database, and the marks of each, for every digest looked up (1,800 rows per probe, measured).
// Digests reach the marks as bytea values, never as decode(...) in a condition: row level security
// keeps a condition with a function that is not leakproof out of the index (the probe then read
// all of the session's marks).
//
// A part is live while its job is not dead (queued, running or done: it has extracted, or will
// extract, its messages). A position of a transcript is covered when a live part has a mark with
// the transcript's digest there: that part holds the same history up to it.
import { Buffer } from "node:buffer";
import type { Tx } from "../_shared/db.ts";
import type { JobStatus } from "../_shared/jobs.ts";
import { CONTEXT_MESSAGES } from "../_shared/extraction.ts";

/**
 * Stored state the extract path asked for in this process: index lookups (one per digest probed or
 * part row read) and stored messages read. A work counter: tests compare it between requests.
 */
export const storedReads = { lookups: 0, messages: 0 };

/** A digest as the bytea the marks hold (a parameter, so the condition on it can use the index). */
const bytes = (hex: string) => Buffer.from(hex, "hex");

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
  dead: boolean;
  payloadBytes: number;
  /** Live, and no part of the session that starts before it has died: all of its history is covered. */
  historyCovered: boolean;
}

/**
 * How far the session's live parts cover a transcript from `from` on, given its digests after each
 * message from there (`digests[i]` at position from + i + 1): the first position they do not
 * cover, minus one (`from` + digests.length when they cover it all). One lookup per digest.
 */
export async function coveredFrom(
  tx: Tx,
  ownerId: string,
  sessionId: string,
  from: number,
  digests: readonly string[],
): Promise<number> {
  storedReads.lookups += digests.length;
  // The first digest nothing live covers ends it (the lookups run in the digests' order).
  const [gap] = await tx<{ i: number }[]>`
    select k.i::int as i
      from unnest(array(select decode(d.hex, 'hex') from unnest(${digests as string[]}::text[]) with ordinality as d(hex, i)
                         order by d.i)) with ordinality as k(digest, i)
      left join lateral (
             select 1 as live from public.memory_extract_marks m
              where m.digest = k.digest and m.owner_id = ${ownerId} and m.session_id = ${sessionId}
                and m.position = ${from} + k.i
                and not (select p.dead from public.memory_extract_parts p where p.job_id = m.job_id)
              limit 1) as hit on true
     where hit.live is null
     order by k.i
     limit 1`;
  return gap ? from + gap.i - 1 : from + digests.length;
}

/** The job of a live part covering the point (the one starting first), for a POST with nothing new. */
export async function coveringJob(
  tx: Tx,
  ownerId: string,
  sessionId: string,
  point: TranscriptPoint,
): Promise<{ id: string; status: JobStatus }> {
  storedReads.lookups++;
  const [job] = await tx<{ id: string; status: JobStatus }[]>`
    select j.id, j.status
      from public.memory_extract_marks m
     cross join lateral (select * from public.memory_extract_parts p where p.job_id = m.job_id limit 1) as p
     cross join lateral (select * from public.memory_jobs j where j.id = m.job_id limit 1) as j
     where m.digest = ${bytes(point.digest)} and m.owner_id = ${ownerId} and m.session_id = ${sessionId}
       and m.position = ${point.count} and not p.dead
     order by p.start_position, j.created_at, j.id
     limit 1`;
  if (!job) throw new Error(`coveringJob: no live part covers ${point.count} messages`);
  return job;
}

/** The part the point lies in, a live one before a dead one and the one starting first; undefined when the session never sent it. */
export async function partThrough(
  tx: Tx,
  ownerId: string,
  sessionId: string,
  point: TranscriptPoint,
): Promise<PartThrough | undefined> {
  storedReads.lookups++;
  const [part] = await tx<PartThrough[]>`
    select p.job_id as "jobId", p.start_position as start, encode(p.start_digest, 'hex') as "startDigest",
           p.end_position as end, p.dead, p.payload_bytes as "payloadBytes",
           not p.dead and not exists (
             select 1 from public.memory_extract_parts d
              where d.owner_id = ${ownerId} and d.session_id = ${sessionId} and d.dead
                and d.start_position < p.start_position) as "historyCovered"
      from public.memory_extract_marks m
     cross join lateral (select * from public.memory_extract_parts p where p.job_id = m.job_id limit 1) as p
     where m.digest = ${bytes(point.digest)} and m.owner_id = ${ownerId} and m.session_id = ${sessionId}
       and m.position = ${point.count}
     order by p.dead, p.start_position, p.job_id
     limit 1`;
  return part;
}

/**
 * The first position in (part.start, upTo] of the part's path that no live part covers (the part is
 * dead), with the transcript's digest one message before it: where extraction starts again.
 */
export async function firstUncovered(
  tx: Tx,
  ownerId: string,
  sessionId: string,
  part: PartThrough,
  upTo: number,
): Promise<TranscriptPoint> {
  storedReads.lookups += upTo - part.start + 1;
  const [gap] = await tx<{ position: number }[]>`
    select m.position
      from public.memory_extract_marks m
      left join lateral (
             select 1 as live from public.memory_extract_marks l
              where l.digest = m.digest and l.owner_id = ${ownerId} and l.session_id = ${sessionId}
                and l.position = m.position
                and not (select p.dead from public.memory_extract_parts p where p.job_id = l.job_id)
              limit 1) as hit on true
     where m.job_id = ${part.jobId} and m.position > ${part.start} and m.position <= ${upTo} and hit.live is null
     order by m.position
     limit 1`;
  // The part is dead, so nothing live has its mark at upTo: a gap is always found.
  if (!gap) throw new Error(`firstUncovered: part ${part.jobId} is covered up to ${upTo}`);
  const count = gap.position - 1;
  if (count === part.start) return { count, digest: part.startDigest };
  const [before] = await tx<{ digest: string }[]>`
    select encode(digest, 'hex') as digest from public.memory_extract_marks
     where job_id = ${part.jobId} and position = ${count}`;
  return { count, digest: before!.digest };
}

/**
 * The `want` messages (at most CONTEXT_MESSAGES) just before the point: the tail of a part ending
 * there, else a slice of the part the point lies in (which reads that one part's payload).
 */
export async function messagesBefore(
  tx: Tx,
  ownerId: string,
  sessionId: string,
  point: TranscriptPoint,
  want: number,
): Promise<unknown[]> {
  if (want <= 0) return [];
  storedReads.lookups++;
  const [part] = await tx<{ job_id: string; tail: unknown[] | null }[]>`
    select p.job_id, case when p.end_position = ${point.count} then p.tail end as tail
      from public.memory_extract_marks m
     cross join lateral (select * from public.memory_extract_parts p where p.job_id = m.job_id limit 1) as p
     where m.digest = ${bytes(point.digest)} and m.owner_id = ${ownerId} and m.session_id = ${sessionId}
       and m.position = ${point.count}
     order by p.end_position = ${point.count} desc, p.job_id
     limit 1`;
  if (!part) throw new Error(`messagesBefore: no part through ${point.count} messages`);
  if (part.tail) {
    const tail = part.tail.slice(-Math.min(want, CONTEXT_MESSAGES));
    storedReads.messages += tail.length;
    return tail;
  }
  const [slice] = await partSlices(tx, [{ jobId: part.job_id, from: point.count - want, to: point.count }]);
  return slice!;
}

/**
 * Messages [from, to) of the session's transcript out of each part's payload (its context, then
 * its part): from may reach back into the context, at most CONTEXT_MESSAGES before the part.
 */
export async function partSlices(
  tx: Tx,
  slices: readonly { jobId: string; from: number; to: number }[],
): Promise<unknown[][]> {
  storedReads.lookups += slices.length;
  // offset 0: each part's payload is read once per slice, not once per expression naming it.
  const rows = await tx<{ messages: unknown[] }[]>`
    select case when s.t > s.f
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
  if (rows.length !== slices.length) throw new Error("partSlices: a part is gone");
  const out = rows.map((r) => r.messages);
  storedReads.messages += out.reduce((n, m) => n + m.length, 0);
  return out;
}

/** Records the part of the job this transaction has just queued: its start and the digest after each of its messages. */
export async function recordPart(
  tx: Tx,
  jobId: string,
  start: TranscriptPoint,
  digests: readonly string[],
): Promise<void> {
  await tx`
    select public.record_extract_part(
             ${jobId}, ${start.count}, decode(${start.digest}, 'hex'),
             (select array_agg(decode(d.hex, 'hex') order by d.i)
                from unnest(${digests as string[]}::text[]) with ordinality as d(hex, i)),
             ${CONTEXT_MESSAGES})`;
}
