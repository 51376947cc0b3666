// The exact-duplicate key of a memory's content, as SQL: memory_private.content_hash (what the
// content_hash column is derived with), written out because the tenant role has no usage on that
// schema. The regex travels as a parameter so no escaping layer can alter it.
import type { Tx } from "./db.ts";

export function contentHashSql(q: Tx, content: string) {
  return q`encode(sha256(convert_to(lower(btrim(regexp_replace(${content}::text, ${"\\s+"}, ' ', 'g'))), 'UTF8')), 'hex')`;
}
