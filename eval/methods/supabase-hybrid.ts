// Supabase's documented hybrid search (guide "Hybrid search": full-text + semantic, fused with
// reciprocal rank fusion), installed by the eval into its own schema from
// eval/sql/supabase_hybrid_search.sql, never by a migration. Called as the tenant (RLS) over the
// same rows as the other methods.
import { toVectorLiteral, withTenant } from "../../supabase/functions/_shared/db.ts";
import type { Sql } from "../../supabase/functions/_shared/db.ts";
import { type RetrievalMethod, scopePrefixes } from "./method.ts";

const DEFINITION = new URL("../sql/supabase_hybrid_search.sql", import.meta.url);

/** Creates schema `eval` and eval.supabase_hybrid_search (as the database owner). */
export async function installSupabaseHybrid(sql: Sql): Promise<void> {
  await sql.unsafe(await Deno.readTextFile(DEFINITION));
}

export const supabaseHybrid: RetrievalMethod = {
  name: "supabase_hybrid",
  description: "Supabase's hybrid_search recipe (websearch_to_tsquery + inner product, RRF k=50) with a tenant filter",
  async rank(q, ctx) {
    const [vector] = await ctx.embedder.embed([q.text]);
    if (!vector) throw new Error("the embedder returned no vector");
    const tenantId = ctx.tenantIdOf(q.tenant);
    const rows = await withTenant(ctx.sql, { tenantId, actor: "eval" }, (tx) =>
      tx<{ id: string }[]>`
        select id from eval.supabase_hybrid_search(
          query_text => ${q.text},
          query_embedding => ${toVectorLiteral(vector)}::extensions.vector,
          match_count => 30,
          match_owner => ${tenantId}::uuid,
          match_scopes => ${scopePrefixes(ctx.root, q.project)}::text[],
          match_embedding_model => ${ctx.embedder.model})`);
    return rows.map((r) => r.id);
  },
};
