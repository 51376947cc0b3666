// What the operations on one memory share: the row as the API's Memory, its 404, its row lock and
// its content hash (and the lock on a text's hash that its duplicate checks take).
import type { Tx } from "../db.ts";
import { HttpError } from "../http.ts";
import { isoDates, memoryColumns } from "./memory-row.ts";
import type { Memory } from "./schemas.ts";

export const toMemory = (row: Record<string, unknown> | undefined): Memory => isoDates(row!) as unknown as Memory;

export function notFound(id: string): HttpError {
  return new HttpError(404, "not_found", `memory ${id} not found`);
}

/**
 * The memory, locked for the rest of the transaction (most writes start here); 404 when the tenant has none.
 * `for no key update`, what the writes' own UPDATEs take (no write changes id or owner_id): other
 * writers and a purge wait, a row that only references the memory (an edge, a usage record, a
 * contradiction: their foreign keys' key-share checks) does not, so it cannot close a wait cycle.
 */
export async function lockMemory(tx: Tx, id: string): Promise<Memory> {
  const [row] = await tx`select ${
    memoryColumns(tx, "m")
  } from public.devai_memories m where m.id = ${id} for no key update`;
  if (!row) throw notFound(id);
  return toMemory(row);
}

// Same normalisation as memory_private.content_hash (what the content_hash column is derived with). That
// function is not callable by `authenticated` (its schema is private), so the expression is
// repeated here; the regex travels as a parameter so no escaping layer can alter it.
export function contentHashSql(q: Tx, content: string) {
  return q`encode(sha256(convert_to(lower(${spacedSql(q, content)}), 'UTF8')), 'hex')`;
}

/**
 * A text in NFC with its runs of whitespace as one space, trimmed: how the duplicate check (with
 * letter case ignored too) and correct's "says the same" compare texts, so "café" with one letter é
 * and with e + U+0301 are one text (migration 20261209400000). `\s` is a query parameter: written in
 * the SQL template, it would lose its backslash.
 */
export function spacedSql(q: Tx, text: string | ReturnType<Tx["unsafe"]>) {
  return q`btrim(regexp_replace(normalize(${text}::text, nfc), ${"\\s+"}, ' ', 'g'))`;
}

/**
 * Serialises, within a tenant, the writes that look for a duplicate of a text before storing it
 * (remember, correct, restore, a contradiction's merge, accepting a proposal, a dedup pass): held to
 * the end of the transaction, so the check and the insert of one cannot interleave with another's
 * and store the text twice. Taken before any memory row (docs/operations.md#lock-order); a write of
 * two texts (a dedup pass applying a merged text) takes both in the order of their keys.
 */
export async function lockContentHash(tx: Tx, tenantId: string, ...contents: string[]): Promise<void> {
  const key = (content: string) => tx`hashtextextended(${tenantId} || ':' || ${contentHashSql(tx, content)}, 0)`;
  if (contents.length === 1) {
    await tx`select pg_advisory_xact_lock(${key(contents[0]!)})`;
    return;
  }
  const keys: bigint[] = [];
  for (const content of contents) {
    const [row] = await tx<{ k: string }[]>`select ${key(content)}::text as k`;
    keys.push(BigInt(row!.k));
  }
  for (const k of [...new Set(keys)].sort((a, b) => a < b ? -1 : a > b ? 1 : 0)) {
    await tx`select pg_advisory_xact_lock(${k.toString()}::bigint)`;
  }
}

/**
 * The live memory (valid, active, not an episode) in one of `scopes` that says `text`, letter case
 * and spacing aside (its content_hash): the one duplicate check of every writer (remember, correct,
 * restore, a contradiction's merge, a proposal's accept, dedup). The user's own statement first,
 * then the oldest. `except`: the memories being replaced (corrected, restored, merged), which may
 * say the text themselves. `sameCase`: letter case counts too (a correction's, which may change
 * only the case).
 */
export async function liveWithText(
  tx: Tx,
  ownerId: string,
  text: string,
  scopes: readonly string[],
  except: readonly string[] = [],
  opts: { sameCase?: boolean } = {},
): Promise<Memory | undefined> {
  const [row] = await tx`
    select ${memoryColumns(tx, "m")} from public.devai_memories m
     where m.owner_id = ${ownerId} and m.content_hash = ${contentHashSql(tx, text)}
       and m.is_valid and m.state = 'active' and m.source is distinct from 'conversation'
       and (m.namespace || '/') ^@ any (${scopes as string[]}::text[])
       and m.id <> all (${except as string[]}::uuid[])
       ${opts.sameCase ? tx`and ${spacedSql(tx, tx.unsafe("m.content"))} = ${spacedSql(tx, text)}` : tx``}
     order by (m.source = 'user_stated') desc, m.created_at, m.id
     limit 1`;
  return row ? toMemory(row) : undefined;
}

/**
 * liveWithText's memory, its row locked and live as it is now: one read live before its lock may
 * have been superseded or forgotten meanwhile by the write that held the row (a correction of it, a
 * forget), which takes no lock on this text. Then the next one that says it, or none.
 */
export async function lockedLiveWithText(
  tx: Tx,
  ownerId: string,
  text: string,
  scopes: readonly string[],
): Promise<Memory | undefined> {
  const gone: string[] = [];
  for (;;) {
    const seen = await liveWithText(tx, ownerId, text, scopes, gone);
    if (!seen) return undefined;
    const [row] = await tx`select ${
      memoryColumns(tx, "m")
    } from public.devai_memories m where m.id = ${seen.id} for no key update`;
    const now = row ? toMemory(row) : undefined;
    if (now?.is_valid && now.state === "active" && !now.superseded_by) return now;
    gone.push(seen.id);
  }
}

/** Said by the user already: a user-stated memory or a correction (never decays, shielded from the LLM). */
export function statedAlready(m: Memory): boolean {
  return (m.source === "user_stated" || m.source === "correction") && m.priority === "highest";
}

/**
 * The user states what `m` says (a remember, a correction or a contradiction's merge to its text):
 * a memory the agent learned becomes user-stated (history UPDATE), pinned too with `pin`. One said
 * by the user already, pinned when asked: unchanged, nothing written.
 */
export async function statedByUser(tx: Tx, m: Memory, pin = false): Promise<Memory> {
  if (statedAlready(m) && (m.pinned || !pin)) return m;
  const [row] = await tx`
    update public.devai_memories
       set priority = 'highest', source = ${statedAlready(m) ? m.source : "user_stated"},
           strength = 1, base_strength = 1, pinned = pinned or ${pin}, last_accessed_at = now()
     where id = ${m.id} returning ${memoryColumns(tx)}`;
  return toMemory(row);
}

/**
 * `keep` now says the fact that was filed under `category` (a correction or restore replaced a memory
 * by it, a proposal accepted or a contradiction merged into it): without a category of its own it
 * takes that one, so memory.query still serves the fact to the agents it served it to (a memory
 * without a category is on no allowlist). Unchanged otherwise.
 */
export async function takeCategory(tx: Tx, keep: Memory, category: unknown): Promise<Memory> {
  if (typeof category !== "string" || keep.metadata?.category !== undefined) return keep;
  const [row] = await tx`
    update public.devai_memories set metadata = metadata || ${tx.json({ category } as never)}
     where id = ${keep.id} returning ${memoryColumns(tx)}`;
  return toMemory(row);
}
