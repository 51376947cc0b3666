// What the writers share around the redactor (redact.ts): a person's statement redacted or refused,
// and the counts, as the tenant's memory_events rows (op 'redact'): one row per write that
// replaced or dropped anything, with the writer, the kinds and how many texts were dropped as
// nothing but a secret. memory/stats sums them (docs/redaction.md).
import type { Tx } from "./db.ts";
import { HttpError } from "./http.ts";
import { addCounts, type ReadAs, redactField, type Redaction, type RedactionCounts, redactSecrets } from "./redact.ts";

export interface RedactionRecord {
  ownerId: string;
  /** Who wrote: remember, correct, episodes, extract, compact, dedup, consolidation, … */
  writer: string;
  node: "hotpath" | "context" | "episodic" | "worker";
  counts: RedactionCounts;
  /** Texts dropped because nothing but a secret was left. */
  dropped?: number;
  threadId?: string;
}

export async function recordRedactions(tx: Tx, r: RedactionRecord): Promise<void> {
  const total = Object.values(r.counts).reduce((n, c) => n + (c ?? 0), 0);
  if (total === 0 && !r.dropped) return;
  await tx`
    insert into public.memory_events (owner_id, thread_id, node, op, status, meta)
    values (${r.ownerId}, ${r.threadId ?? null}, ${r.node}, 'redact', 'ok',
            ${tx.json({ writer: r.writer, redacted: total, dropped: r.dropped ?? 0, by_kind: r.counts } as never)})`;
}

/** Characters a memory's content holds as stored (devai_memories_content_length: char_length, trimmed). */
export const STORED_CONTENT_MAX = 8000;

/**
 * A statement a person sends (remember, correct, a merged resolution) with its secrets redacted; a
 * statement that is nothing but a secret is refused (422), writing nothing. So is one whose markers
 * make it longer than a memory holds: `[REDACTED:password]` is longer than `Xk9fj2`, and 3,995
 * characters of `pw=…` became 11,972, refused by the column's check with the database's words
 * ("violates check constraint devai_memories_content_length").
 */
export function redactStatement(content: string): Redaction {
  const r = redactSecrets(content);
  if (r.onlySecret) {
    throw new HttpError(
      422,
      "only_secret",
      "the content is nothing but a secret (a key, token or password); memory never stores secrets, so nothing was written",
    );
  }
  refuseOverlong(r);
  return r;
}

/**
 * A text whose secrets' markers make it longer than a memory holds: 422 naming `field` (a statement's
 * `content`; an episode's `messages.3.content`), before the column's check would refuse it.
 */
export function refuseOverlong(r: Redaction, field = "content"): void {
  const length = [...r.text.trim()].length;
  if (length > STORED_CONTENT_MAX) {
    throw new HttpError(
      422,
      "unprocessable",
      `${field}: its ${r.total} secrets, each replaced by its [REDACTED:<kind>] marker, make it ${length} characters, over the ${STORED_CONTENT_MAX} a memory holds; nothing was written: send it in parts`,
    );
  }
}

/**
 * The free text of a stated memory's metadata (its agent, run, actor and user ids, keywords, repo,
 * branch and files: stored, in the history row, exported, shown) redacted like the statement it
 * comes with. Ids, the repo and the branch are read as ids (redact.ts ReadAs: `auth:login-bug-123`
 * is an agent's name, not an assignment); keywords and files as text. A value that is nothing but a
 * secret is dropped (a keyword from its list), the memory kept, and counted as dropped; but a repo
 * or branch keeps its marker, counted as replaced (it says where the memory was recorded). The
 * category, role and commit are names and hex digits, left as they are.
 */
export function redactMetadata<M extends Record<string, unknown>>(
  metadata: M | undefined,
): { metadata: M | undefined } & FieldTally {
  const done = emptyTally();
  if (!metadata) return { metadata, ...done };
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(metadata)) {
    const as: ReadAs = key === "keywords" || key === "files" ? "text" : "id";
    if (key === "category" || key === "role" || key === "commit") out[key] = value;
    else if (typeof value === "string" && (key === "repo" || key === "branch")) {
      // Where the memory was recorded (context/lineage.ts): one with no branch is project knowledge
      // on every branch, so a repo or branch that is nothing but a secret keeps its marker.
      const r = redactSecrets(value, "id");
      addCounts(done.counts, r.counts);
      done.total += r.total;
      out[key] = r.text;
    } else if (typeof value === "string") {
      const text = tallied(done, value, as);
      if (text !== undefined) out[key] = text;
    } else if (Array.isArray(value)) out[key] = talliedList(done, value, as);
    else out[key] = value;
  }
  return { metadata: out as M, ...done };
}

/** The secrets replaced and the texts dropped as nothing but a secret, over the fields of one write. */
export interface FieldTally {
  counts: RedactionCounts;
  total: number;
  dropped: number;
}

export function emptyTally(): FieldTally {
  return { counts: {}, total: 0, dropped: 0 };
}

/** A field redacted (redactField), counted in the tally; undefined when it was nothing but a secret. */
export function tallied(tally: FieldTally, text: string | undefined, as: ReadAs = "text"): string | undefined {
  const r = redactField(text, as);
  addCounts(tally.counts, r.counts);
  tally.total += r.total;
  tally.dropped += r.dropped;
  return r.text;
}

/** A list's strings redacted (tallied), one that is nothing but a secret dropped from it; other values kept. */
export function talliedList<T>(tally: FieldTally, values: readonly T[], as: ReadAs = "text"): T[] {
  return values.flatMap((v) => typeof v === "string" ? (tallied(tally, v, as) as T | undefined) ?? [] : [v]);
}

/**
 * A statement's redaction with the fields stored beside it counted in (one memory_events row for
 * the write), and how many of those fields were dropped as nothing but a secret.
 */
export function countedWith(
  statement: Redaction,
  ...fields: FieldTally[]
): Redaction & { dropped: number } {
  const counts = { ...statement.counts };
  for (const f of fields) addCounts(counts, f.counts);
  return {
    ...statement,
    counts,
    total: fields.reduce((n, f) => n + f.total, statement.total),
    dropped: fields.reduce((n, f) => n + f.dropped, 0),
  };
}
