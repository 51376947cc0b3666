// What memory-extract reads of a session's earlier extract jobs (transcript-prefix.ts says how
// jobs cover a transcript). Two ways:
//
// - the session's jobs with their parts (every message it sent): for a whole transcript, an edited
//   history, or a dead job's part to extract again;
// - continueFromJob, for a POST with `after` that simply continues the session: the job whose key
//   names `after` is looked up by that key, and only the last CONTEXT_MESSAGES of what it saw are
//   read, so such a POST's work does not grow with the session. It answers undefined (read the
//   whole session instead) unless that job is alive, no job of the session is dead (its part is
//   extracted again from the whole transcript) and no job covers more than `after` (a re-sent or
//   overlapping increment: the whole transcript says what is new).
import type { Tx } from "../_shared/db.ts";
import type { JobStatus } from "../_shared/jobs.ts";
import { CONTEXT_MESSAGES } from "../_shared/extraction.ts";
import { type EarlierExtractJob, extractIdempotencyKey, sessionKeyPrefix } from "./transcript-prefix.ts";

export interface SessionJob extends EarlierExtractJob {
  id: string;
  status: JobStatus;
}

/** Every extract job of the session (other sessions' keys that share the prefix are told apart later), oldest first. */
export async function loadSessionJobs(tx: Tx, ownerId: string, sessionId: string): Promise<SessionJob[]> {
  const rows = await tx<
    { id: string; status: JobStatus; idempotency_key: string; start: number; messages: unknown[] }[]
  >`
    select id, status, idempotency_key, coalesce((payload ->> 'offset')::int, 0) as start,
           coalesce(payload -> 'messages', '[]'::jsonb) as messages
      from public.memory_jobs
     where owner_id = ${ownerId} and kind = 'extract'
       and starts_with(idempotency_key, ${sessionKeyPrefix(sessionId)})
     order by created_at, id`;
  return rows.map((r) => ({
    id: r.id,
    status: r.status,
    idempotencyKey: r.idempotency_key,
    offset: r.start,
    messages: r.messages,
  }));
}

/** The messages before `after.count` the next job shows as context, when the POST simply continues the session (see above). */
export async function continueFromJob(
  tx: Tx,
  ownerId: string,
  sessionId: string,
  after: { count: number; digest: string },
): Promise<{ context: unknown[] } | undefined> {
  const prefix = sessionKeyPrefix(sessionId);
  // Keys only (no payload is read): this session's keys end in <count>:<digest>.
  const [session] = await tx<{ dead: number; later: number }[]>`
    select count(*) filter (where status = 'dead')::int as dead,
           count(*) filter (where split_part(substr(idempotency_key, ${
    prefix.length + 1
  }), ':', 1)::numeric > ${after.count})::int as later
      from public.memory_jobs
     where owner_id = ${ownerId} and kind = 'extract' and starts_with(idempotency_key, ${prefix})
       and substr(idempotency_key, ${prefix.length + 1}) ~ '^[0-9]+:[0-9a-f]{64}$'`;
  if (!session || session.dead > 0 || session.later > 0) return undefined;
  // The job's context and part end at `after`: their last CONTEXT_MESSAGES are the next job's context.
  const [job] = await tx<{ status: JobStatus; tail: unknown[] }[]>`
    select status,
           (select coalesce(jsonb_agg(e order by i), '[]'::jsonb)
              from jsonb_array_elements(s.seen) with ordinality as t(e, i)
             where i > jsonb_array_length(s.seen) - ${CONTEXT_MESSAGES}) as tail
      from public.memory_jobs,
           lateral (select coalesce(payload -> 'context', '[]'::jsonb) || coalesce(payload -> 'messages', '[]'::jsonb) as seen) as s
     where owner_id = ${ownerId} and kind = 'extract'
       and idempotency_key = ${extractIdempotencyKey(sessionId, after.count, after.digest)}`;
  if (!job || job.status === "dead") return undefined;
  return { context: job.tail };
}
