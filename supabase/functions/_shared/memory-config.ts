// Deployment-wide memory configuration: the categories a memory can be filed under
// (public.memory_categories) and which categories each memory.query agent may read
// (public.memory_agent_allowlists). Every signed-in caller reads them; only the service role
// changes them (table grants and policies: migrations 20261122003000 and 20261124200000). The
// memory function's /memory/categories and /memory/agents routes and memory.query's allowlist
// check are adapters over these.
import type { Tx } from "./db.ts";
import { HttpError } from "./http.ts";
import { loadCategoryNames, unknownCategory } from "./categories.ts";

export interface CategoryConfig {
  name: string;
  /** all: returned by memory.query without the similarity threshold; rag: by similarity only. */
  context: "all" | "rag";
  /** At most this many memories of the category per query (null: top_k only). */
  rag_length: number | null;
  kind: "system" | "custom";
  /** Agents whose allowlist has it. */
  agents: string[];
}

export interface AgentConfig {
  agent: string;
  categories: string[];
}

export async function listCategories(tx: Tx): Promise<CategoryConfig[]> {
  return await tx<CategoryConfig[]>`
    select c.name, c.context, c.rag_length, c.kind,
           coalesce(array_agg(a.agent order by a.agent) filter (where a.agent is not null), '{}') as agents
      from public.memory_categories c
      left join public.memory_agent_allowlists a on a.category = c.name
     group by c.name
     order by c.name`;
}

/**
 * Creates a category (custom, 'rag', no cap unless given) or changes the fields given of an
 * existing one. Returns it and whether it is new.
 */
export async function upsertCategory(
  tx: Tx,
  name: string,
  change: { context?: "all" | "rag"; rag_length?: number | null },
): Promise<{ created: boolean; category: CategoryConfig }> {
  // xmax = 0 only on a freshly inserted row: how Postgres tells an insert from an update here.
  const [row] = await tx<{ created: boolean }[]>`
    insert into public.memory_categories as c (name, context, rag_length)
    values (${name}, ${change.context ?? "rag"}, ${change.rag_length ?? null})
    on conflict (name) do update
      set context = coalesce(${change.context ?? null}::text, c.context),
          rag_length = case when ${change.rag_length !== undefined} then ${
    change.rag_length ?? null
  }::integer else c.rag_length end
    returning (xmax = 0) as created`;
  const category = (await listCategories(tx)).find((c) => c.name === name)!;
  return { created: row!.created, category };
}

export async function listAgents(tx: Tx): Promise<AgentConfig[]> {
  return await tx<AgentConfig[]>`
    select agent, array_agg(category order by category) as categories
      from public.memory_agent_allowlists
     group by agent
     order by agent`;
}

/** The categories an agent may read (sorted); empty for an agent nobody configured. */
export async function loadAllowlist(tx: Tx, agent: string): Promise<string[]> {
  const rows = await tx<{ category: string }[]>`
    select category from public.memory_agent_allowlists where agent = ${agent} order by category`;
  return rows.map((r) => r.category);
}

/** The categories an agent may read; 403 unknown_agent naming the configured agents when it has none. */
export async function requireAllowlist(tx: Tx, agent: string): Promise<string[]> {
  const allowed = await loadAllowlist(tx, agent);
  if (allowed.length > 0) return allowed;
  const agents = (await listAgents(tx)).map((a) => a.agent);
  throw new HttpError(
    403,
    "unknown_agent",
    `agent '${agent}' has no memory allowlist; configured agents: ${agents.join(", ")} ` +
      `(a service_role caller adds one with PUT memory/agents/${agent} {"categories": [...]})`,
  );
}

/**
 * Sets an agent's allowlist to exactly `categories` (an unknown category is a 400 naming the
 * configured ones, and nothing changes). Returns the new list and whether the agent is new.
 */
export async function upsertAgent(
  tx: Tx,
  agent: string,
  categories: readonly string[],
): Promise<{ created: boolean; agent: AgentConfig }> {
  const known = await loadCategoryNames(tx);
  categories.forEach((c, i) => {
    if (!known.includes(c)) throw unknownCategory(c, known, ["categories", i]);
  });
  // One agent's rows change at a time, so two concurrent upserts cannot interleave their lists.
  await tx`select pg_advisory_xact_lock(hashtextextended(${`devai-agent|${agent}`}, 0))`;
  const before = await loadAllowlist(tx, agent);
  const wanted = [...new Set(categories)];
  await tx`delete from public.memory_agent_allowlists where agent = ${agent} and not (category = any (${wanted}::text[]))`;
  await tx`
    insert into public.memory_agent_allowlists (agent, category)
    select ${agent}, c from unnest(${wanted}::text[]) as c
    on conflict do nothing`;
  return { created: before.length === 0, agent: { agent, categories: await loadAllowlist(tx, agent) } };
}
