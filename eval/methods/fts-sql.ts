// Reference baseline: Postgres full-text search alone, in SQL. The question's words (stemmed, stop
// words dropped, as the `fts` column was built) are OR-ed, so any informative word can match,
// and rows are ordered by plain ts_rank; same tenant (RLS), scopes and eligibility as retrieval.
// Ties are broken by content so the list is the same on every run.
import { withTenant } from "../../supabase/functions/_shared/db.ts";
import { type RetrievalMethod, scopePrefixes } from "./method.ts";

export const ftsSql: RetrievalMethod = {
  name: "fts_sql",
  description: "SQL baseline: ts_rank over the fts column, any question word may match",
  async rank(q, ctx) {
    const tenantId = ctx.tenantIdOf(q.tenant);
    const rows = await withTenant(ctx.sql, { tenantId, actor: "eval" }, (tx) =>
      tx<{ id: string }[]>`
        with query as (
          select (select string_agg(quote_literal(lexeme), ' | ')
                    from unnest(tsvector_to_array(to_tsvector('english', ${q.text}))) as lexeme)::tsquery as tsq
        )
        select m.id
          from public.devai_memories m, query
         where m.owner_id = ${tenantId}::uuid and m.is_valid and m.state = 'active' and m.strength > 0.05
           and (m.namespace || '/') ^@ any (${scopePrefixes(ctx.root, q.project)}::text[])
           and m.fts @@ query.tsq
         order by ts_rank(m.fts, query.tsq) desc, m.content
         limit 50`);
    return rows.map((r) => r.id);
  },
};
