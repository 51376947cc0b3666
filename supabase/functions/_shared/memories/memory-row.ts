// The columns a memory is returned with: everything but the embedding (512 floats nobody reads in
// JSON) and the derived tsvector. One list, so every route and the export agree on the shape.
import type { Sql, Tx } from "../db.ts";

export const MEMORY_COLUMNS = [
  "id",
  "content",
  "memory_type",
  "namespace",
  "priority",
  "source",
  "strength",
  "base_strength",
  "access_count",
  "last_accessed_at",
  "session_id",
  "is_valid",
  "superseded_by",
  "created_at",
  "updated_at",
  "importance",
  "pinned",
  "state",
  "purge_at",
  "embedding_model",
  "metadata",
  "content_hash",
  "valid_from",
  "valid_until",
] as const;

/** `m.id, m.content, …` (or unqualified, for RETURNING) as a query fragment. */
export function memoryColumns(q: Sql | Tx, alias?: string) {
  const prefix = alias ? `${alias}.` : "";
  return q.unsafe(MEMORY_COLUMNS.map((c) => prefix + c).join(", "));
}

type Row = Record<string, unknown>;

/** Timestamps as ISO strings (what JSON carries), so pure modules and tests see one shape. */
export function isoDates<T extends Row>(row: T): T {
  const out: Row = {};
  for (const [k, v] of Object.entries(row)) out[k] = v instanceof Date ? v.toISOString() : v;
  return out as T;
}
