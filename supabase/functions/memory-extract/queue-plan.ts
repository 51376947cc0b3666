// What a POST's plan (next-part.ts) queues, in the POST's tenant transaction: the part ending at the
// transcript's end, keyed by it (the same transcript again is the same job, dead or not), and apart
// from it the messages dead parts held (`again`: a job per dead part, keyed `...:try<tries>`), each job with its part
// and marks recorded by this transaction (session-parts.ts recordPart).
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
  retried?: { job_id: string; status: JobStatus; messages: number; tries: number; max_tries: number }[];
}

async function queuePart(tx: Tx, fields: JobFields, part: NextPart, key: string) {
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
  const job = await enqueueJob(tx, { ownerId, kind: "extract", idempotencyKey: key, payload });
  // Its part and marks, once, by this transaction (what later POSTs look up).
  if (!job.deduplicated) await recordPart(tx, job.id, part.start, part.digests, part.coveredAsOf, part.tries);
  return job;
}

/** Queues the plan's parts (the end's first: when its key is taken, nothing is queued) and says what it did. */
export async function queuePlan(tx: Tx, fields: JobFields, plan: PartPlan): Promise<Queued> {
  const transcript = { count: plan.count, digest: plan.digest };
  let answer: Queued;
  if (plan.covered) {
    // Nothing new at the end (e.g. a shorter transcript that arrived after a longer one): the job that covers it.
    answer = { ...plan.job, deduplicated: true, newMessages: 0, transcript };
  } else {
    const part = plan.part;
    const job = await queuePart(tx, fields, part, extractIdempotencyKey(fields.session_id, part.count, part.digest));
    answer = { ...job, newMessages: job.deduplicated ? 0 : part.messages.length, transcript };
    // Deduplicated here: the job with this very key exists but covers nothing now (it is dead, an
    // earlier job its part follows is, or it has no part: queued before parts were recorded, or
    // inserted through the REST API); nothing new is queued until the transcript grows.
    if (job.deduplicated) return answer;
  }
  const retried: NonNullable<Queued["retried"]> = [];
  for (const again of plan.again) {
    // ':try<k>': its plain key is a dead part's. A run no dead part held (a deleted job's messages) is a first try.
    const key = extractIdempotencyKey(fields.session_id, again.count, again.digest);
    const job = await queuePart(tx, fields, again, again.tries > 1 ? `${key}:try${again.tries}` : key);
    if (job.deduplicated) continue;
    const { id: job_id, status } = job;
    retried.push({ job_id, status, messages: again.messages.length, tries: again.tries, max_tries: EXTRACT_MAX_TRIES });
  }
  return retried.length ? { ...answer, retried } : answer;
}
