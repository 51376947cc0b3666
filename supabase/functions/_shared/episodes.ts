// Episodes: every message of a session, stored as it happens, with no LLM on the way
// (POST memory/episodes). Each message becomes a memory (memory_type 'episodic', source
// 'conversation', metadata role / digest / seq, valid_from = when it was sent) with a temporal edge
// from the session's previous episode; its entities are linked by rules; it is keyword-searchable
// at once (fts is derived on insert) and embedded in the same request by the local embedder, or by
// a queued 'embed' job with a remote one. Idempotent per (session, message digest). The session's
// row in memory_sessions is locked for the batch, so concurrent batches of one session append one
// after the other. Episodes are the conversation itself: each is an ADD in the history, but not a
// change-log row (the delta header reports memory updates, not the turns the agent just had).
// docs/graph.md#episodes.
import { z } from "zod";
import type { Tx } from "./db.ts";
import { toVectorLiteral } from "./db.ts";
import { insertEdges } from "./edges.ts";
import { digestAsWritten, episodeDigest, storedByDigest } from "./episode-digest.ts";
import { linkEntitiesByRules } from "./entities.ts";
import { HttpError, invalidBody } from "./http.ts";
import { enqueueJob } from "./jobs.ts";
import { content, isoDateTime, projectName, projectScope, sessionId, threadId } from "./schemas.ts";
import { assertSameSession, endSessions } from "./sessions.ts";
import type { Embedder } from "./embeddings.ts";
import { addCounts, type RedactionCounts } from "./redact.ts";
import { redactString } from "./redact-json.ts";
import { recordRedactions, refuseOverlong } from "./redaction-events.ts";

export const EPISODE_ROLES = ["user", "assistant", "system", "tool"] as const;
/** Messages per request: a turn or a few; a whole transcript goes in several batches. */
export const MAX_EPISODES_PER_BATCH = 50;
/** How far in the future a message's `at` may be (client clocks drift). */
export const MAX_FUTURE_SKEW_MS = 5 * 60_000;
/** Episodes are low importance: the facts consolidated from them carry the knowledge, so TTL retires them. */
export const EPISODE_IMPORTANCE = 2;

export const EpisodeMessage = z
  .object({
    role: z.enum(EPISODE_ROLES),
    content,
    /** When the message was sent (default: when it arrives). */
    at: isoDateTime.optional(),
  })
  .strict();

export const EpisodeBatchRequest = z
  .object({
    session_id: sessionId,
    /** The project whose scope the session's episodes are filed under (default: the user scope). */
    project: projectName.optional(),
    /** A new session id on a thread ends the thread's previous open session (consolidated then). */
    thread_id: threadId.optional(),
    messages: z.array(EpisodeMessage).min(1).max(MAX_EPISODES_PER_BATCH),
  })
  .strict();
export type EpisodeBatchRequest = z.infer<typeof EpisodeBatchRequest>;

export interface StoredEpisode {
  /** null: the message was nothing but a secret and was not stored (dropped). */
  id: string | null;
  seq: number | null;
  role: string;
  duplicate: boolean;
  dropped?: true;
}

export interface EpisodeBatchResult {
  session_id: string;
  stored: number;
  duplicates: number;
  episodes: StoredEpisode[];
  /** inline: embedded in this request; queued: an 'embed' job will (remote embedder); none: nothing new. */
  embedding: "inline" | "queued" | "none";
  embed_job_id: string | null;
  /** Sessions of the same thread this batch ended (their consolidation is queued). */
  ended_sessions: string[];
  /** Secrets replaced by [REDACTED:<kind>] in the stored messages, and messages dropped as nothing but a secret. */
  redacted: number;
  dropped: number;
}

/** Where a session's episodes live: the project's scope, or the user's. */
export function episodeNamespace(root: string, project?: string): string {
  return project ? `${projectScope(root, project)}/episodes` : `${root}/user/episodes`;
}

/** 400 for a message sent "in the future" beyond the skew (checked before anything is written). */
export function assertNotInFuture(batch: EpisodeBatchRequest, now: Date): void {
  const limit = now.getTime() + MAX_FUTURE_SKEW_MS;
  const issues = batch.messages.flatMap((m, i) =>
    m.at && Date.parse(m.at) > limit
      ? [{ path: ["messages", i, "at"], message: `more than ${MAX_FUTURE_SKEW_MS / 60_000} minutes in the future` }]
      : []
  );
  if (issues.length > 0) throw invalidBody(issues);
}

/** The session's row as row_to_json gives it. */
interface SessionRow {
  id: string;
  project: string | null;
  thread_id: string | null;
  namespace: string;
  episode_count: number;
  last_episode_id: string | null;
  ended_at: string | null;
  created: boolean;
}

/**
 * Stores a batch in the caller's tenant transaction. Each message is stored with its secrets
 * redacted (redact.ts; one that is nothing but a secret is dropped); its digest is of the message as
 * stored (redaction is deterministic, so a resent message is still recognised, and the digest, which
 * the API shows, is no test for a guess at the secret). With `embedder` (the local one: microseconds) the
 * new rows are embedded here; without, an 'embed' job is queued for them.
 */
export async function ingestEpisodes(
  tx: Tx,
  input: { tenantId: string; root: string; batch: EpisodeBatchRequest; embedder?: Embedder },
): Promise<EpisodeBatchResult> {
  const { tenantId } = input;
  const redactions = input.batch.messages.map((m) => redactString(m.content));
  redactions.forEach((r, i) => r.onlySecret || refuseOverlong(r, `messages.${i}.content`));
  const counts = redactions.reduce((sum: RedactionCounts, r) => addCounts(sum, r.counts), {});
  const batch = {
    ...input.batch,
    messages: input.batch.messages.map((m, i) => ({ ...m, content: redactions[i]!.text })),
  };
  const digests = batch.messages.map(episodeDigest);
  const asWritten = batch.messages.map(digestAsWritten);
  const namespace = episodeNamespace(input.root, batch.project);
  // The messages of this batch the session holds already.
  const stored = tx`
    select coalesce(json_agg(json_build_object('id', m.id, 'digest', m.metadata ->> 'digest', 'seq', (m.metadata ->> 'seq')::int)), '[]')
      from public.devai_memories m
     where m.owner_id = ${tenantId} and m.session_id = ${batch.session_id} and m.source = 'conversation'
       and m.metadata ->> 'digest' = any (${[...new Set([...digests, ...asWritten])]}::text[])`;
  // One round trip: open the session or lock its row (the no-op update takes the row lock for this
  // transaction), find the messages stored already, and keep this transaction's episode inserts
  // out of the change log ('bulk': the writer logs itself, and episodes are not logged). `seen` is
  // the session's count in the statement's snapshot, taken before any wait for the row lock.
  const [opened] = await tx<
    { session: SessionRow; seen: number | null; existing: { id: string; digest: string; seq: number }[] }[]
  >`
    with s as (
      insert into public.memory_sessions as s (owner_id, session_id, thread_id, project, namespace)
      values (${tenantId}, ${batch.session_id}, ${batch.thread_id ?? null}, ${batch.project ?? null}, ${namespace})
      on conflict (owner_id, session_id) do update set episode_count = s.episode_count
      returning s.id, s.project, s.thread_id, s.namespace, s.episode_count, s.last_episode_id, s.ended_at, (s.xmax = 0) as created
    )
    select (select row_to_json(s) from s) as session,
           (select episode_count from public.memory_sessions where owner_id = ${tenantId} and session_id = ${batch.session_id}) as seen,
           (${stored}) as existing,
           set_config('memory.change_log', 'bulk', true) as change_log`;
  const session = opened!.session;
  // A concurrent batch of the same session committed while this one waited for the lock: the
  // snapshot missed its episodes, so read them again (else a resent message would count as new,
  // find its row taken and be answered as dropped).
  if (!session!.created && opened!.seen !== session!.episode_count) {
    const [again] = await tx<
      { existing: { id: string; digest: string; seq: number }[] }[]
    >`select (${stored}) as existing`;
    opened!.existing = again!.existing;
  }
  if (!session!.created) assertSameSession(session!, batch);

  const existing = storedByDigest(digests, asWritten, opened!.existing);
  const fresh: number[] = [];
  const seenInBatch = new Set<string>();
  digests.forEach((d, i) => {
    if (!existing.has(d) && !seenInBatch.has(d) && !redactions[i]!.onlySecret) fresh.push(i);
    seenInBatch.add(d);
  });
  if (fresh.length > 0 && session!.ended_at) {
    throw new HttpError(
      409,
      "session_ended",
      `session ${batch.session_id} has ended; send new messages under a new session id`,
    );
  }

  // A batch naming no thread is the session's: its episodes' history and its events are logged
  // there, not on the default thread the transaction began with (services/graph.ts).
  const threadId = batch.thread_id ?? session!.thread_id ?? undefined;
  if (threadId !== batch.thread_id) await tx`select set_config('memory.thread_id', ${threadId!}, true)`;

  const ended = session!.created && batch.thread_id
    ? await endThreadsOtherSessions(tx, tenantId, batch.thread_id, batch.session_id)
    : [];
  const freshVectors = input.embedder && fresh.length > 0
    ? await input.embedder.embed(fresh.map((i) => batch.messages[i]!.content))
    : undefined;
  const vectorOf = new Map(fresh.map((i, k) => [i, freshVectors?.[k]]));
  const inserted = fresh.length === 0 ? [] : await tx<{ id: string; seq: number; digest: string; valid_from: Date }[]>`
    insert into public.devai_memories
      (owner_id, content, embedding, embedding_model, memory_type, namespace, priority, source, importance,
       session_id, valid_from, metadata)
    select ${tenantId}, x.content, x.embedding::extensions.vector, ${freshVectors ? input.embedder!.model : null},
           'episodic', ${session!.namespace}, 'low', 'conversation', ${EPISODE_IMPORTANCE}, ${batch.session_id},
           coalesce(x.at, now()), jsonb_build_object('role', x.role, 'digest', x.digest, 'seq', ${
    session!.episode_count
  } + x.n - 1)
      from unnest(${fresh.map((i) => batch.messages[i]!.content)}::text[], ${
    fresh.map((i) => batch.messages[i]!.role)
  }::text[],
                  ${fresh.map((i) => batch.messages[i]!.at ?? null)}::timestamptz[], ${
    fresh.map((i) => digests[i]!)
  }::text[],
                  ${fresh.map((i) => (vectorOf.get(i) ? toVectorLiteral(vectorOf.get(i)!) : null))}::text[])
             with ordinality as x(content, role, at, digest, embedding, n)
     order by x.n
    on conflict (owner_id, session_id, (metadata ->> 'digest')) where source = 'conversation' do nothing
    returning id, (metadata ->> 'seq')::int as seq, metadata ->> 'digest' as digest, valid_from`;
  inserted.sort((a, b) => a.seq - b.seq);

  if (inserted.length > 0) {
    // The chain: the session's previous episode → each new one, in the order sent.
    const chain = [session!.last_episode_id, ...inserted.map((e) => e.id)].filter((id): id is string => id !== null);
    await insertEdges(
      tx,
      tenantId,
      chain.slice(1).map((to, i) => ({ from: chain[i]!, to, type: "temporal", strength: 1 })),
    );
    const times = inserted.map((e) => e.valid_from);
    await tx`
      update public.memory_sessions
         set episode_count = episode_count + ${inserted.length},
             last_episode_id = ${inserted.at(-1)!.id},
             first_event_at = least(first_event_at, ${times.reduce((a, b) => (a < b ? a : b))}::timestamptz),
             last_event_at = greatest(last_event_at, ${times.reduce((a, b) => (a > b ? a : b))}::timestamptz)
       where id = ${session!.id}`;
    const contentOf = new Map(fresh.map((i) => [digests[i]!, batch.messages[i]!.content]));
    await linkEntitiesByRules(tx, inserted.map((e) => ({ id: e.id, content: contentOf.get(e.digest)! })));
  }

  const embedJob = inserted.length > 0 && !freshVectors
    ? await enqueueJob(tx, {
      ownerId: tenantId,
      kind: "embed",
      idempotencyKey: `embed:${batch.session_id}:${inserted[0]!.seq}`,
      payload: { memory_ids: inserted.map((e) => e.id) },
    })
    : undefined;

  const byDigest = new Map(inserted.map((e) => [e.digest, e]));
  const episodes = batch.messages.map((m, i): StoredEpisode => {
    const mine = fresh.includes(i) ? byDigest.get(digests[i]!) : undefined;
    const other = mine ?? existing.get(digests[i]!) ?? byDigest.get(digests[i]!);
    if (!other) return { id: null, seq: null, role: m.role, duplicate: false, dropped: true };
    return { id: other.id, seq: other.seq, role: m.role, duplicate: !mine };
  });
  const dropped = episodes.filter((e) => e.dropped).length;
  await recordRedactions(tx, {
    ownerId: tenantId,
    writer: "episodes",
    node: "episodic",
    counts,
    dropped,
    threadId,
  });
  return {
    session_id: batch.session_id,
    stored: inserted.length,
    duplicates: batch.messages.length - inserted.length - episodes.filter((e) => e.dropped).length,
    episodes,
    embedding: inserted.length === 0 ? "none" : freshVectors ? "inline" : "queued",
    embed_job_id: embedJob?.id ?? null,
    ended_sessions: ended,
    redacted: redactions.reduce((n, r) => n + (r.onlySecret ? 0 : r.total), 0),
    dropped,
  };
}

/**
 * A new session on a thread ends the thread's other open sessions (reason new_session). The
 * thread's advisory lock, held to commit, makes new sessions of one thread take turns: without it
 * two opened at once each missed the other's uncommitted row and both stayed open. The one that
 * waited reads after the other committed (a statement of its own), so it ends it.
 */
async function endThreadsOtherSessions(
  tx: Tx,
  tenantId: string,
  threadId: string,
  sessionId: string,
): Promise<string[]> {
  await tx`select pg_advisory_xact_lock(hashtextextended(${`devai-thread|${tenantId}|${threadId}`}, 0))`;
  const open = await tx<{ id: string }[]>`
    select id from public.memory_sessions
     where thread_id = ${threadId} and session_id <> ${sessionId} and ended_at is null
     order by id`;
  if (open.length === 0) return [];
  const ended = await endSessions(tx, open.map((s) => s.id), "new_session");
  return ended.filter((s) => s.ended_now).map((s) => s.session_id);
}
