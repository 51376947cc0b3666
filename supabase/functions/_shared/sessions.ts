// Ending a session: the one SQL function memory_private.end_memory_sessions marks it ended and queues its
// consolidation job (key 'consolidate:<session_id>'), once, whichever path ends it: the API's
// explicit end, a new session id on the same thread (episodes.ts), the nightly idle sweep.
// docs/graph.md#sessions.
import { asService, type Tx } from "./db.ts";
import { HttpError } from "./http.ts";
import { queueFull } from "./jobs.ts";
import { inRequest } from "./rate-limit.ts";

export type EndReason = "explicit" | "new_session" | "idle";

export interface EndedSession {
  id: string;
  session_id: string;
  job_id: string | null;
  /** False when the session had ended before (its end and its job are kept). */
  ended_now: boolean;
}

/**
 * Ends the tenant's sessions with these row ids (the function names the tenant from its claims:
 * the caller's only) and queues their consolidation, as the service: tenants cannot queue jobs.
 */
export async function endSessions(
  tx: Tx,
  ids: readonly string[],
  reason: EndReason,
  now?: Date,
): Promise<EndedSession[]> {
  if (ids.length === 0) return [];
  const at = now ?? null;
  return await asService(tx, async () => {
    // In a tenant's request, a session still open queues a job: held to the tenant's queue bound
    // (docs/operations.md#a-tenants-queued-jobs). The idle sweep and sessions already ended are not.
    if (inRequest()) {
      const [open] = await tx<{ wait: number }[]>`
        select memory_private.tenant_queue_wait(s.owner_id) as wait
          from public.memory_sessions s where s.id = any(${ids}::uuid[]) and s.ended_at is null limit 1`;
      if (open?.wait) throw queueFull(open.wait);
    }
    return await tx<EndedSession[]>`
      select id, session_id, job_id, ended_now
        from memory_private.end_memory_sessions(${ids}::uuid[], ${reason}, coalesce(${at}::timestamptz, now()))`;
  });
}

/**
 * A session's first batch binds it to its project and thread; a later batch naming another is a
 * 409 that writes nothing. A project decides where the episodes are filed (none: the user scope), so
 * leaving it out names no project. A thread decides which sessions a new session ends and where the
 * batch's events are logged, so a batch that names none keeps the session's; one naming another
 * thread (or a thread for a session opened without one) would file episodes under a thread the
 * batch did not name.
 */
export function assertSameSession(
  session: { project: string | null; thread_id: string | null },
  batch: { session_id: string; project?: string; thread_id?: string },
): void {
  if ((session.project ?? undefined) !== batch.project) {
    throw new HttpError(
      409,
      "session_project_mismatch",
      `session ${batch.session_id} belongs to ${
        session.project ? `project ${session.project}` : "no project"
      }; its episodes stay in one scope`,
    );
  }
  if (batch.thread_id !== undefined && session.thread_id !== batch.thread_id) {
    throw new HttpError(
      409,
      "session_thread_mismatch",
      `session ${batch.session_id} belongs to ${
        session.thread_id === null ? "no thread" : `thread ${session.thread_id}`
      }, not thread ${batch.thread_id}: a session stays on the thread its first batch named; send this thread's messages under a new session id`,
    );
  }
}
