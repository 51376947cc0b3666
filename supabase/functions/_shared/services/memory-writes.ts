// The operations that store what the user states: remember (a new user-stated memory) and correct
// (a new memory that supersedes an old one), their secrets redacted first (a statement that is
// nothing but a secret is a 422). History is written by the database triggers.
import { type TenantContext, toVectorLiteral, type Tx, withTenant } from "../db.ts";
import { embedForRequest } from "../embeddings.ts";
import { HttpError, invalidBody } from "../http.ts";
import { visibleScopes } from "../schemas.ts";
import { memoryColumns } from "../memories/memory-row.ts";
import {
  liveWithText,
  lockContentHash,
  lockedLiveWithText,
  lockMemory,
  notFound,
  spacedSql,
  statedAlready,
  statedByUser,
  takeCategory,
  toMemory,
} from "../memories/record.ts";
import type {
  CorrectRequest,
  CorrectResponse,
  Memory,
  RememberRequest,
  RememberResponse,
} from "../memories/schemas.ts";
import { callerNamespace, defaultScope, projectOfNamespace } from "../scopes.ts";
import { assertKnownCategory } from "../categories.ts";
import { linkEntities, linkEntitiesByRules } from "../entities.ts";
import { citedFileLinks, filesOf } from "../context/lineage.ts";
import { queueContradictionCheck } from "../contradiction-check.ts";
import { redactField, type Redaction } from "../redact.ts";
import { countedWith, recordRedactions, redactMetadata, redactStatement } from "../redaction-events.ts";
import { kickWorker, type ServiceDeps } from "./deps.ts";
import { lockMemories, supersedeMemory } from "../supersede.ts";

function assertCorrectable(old: Memory): void {
  // An episode is the record of a message as it was sent (docs/graph.md#episodes): it is never
  // superseded, and a correction of it would be a fact filed as an episode.
  if (old.source === "conversation") {
    throw new HttpError(
      422,
      "episode_not_correctable",
      `memory ${old.id} is an episode (a message as it was sent) and is not corrected; remember the right fact instead`,
    );
  }
  if (old.superseded_by) {
    throw new HttpError(
      409,
      "already_superseded",
      `memory ${old.id} was already replaced by ${old.superseded_by}; correct that one`,
    );
  }
  if (!old.is_valid) {
    throw new HttpError(409, "memory_invalid", `memory ${old.id} is no longer valid; restore it first`);
  }
  if (old.state !== "active") {
    throw new HttpError(409, "memory_forgotten", `memory ${old.id} is forgotten; restore it first`);
  }
}

/** Where a remembered fact goes (README "Scopes"): the caller's namespace, else its scope's default. */
function rememberNamespace(body: RememberRequest, root: string): string {
  if (body.namespace !== undefined) {
    const ns = callerNamespace(body.namespace, root, body);
    if (!ns.ok) {
      throw invalidBody([{
        path: ["namespace"],
        message: ns.message,
      }]);
    }
    return ns.namespace;
  }
  const base = defaultScope(root, body);
  return base === `${root}/user` ? `${base}/preferences` : `${base}/notes`;
}

/** A fact the user states. An exact duplicate the user already stated is answered (created: false) and nothing is written. */
export async function remember(
  deps: ServiceDeps,
  tenant: TenantContext,
  sent: RememberRequest,
): Promise<RememberResponse> {
  const { sql, config, embedder } = deps;
  const statement = redactStatement(sent.content);
  // Its metadata's free text (ids, keywords, repo, files) is stored too: redacted, counted with it.
  const meta = redactMetadata(sent.metadata);
  const redaction = countedWith(statement, meta);
  const body = { ...sent, content: statement.text, metadata: meta.metadata };
  const namespace = rememberNamespace(body, config.namespaceRoot);
  const scopes = visibleScopes(namespace, config.namespaceRoot);
  // Fast path: an exact duplicate the user already stated costs no embedding call and writes nothing.
  const existing = await withTenant(sql, tenant, async (tx) => {
    if (body.metadata?.category) await assertKnownCategory(tx, body.metadata.category, ["metadata", "category"]);
    return await liveWithText(tx, tenant.tenantId, body.content, scopes);
  });
  if (existing && statedAlready(existing)) {
    return { created: false, memory: existing, project: projectOfNamespace(existing.namespace) };
  }

  const vector = await embedForRequest(embedder, body.content);
  const result = await withTenant(sql, tenant, async (tx) => {
    // Serialises concurrent remembers (and proposal accepts) of the same text in this tenant, so
    // the re-check below cannot race with another insert of it.
    await lockContentHash(tx, tenant.tenantId, body.content);
    // Locked and checked live: a correction or forget of it under way is waited for, not undone.
    const again = await lockedLiveWithText(tx, tenant.tenantId, body.content, scopes);
    // The agent learned it before: now the user states it.
    if (again) return { created: false, memory: await statedByUser(tx, again) };
    const [row] = await tx`
      insert into public.devai_memories
        (owner_id, content, embedding, embedding_model, memory_type, namespace, priority, source,
         strength, base_strength, importance, metadata, session_id)
      values
        (${tenant.tenantId}, ${body.content}, ${toVectorLiteral(vector)}::extensions.vector, ${embedder.model},
         ${body.memory_type}, ${namespace}, 'highest', 'user_stated', 1, 1, ${body.importance ?? 3},
         ${tx.json((body.metadata ?? {}) as never)}, ${body.session_id ?? null})
      returning ${memoryColumns(tx)}`;
    await linkEntitiesByRules(tx, [{ id: row!.id as string, content: body.content }]);
    await linkEntities(tx, citedFileLinks(row!.id as string, body.metadata?.files));
    await afterStatement(deps, tx, tenant.tenantId, row!.id as string, "remember", redaction, body.thread_id);
    return { created: true, memory: toMemory(row) };
  }, { threadId: body.thread_id });
  if (result.created) kickContradictionCheck(deps);
  return { ...result, project: projectOfNamespace(result.memory.namespace) };
}

/**
 * The user corrects memory `id`: a new memory supersedes it (history MERGE, validity closed). When
 * a live memory in its scope already says the corrected text (letter case and spacing aside, as
 * remember's duplicate check), that memory supersedes it instead and nothing is inserted
 * (`created: false`): two live memories would say one fact.
 */
export async function correct(
  deps: ServiceDeps,
  tenant: TenantContext,
  id: string,
  sent: CorrectRequest,
): Promise<CorrectResponse> {
  const { sql, embedder, config } = deps;
  const statement = redactStatement(sent.content);
  // The reason is stored too (metadata.correction_reason): redacted like the statement, counted with it.
  const reason = redactField(sent.reason);
  const redaction = countedWith(statement, reason);
  const body = { ...sent, content: statement.text, reason: reason.text };
  // Checked before paying for an embedding (the row lock below checks only that it is still
  // correctable). "The same" is the same text but for spacing: letter case is a correction here (a
  // path, an env value, an identifier), though the duplicate check (content_hash) ignores it. So a
  // correction is superseded only by a memory that says its text in the case the user gave: a copy
  // in another case would swallow what they just stated.
  const pre = await withTenant(sql, tenant, async (tx) => {
    const [row] = await tx`
      select ${memoryColumns(tx, "m")},
             ${spacedSql(tx, tx.unsafe("m.content"))} = ${spacedSql(tx, body.content)} as same_content
        from public.devai_memories m where m.id = ${id}`;
    if (!row) throw notFound(id);
    const old = toMemory(row);
    assertCorrectable(old);
    if (row.same_content) {
      throw new HttpError(422, "unchanged_content", "the correction says the same as the memory it corrects");
    }
    const scopes = visibleScopes(old.namespace, config.namespaceRoot);
    return { scopes, held: await liveWithText(tx, tenant.tenantId, body.content, scopes, [id], SAME_CASE) };
  });
  // What another memory says already needs no embedding, as remember's duplicate.
  let vector = pre.held ? undefined : await embedForRequest(embedder, body.content);
  for (;;) {
    const result = await withTenant(sql, tenant, async (tx) => {
      // Remember's lock order: the text's hash, then the rows (in id order).
      await lockContentHash(tx, tenant.tenantId, body.content);
      const held = await liveWithText(tx, tenant.tenantId, body.content, pre.scopes, [id], SAME_CASE);
      await lockMemories(tx, held ? [id, held.id] : [id]);
      const old = await lockMemory(tx, id);
      assertCorrectable(old);
      if (
        held && await supersedeMemory(tx, tenant.tenantId, held.id, id, {
          strength: 1,
          evidence: { correction: "text_exists", ...(body.reason ? { reason: body.reason } : {}) },
        })
      ) {
        // The user states its text now, and the fact it replaces was pinned: so is it. (As it is
        // now that it is locked.)
        const stated = await statedByUser(tx, await lockMemory(tx, held.id), old.pinned);
        const memory = await takeCategory(tx, stated, old.metadata?.category);
        await afterStatement(deps, tx, tenant.tenantId, memory.id, "correct", redaction, body.thread_id);
        return { created: false, memory, superseded: await lockMemory(tx, id) };
      }
      // That memory changed meanwhile: the correction is a new memory after all, embedded first.
      if (!vector) return undefined;
      return { created: true, ...await insertCorrection(deps, tx, tenant.tenantId, old, body, vector, redaction) };
    }, { threadId: body.thread_id });
    if (result) {
      if (result.created) kickContradictionCheck(deps);
      return result;
    }
    vector = await embedForRequest(embedder, body.content);
  }
}

/** The letter case counts in a correction's duplicate check: the user states this very text. */
const SAME_CASE = { sameCase: true } as const;

/** A correction's new memory, superseding `old` (its metadata, type, namespace, importance and pin carried on). */
async function insertCorrection(
  deps: ServiceDeps,
  tx: Tx,
  tenantId: string,
  old: Memory,
  body: CorrectRequest,
  vector: number[],
  redaction: Redaction & { dropped: number },
) {
  const { embedder } = deps;
  // The old memory's metadata carries on, but not its own correction's reason: this one's, or none.
  const { correction_reason: _, ...kept } = old.metadata;
  const metadata = body.reason ? { ...kept, correction_reason: body.reason } : kept;
  const [created] = await tx`
    insert into public.devai_memories
      (owner_id, content, embedding, embedding_model, memory_type, namespace, priority, source,
       strength, base_strength, importance, pinned, metadata, session_id)
    values
      (${tenantId}, ${body.content}, ${toVectorLiteral(vector)}::extensions.vector, ${embedder.model},
       ${old.memory_type}, ${old.namespace}, 'highest', 'correction', 1, 1, ${old.importance}, ${old.pinned},
       ${tx.json(metadata as never)}, ${body.session_id ?? null})
    returning ${memoryColumns(tx)}`;
  const memory = toMemory(created);
  await linkEntitiesByRules(tx, [memory]);
  await linkEntities(tx, citedFileLinks(memory.id, filesOf(memory.metadata)));
  await afterStatement(deps, tx, tenantId, memory.id, "correct", redaction, body.thread_id);
  // The trigger records MERGE for the old memory (superseded_by set) with new_ref = the new id.
  const [superseded] = await tx`
    update public.devai_memories set superseded_by = ${memory.id}, is_valid = false
     where id = ${old.id} returning ${memoryColumns(tx)}`;
  await tx`
    insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength)
    values (${tenantId}, ${memory.id}, ${old.id}, 'supersedes', 1)`;
  return { memory, superseded: toMemory(superseded) };
}

// What every stored statement is followed by: its redaction counts (docs/redaction.md), and with an
// LLM the queued check against its nearest memories for contradictions
// (docs/consolidation.md#contradictions), which the worker runs off the request's path.
async function afterStatement(
  deps: ServiceDeps,
  tx: Tx,
  tenantId: string,
  memoryId: string,
  writer: string,
  r: Redaction & { dropped: number },
  threadId?: string,
) {
  await recordRedactions(tx, {
    ownerId: tenantId,
    writer,
    node: "hotpath",
    counts: r.counts,
    dropped: r.dropped,
    threadId,
  });
  if (deps.llm) await queueContradictionCheck(tx, tenantId, [memoryId]);
}

function kickContradictionCheck(deps: ServiceDeps): void {
  if (deps.llm) kickWorker(deps, "contradiction check kick");
}
