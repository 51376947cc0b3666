// What a retrieval method is to the eval: given a question asked in a project, the memories it
// ranks, best first. Each method is one small adapter (eval/README.md#adding-a-method).
import type { Sql } from "../../supabase/functions/_shared/db.ts";
import type { Embedder } from "../../supabase/functions/_shared/embeddings.ts";
import type { EvalQuestion } from "../dataset.ts";

export interface EvalContext {
  /** `<server>/functions/v1` of the functions server the eval started. */
  functionsUrl: string;
  /** The eval database as its owner; SQL methods run their queries as the tenant (withTenant). */
  sql: Sql;
  /** The embedder the functions use (same model), for SQL methods that need a query vector. */
  embedder: Embedder;
  /** MEMORY_NAMESPACE_ROOT, e.g. `devai`. */
  root: string;
  /** The dataset's fixed now; a method whose API resolves time phrases should send it. */
  now: Date;
  /** A user token for the tenant (role authenticated, sub = the tenant's uuid). */
  tokenOf(tenant: string): string;
  tenantIdOf(tenant: string): string;
}

export interface RetrievalMethod {
  name: string;
  /** One line for the report. */
  description: string;
  /** Memory uuids, best first (at least 20 when the scope has them). */
  rank(question: EvalQuestion, ctx: EvalContext): Promise<string[]>;
}

/** The three scopes retrieval searches for a project, as '/'-terminated namespace prefixes. */
export function scopePrefixes(root: string, project: string): string[] {
  return [`${root}/global/`, `${root}/project/${project}/`, `${root}/user/`];
}

/** POSTs JSON to a function as the question's tenant; any non-2xx answer stops the eval. */
export async function callFunction<T>(ctx: EvalContext, tenant: string, path: string, body: unknown): Promise<T> {
  const res = await fetch(`${ctx.functionsUrl}/${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${ctx.tokenOf(tenant)}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`POST ${path} answered ${res.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text) as T;
}
