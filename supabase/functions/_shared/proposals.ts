// Consent for sensitive facts (docs/consolidation.md#consent). A fact about who the user is or where
// (preferred name, pronouns, city, language, employer) that a model proposed (LLM extraction,
// compaction, session consolidation, an agent's memory-dedup) is not applied: it waits in
// public.memory_proposals for proposal_days (7) until the user accepts it (it becomes a memory) or
// rejects it; unanswered, it lapses (memory_private.lapse_proposals, nightly). The user's own words
// (remember, correct, the rule extractor's "remember …") apply at once. Every decision is a history
// row under the proposal's id (PROPOSE, ACCEPT, REJECT, LAPSE), written by a trigger.
import { z } from "zod";
import { type Candidate, isProtected } from "./candidates.ts";
import { lockContentHash, lockedLiveWithText, takeCategory } from "./memories/record.ts";
import type { Config } from "./env.ts";
import { MAX_PAGE_LIMIT } from "./memories/schemas.ts";
import { queryInt, visibleScopes } from "./schemas.ts";
import { queueContradictionCheck } from "./contradiction-check.ts";
import { type Sql, type TenantContext, toVectorLiteral, type Tx, withTenant } from "./db.ts";
import { type Embedder, embedForRequest } from "./embeddings.ts";
import { linkEntitiesByRules } from "./entities.ts";
import { HttpError } from "./http.ts";

export const SENSITIVE_FIELDS = ["preferred_name", "pronouns", "city", "language", "employer"] as const;
export type SensitiveField = typeof SENSITIVE_FIELDS[number];

// Who the fact is about: the user (as the writing constraints have it, "the user …"), or a person
// named at the start ("Ana lives in Porto"). "The API server is located in eu-west-1" is not.
const ABOUT_THE_USER = /\b(?:the )?(?:user|developer|engineer|owner|maintainer|author)(?:'s)?\b/i;
const NAMED_PERSON =
  /^(?!(?:The|This|That|These|Those|It|Its|A|An|Our|Each|Every|All|Some|When|If|CI|API)\b)[A-Z][a-z]{1,20}(?: [A-Z][a-z]{1,20})? (?:lives|is based|is located|moved|relocated|works|is employed|speaks|prefers|goes by|uses)\b/;
const LANGUAGES =
  "English|German|French|Spanish|Portuguese|Italian|Dutch|Polish|Swedish|Norwegian|Danish|Finnish|Czech|Greek|Turkish|Russian|Ukrainian|Arabic|Hebrew|Hindi|Bengali|Urdu|Chinese|Mandarin|Cantonese|Japanese|Korean|Vietnamese|Thai|Indonesian|Malay|Romanian|Hungarian";

const FIELD_PATTERNS: [SensitiveField, RegExp][] = [
  ["pronouns", /\bpronouns?\b|\b(?:he\/him|she\/her|they\/them|ze\/zir|xe\/xem)\b/i],
  [
    "preferred_name",
    /\b(?:prefers? to be (?:called|addressed as)|likes? to be called|wants? to be called|goes by|preferred name|nickname is|(?:first |full |real )?name is)\b/i,
  ],
  ["employer", /\b(?:works? (?:at|for)|is employed (?:at|by)|employer is|(?:job|position|role) at|joined [A-Z])/],
  [
    "city",
    /\b(?:lives|living|is based|is located|resides|moved|relocated|relocating|is moving) (?:in|to)\b|\b(?:hometown|home town|home city)\b/i,
  ],
  [
    "language",
    new RegExp(`\\b(?:speaks?|native language|mother tongue|first language)\\b|\\b(?:in|into) (?:${LANGUAGES})\\b`),
  ],
];

/** The sensitive field a statement sets, if it is about the user (see above); else undefined. */
export function sensitiveFieldOf(content: string): SensitiveField | undefined {
  const text = content.trim();
  if (!ABOUT_THE_USER.test(text) && !NAMED_PERSON.test(text)) return undefined;
  for (const [field, re] of FIELD_PATTERNS) if (re.test(text)) return field;
  return undefined;
}

export interface ProposalOrigin {
  ownerId: string;
  sessionId?: string;
  threadId?: string;
  origin: string;
  jobId?: string;
}

/**
 * Queues a model's sensitive fact for consent (in the writer's tenant transaction). The same text
 * already pending is not queued twice. Returns the pending proposal's id.
 */
export async function queueProposal(tx: Tx, c: Candidate, field: SensitiveField, ctx: ProposalOrigin): Promise<string> {
  const origin = { origin: ctx.origin, ...(ctx.jobId ? { job_id: ctx.jobId } : {}) };
  const [row] = await tx<{ id: string }[]>`
    with added as (
      insert into public.memory_proposals
        (owner_id, field, content, memory_type, namespace, importance, priority, source, category, session_id, thread_id, origin, expires_at)
      values (${ctx.ownerId}, ${field}, ${c.content}, ${c.type}, ${c.namespace}, ${c.importance},
              ${c.priority === "highest" ? "high" : c.priority}, ${c.source}, ${c.category ?? null}, ${
    ctx.sessionId ?? null
  },
              ${ctx.threadId ?? null}, ${tx.json(origin)},
              now() + make_interval(secs => public.memory_setting('proposal_days')::float8 * 86400))
      on conflict (owner_id, md5(lower(btrim(content)))) where status = 'pending' do nothing
      returning id
    )
    select id from added
    union all
    select id from public.memory_proposals
     where status = 'pending' and md5(lower(btrim(content))) = md5(lower(btrim(${c.content})))
    limit 1`;
  return row!.id;
}

/** A model's candidate that sets a sensitive field is queued (its proposal returned) instead of stored; anything else: undefined. */
export async function proposeIfSensitive(
  tx: Tx,
  c: Candidate,
  ctx: ProposalOrigin,
): Promise<{ id: string; field: SensitiveField } | undefined> {
  const field = isProtected(c) ? undefined : sensitiveFieldOf(c.content);
  return field ? { id: await queueProposal(tx, c, field, ctx), field } : undefined;
}

export const ProposalStatus = z.enum(["pending", "accepted", "rejected", "lapsed", "all"]);

export const ProposalListQuery = z
  .object({
    status: ProposalStatus.default("pending"),
    limit: queryInt(1, MAX_PAGE_LIMIT, 50),
  })
  .strict();
export type ProposalListQuery = z.infer<typeof ProposalListQuery>;

export interface Proposal {
  id: string;
  field: SensitiveField;
  content: string;
  memory_type: string;
  namespace: string;
  importance: number;
  category: string | null;
  status: "pending" | "accepted" | "rejected" | "lapsed";
  origin: Record<string, unknown>;
  created_at: string;
  expires_at: string;
  decided_at: string | null;
  decided_by: string | null;
  memory_id: string | null;
}

const PROPOSAL_COLUMNS =
  "id, field, content, memory_type, namespace, importance, category, status, origin, created_at, expires_at, decided_at, decided_by, memory_id";

export async function listProposals(sql: Sql, tenant: TenantContext, q: ProposalListQuery): Promise<Proposal[]> {
  const rows = await withTenant(sql, tenant, (tx) =>
    tx<Proposal[]>`
      select ${tx.unsafe(PROPOSAL_COLUMNS)} from public.memory_proposals
       where ${q.status === "all" ? tx`true` : tx`status = ${q.status}`}
       order by created_at desc, id desc
       limit ${q.limit}`);
  return rows.map(isoProposal);
}

/** The history events of a proposal's decisions, recorded under the proposal's id (never a memory's). */
export const PROPOSAL_EVENTS = ["PROPOSE", "ACCEPT", "REJECT", "LAPSE"] as const;

export interface ProposalDecision {
  id: string;
  event: typeof PROPOSAL_EVENTS[number];
  actor: string | null;
  new_ref: string | null;
  ts: string;
}

/** One proposal with its decisions (history rows, oldest first), or undefined (unknown, or another tenant's). */
export async function getProposal(
  sql: Sql,
  tenant: TenantContext,
  id: string,
): Promise<{ proposal: Proposal; history: ProposalDecision[] } | undefined> {
  return await withTenant(sql, tenant, async (tx) => {
    const [p] = await tx<Proposal[]>`select ${
      tx.unsafe(PROPOSAL_COLUMNS)
    } from public.memory_proposals where id = ${id}`;
    if (!p) return undefined;
    const history = await tx<ProposalDecision[]>`
      select id, event, actor, new_ref, ts from public.memory_history where memory_id = ${id} order by ts, seq nulls first, id`;
    return { proposal: isoProposal(p), history: history.map((h) => ({ ...h, ts: new Date(h.ts).toISOString() })) };
  });
}

export const PROPOSAL_ACTIONS = ["accept", "reject"] as const;
export type ProposalAction = typeof PROPOSAL_ACTIONS[number];

/**
 * The user's decision. accept: the fact becomes a memory (an exact duplicate already held is linked
 * instead of stored twice), embedded with the configured model; reject: nothing is stored. 404 for
 * an unknown (or another tenant's) id, 409 for a decided or expired proposal.
 */
export async function decideProposal(
  deps: { sql: Sql; embedder: Embedder; llm?: unknown; config: Pick<Config, "namespaceRoot"> },
  tenant: TenantContext,
  id: string,
  action: ProposalAction,
): Promise<{ proposal: Proposal; memory_id: string | null }> {
  const pending = await withTenant(deps.sql, tenant, (tx) => lockPending(tx, id, false));
  const vector = action === "accept" ? await embedForRequest(deps.embedder, pending.content) : undefined;
  return await withTenant(deps.sql, tenant, async (tx) => {
    const p = await lockPending(tx, id, true);
    let memoryId: string | null = null;
    if (vector) {
      // As remember does: a remember of the same text racing this accept waits, then finds it.
      await lockContentHash(tx, tenant.tenantId, p.content);
      // Remember's duplicate check: the text live in a scope visible from the proposal's namespace,
      // locked and live as it is now (not one a correction under way is replacing).
      const same = await lockedLiveWithText(
        tx,
        tenant.tenantId,
        p.content,
        visibleScopes(p.namespace, deps.config.namespaceRoot),
      );
      // The accepted fact keeps the category it was proposed under on the memory that says it.
      if (same) memoryId = (await takeCategory(tx, same, p.category)).id;
      else {
        const metadata = {
          consent: { proposal_id: p.id, field: p.field },
          ...(p.category ? { category: p.category } : {}),
        };
        const [row] = await tx<{ id: string }[]>`
          insert into public.devai_memories
            (owner_id, content, embedding, embedding_model, memory_type, namespace, priority, source, importance, session_id, metadata)
          select ${tenant.tenantId}, p.content, ${
          toVectorLiteral(vector)
        }::extensions.vector, ${deps.embedder.model}, p.memory_type,
                 p.namespace, p.priority, p.source, p.importance, p.session_id, ${tx.json(metadata as never)}
            from public.memory_proposals p where p.id = ${id}
          returning id`;
        memoryId = row!.id;
        await linkEntitiesByRules(tx, [{ id: memoryId, content: p.content }]);
        if (deps.llm) await queueContradictionCheck(tx, tenant.tenantId, [memoryId]);
      }
    }
    const [row] = await tx<Proposal[]>`
      update public.memory_proposals
         set status = ${
      action === "accept" ? "accepted" : "rejected"
    }, decided_at = now(), decided_by = ${tenant.actor}, memory_id = ${memoryId}
       where id = ${id}
      returning ${tx.unsafe(PROPOSAL_COLUMNS)}`;
    return { proposal: isoProposal(row!), memory_id: memoryId };
  }, { threadId: pending.thread_id ?? undefined });
}

async function lockPending(tx: Tx, id: string, lock: boolean) {
  const [p] = lock
    ? await tx<(Proposal & { thread_id: string | null; expired: boolean })[]>`
        select *, expires_at <= now() as expired from public.memory_proposals where id = ${id} for update`
    : await tx<(Proposal & { thread_id: string | null; expired: boolean })[]>`
        select *, expires_at <= now() as expired from public.memory_proposals where id = ${id}`;
  if (!p) throw new HttpError(404, "not_found", `proposal ${id} not found`);
  if (p.status !== "pending") throw new HttpError(409, "proposal_decided", `proposal ${id} is ${p.status} already`);
  if (p.expired) {
    throw new HttpError(
      409,
      "proposal_expired",
      `proposal ${id} expired at ${new Date(p.expires_at).toISOString()}; it lapses unanswered`,
    );
  }
  return p;
}

function isoProposal(p: Proposal): Proposal {
  const d = (v: unknown) => (v == null ? null : v instanceof Date ? v.toISOString() : String(v));
  return {
    id: p.id,
    field: p.field,
    content: p.content,
    memory_type: p.memory_type,
    namespace: p.namespace,
    importance: Number(p.importance),
    category: p.category,
    status: p.status,
    origin: p.origin,
    created_at: d(p.created_at)!,
    expires_at: d(p.expires_at)!,
    decided_at: d(p.decided_at),
    decided_by: p.decided_by,
    memory_id: p.memory_id,
  };
}
