// Ending a session: the one SQL function public.end_memory_sessions marks it ended and queues its
// consolidation job (key 'consolidate:<session_id>'), once, whichever path ends it: the API's
// explicit end, a new session id on the same thread (episodes.ts), the nightly idle sweep.
// docs/graph.md#sessions.
import type { Tx } from "./db.ts";

export type EndReason = "explicit" | "new_session" | "idle";

export interface EndedSession {
  id: string;
  session_id: string;
  job_id: string | null;
  /** False when the session had ended before (its end and its job are kept). */
  ended_now: boolean;
}

/** Ends the tenant's sessions with these row ids (RLS: the caller's only) and queues their consolidation. */
export async function endSessions(
  tx: Tx,
  ids: readonly string[],
  reason: EndReason,
  now?: Date,
): Promise<EndedSession[]> {
  if (ids.length === 0) return [];
  return await tx<EndedSession[]>`
    select id, session_id, job_id, ended_now
      from public.end_memory_sessions(${ids}::uuid[], ${reason}, coalesce(${now ?? null}::timestamptz, now()))`;
}
