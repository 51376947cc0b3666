// The agent's persistent checkpointer (public.supervisor_checkpoints): one JSON state per (tenant,
// thread), saved and loaded whole, with optimistic concurrency. A save names the version it read
// (0, or none, to create the thread's first checkpoint) and gets version + 1; a save naming any
// other version is refused (409) and writes nothing, so two agents of one thread never overwrite
// each other silently. The state travels as JSON text end to end (never parsed and re-serialised
// on a load), which keeps a 1 MB checkpoint's save and load well under 100 ms
// (docs/consolidation.md#checkpoints, bench/README.md). Every string of the state, at any depth, is
// redacted before it is stored, like a transcript (docs/redaction.md): a checkpoint holds the
// conversation and tool outputs, and was the one writer that stored their secrets as sent.
import { z } from "zod";
import { type Sql, type TenantContext, withTenant } from "./db.ts";
import { HttpError } from "./http.ts";
import { type KeyCollision, redactJsonSliced } from "./redact-json.ts";
import { recordRedactions } from "./redaction-events.ts";
import { threadId, withoutNul } from "./schemas.ts";

export const checkpointThreadId = threadId;

export const CheckpointSaveRequest = z
  .object({
    /**
     * The whole state: a JSON object (graph state, memory context, conversation, agents' states),
     * kept as parsed: z.record would copy it key by key, and a key `__proto__` (a state keyed by
     * words, say) would be lost, taken by the copy as its prototype.
     */
    state: withoutNul(z.custom<Record<string, unknown>>(
      (v) => typeof v === "object" && v !== null && !Array.isArray(v),
      "state must be a JSON object",
    )),
    /** The version this state was derived from: 0 (or none) creates the thread's checkpoint. */
    version: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
  })
  .strict();
export type CheckpointSaveRequest = z.infer<typeof CheckpointSaveRequest>;

export interface CheckpointInfo {
  thread_id: string;
  version: number;
  size_bytes: number;
  created_at: string;
  updated_at: string;
}

export interface SavedCheckpoint extends CheckpointInfo {
  created: boolean;
}

const conflict = (thread: string, current: number | undefined, expected: number) =>
  new HttpError(
    409,
    "version_conflict",
    current === undefined
      ? `thread ${thread} has no checkpoint at version ${expected}: load it again (404 means none yet: save with version 0)`
      : `thread ${thread} is at version ${current}, not ${expected}: another writer saved since; load it, merge, and save with version ${current}`,
  );

// Two keys of one object that become one once stored (two tokens of one kind, a token and the
// marker an earlier load returned, or two keys cut mid-emoji): storing them would keep one value and lose the other without a
// word, so the save is refused, nothing written.
const keysCollide = (collisions: KeyCollision[]) =>
  new HttpError(
    400,
    "invalid_request",
    "state has keys that become the same key once stored (a secret redacted, a lone surrogate made U+FFFD): one " +
      "value would be lost, so nothing was written; key those objects by something that is not a secret",
    collisions.slice(0, 10).map((c) => ({
      path: ["state", ...c.path],
      message: `two keys become ${JSON.stringify(c.key)}`,
    })),
  );

const storedTooLarge = (size: number, max: number) =>
  new HttpError(
    413,
    "payload_too_large",
    `a checkpoint is at most ${max} bytes (MAX_CHECKPOINT_BYTES) as stored, and this state is ${size} once its ` +
      "secrets are redacted (a marker may be longer than the secret): keep secrets and large artefacts out of the state",
  );

/** Saves the thread's state (see the module comment); 201 semantics when it created the checkpoint. */
export async function saveCheckpoint(
  sql: Sql,
  tenant: TenantContext,
  thread: string,
  body: CheckpointSaveRequest,
  maxBytes: number,
): Promise<SavedCheckpoint> {
  // Secrets become their markers, and a lone surrogate (a tool output cut mid-emoji) U+FFFD, which
  // jsonb can store; the version and what a load returns are the stored state's, so a save's
  // compare-and-set is unchanged (it compares versions, never states).
  const { value: state, counts, collisions } = await redactJsonSliced(body.state);
  if (collisions.length > 0) throw keysCollide(collisions);
  const text = JSON.stringify(state);
  const size = new TextEncoder().encode(text).byteLength;
  // A marker can be longer than the secret it replaces (`https://u:p@h` → `[REDACTED:password]`):
  // what is stored stays within the limit, so a state loaded back can always be saved again.
  if (size > maxBytes) throw storedTooLarge(size, maxBytes);
  const expected = body.version ?? 0;
  return await withTenant(sql, tenant, async (tx) => {
    const rows = expected === 0
      ? await tx<CheckpointInfo[]>`
          insert into public.supervisor_checkpoints (owner_id, thread_id, state, size_bytes)
          values (${tenant.tenantId}, ${thread}, ${text}::text::jsonb, ${size})
          on conflict (owner_id, thread_id) do nothing
          returning thread_id, version::float8 as version, size_bytes, created_at, updated_at`
      : await tx<CheckpointInfo[]>`
          update public.supervisor_checkpoints
             set state = ${text}::text::jsonb, size_bytes = ${size}, version = version + 1
           where thread_id = ${thread} and version = ${expected}
          returning thread_id, version::float8 as version, size_bytes, created_at, updated_at`;
    if (rows[0]) {
      // Counted only with a save that wrote (a 409 rolls the count back with the rest).
      await recordRedactions(tx, { ownerId: tenant.tenantId, writer: "checkpoint", node: "hotpath", counts });
      return { ...iso(rows[0]), created: expected === 0 };
    }
    const [current] = await tx<{ version: number }[]>`
      select version::float8 as version from public.supervisor_checkpoints where thread_id = ${thread}`;
    throw conflict(thread, current?.version, expected);
  });
}

const ISO_MS = 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"';

/** The thread's checkpoint as a JSON document (the state spliced in as stored), or undefined. */
export async function loadCheckpointJson(
  sql: Sql,
  tenant: TenantContext,
  thread: string,
): Promise<{ json: string; version: number } | undefined> {
  const [row] = await withTenant(sql, tenant, (tx) =>
    tx<{ head: string; state: string; version: number }[]>`
      select json_build_object('thread_id', thread_id, 'version', version, 'size_bytes', size_bytes,
                               -- as a save answers them (toISOString): UTC, milliseconds, Z
                               'created_at', to_char(created_at at time zone 'UTC', ${ISO_MS}),
                               'updated_at', to_char(updated_at at time zone 'UTC', ${ISO_MS}))::text as head,
             state::text as state, version::float8 as version
        from public.supervisor_checkpoints where thread_id = ${thread}`);
  if (!row) return undefined;
  return { json: `${row.head.slice(0, -1)}, "state" : ${row.state}}`, version: row.version };
}

function iso(r: CheckpointInfo): CheckpointInfo {
  const d = (v: unknown) => (v instanceof Date ? v.toISOString() : String(v));
  return {
    thread_id: r.thread_id,
    version: Number(r.version),
    size_bytes: r.size_bytes,
    created_at: d(r.created_at),
    updated_at: d(r.updated_at),
  };
}
