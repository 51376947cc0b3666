// A call of the entities listing (GET memory/entities, _shared/memories/entities.ts) as one
// tenant, with the rows of public.memory_entities its transaction fetched: the cost tests count
// rows read (index and sequential), not times.
import { withTenant } from "../../supabase/functions/_shared/db.ts";
import { type EntityListPage, listEntities } from "../../supabase/functions/_shared/memories/entities.ts";
import { EntityListQuery } from "../../supabase/functions/_shared/memories/schemas.ts";
import type { testSql } from "./seed.ts";

export async function listEntitiesCounted(
  sql: ReturnType<typeof testSql>,
  tenantId: string,
  query: Record<string, string>,
): Promise<EntityListPage & { fetched: number }> {
  const q = EntityListQuery.parse(query);
  return await withTenant(sql, { tenantId, actor: "test" }, async (tx) => {
    const fetched = () =>
      tx<{ n: string }[]>`
        select idx_tup_fetch + seq_tup_read as n from pg_stat_xact_user_tables
         where relid = 'public.memory_entities'::regclass`.then(([r]) => Number(r?.n ?? 0));
    const before = await fetched();
    const page = await listEntities(tx, q);
    return { ...page, fetched: (await fetched()) - before };
  });
}
