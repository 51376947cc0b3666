// Why a memory.query answer is empty, when the reason is the category model and not the query:
// memory.query serves only memories whose category (metadata.category; a procedural memory's is
// `procedural`) is on the agent's allowlist, so a memory stored without a category (remember
// without metadata.category, most extracted facts) is never served here, whatever the query. The
// allowlist decides; the hint only says so (README "Categories and agents").
import { readAsTenant, type TenantContext } from "../db.ts";
import { readPoolOf, type SearchDeps } from "../services/deps.ts";

/**
 * The hint of an empty answer: undefined unless a live memory without a category is in the
 * searched scopes. One indexed read (devai_memories_owner_category), made for empty answers only.
 */
export async function emptyQueryHint(
  deps: SearchDeps,
  caller: TenantContext,
  agent: string,
  scopes: string[],
): Promise<string | undefined> {
  // Through a function: a table the statement named itself would be read as the login role, not
  // under the tenant's row-level security (db.ts tenantItem).
  const [row] = await readAsTenant(readPoolOf(deps), caller, (q, tenant) =>
    q<{ uncategorised: boolean }[]>`
      select memory_search.uncategorised_in_scopes(${caller.tenantId}::uuid, ${scopes}::text[]) as uncategorised
        from ${tenant}`);
  if (!row?.uncategorised) return undefined;
  return `memory.query serves only memories whose category (metadata.category; procedural memories count as ` +
    `procedural) is on agent '${agent}''s allowlist: memories without a category, as remember stores them unless ` +
    `metadata.category is given, are never served here. Search them with POST memory-retrieve (search_memory), ` +
    `or remember facts with a category the agent may read (GET memory/agents/${agent}).`;
}
