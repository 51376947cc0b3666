// What the writers share around the redactor (redact.ts): a person's statement redacted or refused,
// and the counts, as the tenant's memory_events rows (op 'redact'): one row per write that
// replaced or dropped anything, with the writer, the kinds and how many texts were dropped as
// nothing but a secret. memory/stats sums them (docs/redaction.md).
import type { Tx } from "./db.ts";
import { HttpError } from "./http.ts";
import { type Redaction, type RedactionCounts, redactSecrets } from "./redact.ts";

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

/**
 * A statement a person sends (remember, correct, a merged resolution) with its secrets redacted; a
 * statement that is nothing but a secret is refused (422), writing nothing.
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
  return r;
}
