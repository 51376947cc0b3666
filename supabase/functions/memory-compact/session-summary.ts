// The session's running summary (layer 2 of seed 000): read before a compaction, replaced by its
// merged summary after. A session stays on the thread its first compaction named, as its episodes
// do (_shared/sessions.ts): one summary a session id whatever the thread mixed two threads that
// reused an id, the second compacted with the first's summary as its prior and stored over it.
// A compaction sent again (its answer lost) starts from the summary before it: merged into its own
// result, the part was summarised twice (the extractive summary listed its lines twice, three
// times at the next retry) and the compaction counted twice.
import type { Tx } from "../_shared/db.ts";
import { HttpError } from "../_shared/http.ts";

export interface SummaryKey {
  ownerId: string;
  sessionId: string;
  /** The thread the request names; none keeps the session's. */
  threadId?: string;
  /** sha256 of the part this compaction replaces (the dedup jobs' key). */
  chunkHash: string;
}

/**
 * The summary this compaction merges its part into: the session's, or the one before it when the
 * session's last compaction replaced this same part (a retry); undefined when there is none. A 409
 * when the session is another thread's.
 */
export async function readSessionSummary(tx: Tx, key: SummaryKey): Promise<string | undefined> {
  const [row] = await tx<
    { summary: string; thread_id: string | null; chunk_hash: string | null; prior_summary: string | null }[]
  >`
    select summary, thread_id, chunk_hash, prior_summary from public.memory_session_summaries
     where owner_id = ${key.ownerId} and session_id = ${key.sessionId}`;
  if (!row) return undefined;
  assertSameThread(row.thread_id, key);
  return row.chunk_hash === key.chunkHash ? row.prior_summary ?? undefined : row.summary;
}

/**
 * Stores the merged summary, and the one it replaces unless this compaction is a retry of the
 * last (which counts once). Checked again as it is written: two first compactions naming two
 * threads at once would both have read no summary (the loser's transaction then writes nothing).
 */
export async function writeSessionSummary(tx: Tx, key: SummaryKey, summary: string, tokens: number): Promise<void> {
  const thread = key.threadId ?? null;
  const written = await tx<{ thread_id: string | null }[]>`
    insert into public.memory_session_summaries as s
      (owner_id, session_id, thread_id, summary, token_count, compactions, chunk_hash, prior_summary)
    values (${key.ownerId}, ${key.sessionId}, ${thread}, ${summary}, ${tokens}, 1, ${key.chunkHash}, null)
    on conflict (owner_id, session_id) do update
      set summary = excluded.summary, token_count = excluded.token_count,
          thread_id = coalesce(s.thread_id, excluded.thread_id),
          compactions = s.compactions + (case when s.chunk_hash = excluded.chunk_hash then 0 else 1 end),
          prior_summary = case when s.chunk_hash = excluded.chunk_hash then s.prior_summary else s.summary end,
          chunk_hash = excluded.chunk_hash
      where s.thread_id is null or excluded.thread_id is null or s.thread_id = excluded.thread_id
    returning thread_id`;
  if (written.length === 0) {
    const [row] = await tx<{ thread_id: string | null }[]>`
      select thread_id from public.memory_session_summaries
       where owner_id = ${key.ownerId} and session_id = ${key.sessionId}`;
    assertSameThread(row?.thread_id ?? null, key);
  }
}

function assertSameThread(stored: string | null, key: SummaryKey): void {
  if (stored === null || key.threadId === undefined || stored === key.threadId) return;
  throw new HttpError(
    409,
    "session_thread_mismatch",
    `session ${key.sessionId} belongs to thread ${stored}, not thread ${key.threadId}: its compaction summary ` +
      "stays on the thread its first compaction named; compact this thread's conversation under a new session id",
  );
}
