// The per-session prefetch cache (docs/context.md#prefetch), in public.context_prefetch: one row
// per signal a session predicted (a file opened, a branch checked out, an error on screen). A
// row younger than context_prefetch_ttl_seconds (30 s) is fresh: the session's next assemble
// takes that signal's candidates from it instead of looking them up. Older, up to
// context_prefetch_max_age_seconds, it is stale: served once more and refreshed after the answer
// (lazy refresh); older still, it is ignored. Ages are measured on the request's clock. A row is
// the session's prediction in one project (its scope was searched): another project's assemble
// neither reads nor replaces it.
import { createHash } from "node:crypto";
import type { Tx } from "../db.ts";
import { redactSecrets } from "../redact.ts";
import type { CandidateRef } from "./gather.ts";

export type SignalKey = string;
export type Freshness = "fresh" | "stale" | "expired";

const digest = (text: string) => createHash("sha256").update(text).digest("hex").slice(0, 32);
// A file or branch keys its row by name, readable in the assembly's memory_events record, unless
// the name holds a secret (a token pasted into a path or a branch): then by a digest like an
// error's, since the key is stored (context_prefetch.signal_key, memory_events meta.prefetch) and
// a marker would make two such names one key.
const nameKey = (kind: string, name: string): SignalKey =>
  `${kind}:${redactSecrets(name).total > 0 ? digest(name) : name}`;
export const fileKey = (file: string): SignalKey => nameKey("file", file);
export const branchKey = (branch: string): SignalKey => nameKey("branch", branch);
/** Errors are keyed by a digest of their text (one error, or several joined by newlines). */
export const errorKey = (errors: readonly string[]): SignalKey =>
  `error:${digest(errors.map((e) => e.trim()).join("\n"))}`;

export interface CachedPrediction {
  key: SignalKey;
  refs: CandidateRef[];
  confidence: number;
  computedAt: Date;
  freshness: Freshness;
}

/** Whose predictions: a session, in a project (none: the global and user scopes only). */
export interface PrefetchOwner {
  sessionId: string;
  project: string | undefined;
}

/** The stored project of a prediction: '' without one (a project name is never empty). */
const projectKey = (project: string | undefined) => project ?? "";

/**
 * The session's cached predictions for these signals in its project, with their freshness at
 * `now`. A prediction one of whose memories is no longer valid and active (forgotten, corrected,
 * replaced since) is expired, whatever its age: serving it would leave out what replaced that
 * memory, so the signal is looked up again.
 */
export async function readPrefetch(
  tx: Tx,
  owner: PrefetchOwner,
  keys: readonly SignalKey[],
  now: Date,
): Promise<Map<SignalKey, CachedPrediction>> {
  if (keys.length === 0) return new Map();
  const rows = await tx<
    {
      signal_key: string;
      refs: CandidateRef[];
      confidence: number;
      computed_at: Date;
      ttl: string;
      max_age: string;
      outdated: boolean;
    }[]
  >`
    select p.signal_key, p.refs, p.confidence, p.computed_at,
           exists (select from unnest(p.memory_ids) as u(id)
                    where not exists (select from public.devai_memories m
                                       where m.id = u.id and m.is_valid and m.state = 'active')) as outdated,
           public.memory_setting('context_prefetch_ttl_seconds')::text as ttl,
           public.memory_setting('context_prefetch_max_age_seconds')::text as max_age
      from public.context_prefetch p
     where p.session_id = ${owner.sessionId} and p.project = ${projectKey(owner.project)}
       and p.signal_key = any (${[...keys]}::text[])`;
  return new Map(rows.map((r) => {
    const age = (now.getTime() - r.computed_at.getTime()) / 1000;
    const expired = r.outdated || age >= Number(r.max_age);
    const freshness: Freshness = expired ? "expired" : age < Number(r.ttl) ? "fresh" : "stale";
    return [r.signal_key, {
      key: r.signal_key,
      refs: r.refs,
      confidence: r.confidence,
      computedAt: r.computed_at,
      freshness,
    }];
  }));
}

/**
 * Stores (or replaces) a session's prediction for one signal in its project, computed at `at`:
 * everything the signal found (`refs`, what the session's assemble is served) and the memories of
 * it the prediction answered (`predicted`, what prediction accuracy counts: docs/context.md#usage-feedback).
 */
export async function writePrefetch(
  tx: Tx,
  owner: PrefetchOwner,
  key: SignalKey,
  refs: readonly CandidateRef[],
  predicted: readonly string[],
  confidence: number,
  at: Date,
): Promise<void> {
  const ids = [...new Set(refs.map((r) => r.id))].slice(0, 100);
  const kept = refs.filter((r) => ids.includes(r.id)).slice(0, 300);
  const predictedIds = predicted.filter((id) => ids.includes(id));
  await tx`
    insert into public.context_prefetch
      (owner_id, session_id, project, signal_key, memory_ids, predicted_ids, refs, confidence, computed_at)
    values ((select auth.uid()), ${owner.sessionId}, ${projectKey(owner.project)}, ${key}, ${ids}::uuid[],
            ${predictedIds}::uuid[], ${tx.json(kept as never)}, ${confidence}, ${at})
    on conflict (owner_id, session_id, project, signal_key) do update
       set memory_ids = excluded.memory_ids, predicted_ids = excluded.predicted_ids, refs = excluded.refs,
           confidence = excluded.confidence, computed_at = excluded.computed_at`;
}
