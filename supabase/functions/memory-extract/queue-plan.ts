// What a POST's plan (next-part.ts) queues, in the POST's tenant transaction: the part ending at the
// transcript's end, and apart from it the messages dead parts held (`again`: a job per dead part),
// each job with its part and marks recorded by this transaction (session-parts.ts recordPart). A
// part is keyed by the point it ends at, and a retry (tries > 1: messages dead parts held) by that
// key with `:try<tries>`, the end's too: the plain key is the dead job's, so a transcript ending
// where a dead job ends queues its messages again (a session whose last job died in an outage is
// extracted when its hook sends the same transcript again), while a live retry covers that end
// (the same transcript again is answered with it) and the third dead one is given up.
import type { Tx } from "../_shared/db.ts";
import { enqueueJob, type JobStatus } from "../_shared/jobs.ts";
import type { ExtractJobPayload } from "../_shared/extraction.ts";
import { extractIdempotencyKey } from "./transcript-prefix.ts";
import type { NextPart, PartPlan } from "./next-part.ts";
import { EXTRACT_MAX_TRIES, recordPart } from "./session-parts.ts";

/** What the job's payload takes from the request besides its part. */
export interface JobFields {
  ownerId: string;
  session_id: string;
  project?: string;
  scope?: ExtractJobPayload["scope"];
  thread_id?: string;
  lineage?: ExtractJobPayload["lineage"];
}

/** The answer's account of what was queued (handler.ts turns it into the 202). */
export interface Queued {
  id: string;
  status: JobStatus;
  deduplicated: boolean;
  newMessages: number;
  transcript: { count: number; digest: string };
  /** The messages dead parts held, queued apart (a job per dead part): each job, how many, and how many jobs have held them. */
  retried?: Retried[];
  /** The job answered covers the end given up (its third try died): nothing of it will be queued again. */
  givenUp?: true;
}

type Retried = { job_id: string; status: JobStatus; messages: number; tries: number; max_tries: number };

/** A part's key: the point it ends at, `:try<tries>` for a retry (the plain key is the first try's, dead). */
function keyOf(sessionId: string, part: NextPart): string {
  const key = extractIdempotencyKey(sessionId, part.count, part.digest);
  return part.tries > 1 ? `${key}:try${part.tries}` : key;
}

async function queuePart(tx: Tx, fields: JobFields, part: NextPart) {
  const { ownerId, lineage, ...rest } = fields;
  const payload: ExtractJobPayload = {
    ...rest,
    messages: part.messages as ExtractJobPayload["messages"],
    context: part.context as ExtractJobPayload["messages"],
    offset: part.offset,
    ...(lineage ? { lineage } : {}),
  };
  // Not inside a savepoint: record_extract_part takes the job as this transaction's by its xmin,
  // which a subtransaction's insert does not have (it refuses, and the POST fails: a 500).
  const job = await enqueueJob(tx, {
    ownerId,
    kind: "extract",
    idempotencyKey: keyOf(fields.session_id, part),
    payload,
  });
  // Its part and marks, once, by this transaction (what later POSTs look up).
  if (!job.deduplicated) await recordPart(tx, job.id, part.start, part.digests, part.coveredAsOf, part.tries);
  return job;
}

/** Queues the plan's parts (the end's first: when its key is taken, nothing is queued) and says what it did. */
export async function queuePlan(tx: Tx, fields: JobFields, plan: PartPlan): Promise<Queued> {
  const transcript = { count: plan.count, digest: plan.digest };
  const retried: Retried[] = [];
  const entry = (job: { id: string; status: JobStatus }, part: NextPart): Retried => ({
    job_id: job.id,
    status: job.status,
    messages: part.messages.length,
    tries: part.tries,
    max_tries: EXTRACT_MAX_TRIES,
  });
  let answer: Queued;
  let end: Retried | undefined;
  if (plan.covered) {
    // Nothing new at the end (e.g. a shorter transcript that arrived after a longer one): the job
    // that covers it, which is dead only when it is given up (a dead job covers nothing else).
    const givenUp = plan.job.status === "dead" ? { givenUp: true as const } : {};
    answer = { ...plan.job, deduplicated: true, newMessages: 0, transcript, ...givenUp };
  } else {
    const part = plan.part;
    const job = await queuePart(tx, fields, part);
    // A retry's messages are not new: it is counted in `retried` (last: its messages are the newest).
    const fresh = !job.deduplicated && part.tries === 1;
    answer = { ...job, newMessages: fresh ? part.messages.length : 0, transcript };
    // Deduplicated here: the job with this very key exists but covers nothing (it has no part:
    // queued before parts were recorded, or inserted through the REST API; a dead one with a part
    // would have raised the tries, hence the key); nothing new is queued until the transcript grows.
    if (job.deduplicated) return answer;
    if (part.tries > 1) end = entry(job, part);
  }
  for (const again of plan.again) {
    // A run no dead part held (a deleted job's messages) is a first try, under its plain key.
    const job = await queuePart(tx, fields, again);
    if (!job.deduplicated) retried.push(entry(job, again));
  }
  if (end) retried.push(end);
  return retried.length ? { ...answer, retried } : answer;
}
