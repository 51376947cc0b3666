// The background intelligence's operations of the memory API (docs/consolidation.md), for the HTTP
// routes and the MCP tools alike: consolidation now, re-embedding, contradictions, consent
// proposals, the agent's checkpoints. Each takes the tenant and its validated input and runs as the
// tenant (RLS): another tenant's id is a 404, like an unknown one.
import {
  type CheckpointSaveRequest,
  loadCheckpointJson,
  saveCheckpoint,
  type SavedCheckpoint,
} from "../checkpoints.ts";
import {
  type Contradiction,
  type ContradictionListQuery,
  listContradictions,
  resolveContradiction,
  type ResolveRequest,
} from "../contradictions.ts";
import { type Caller, refuseAgentToken } from "../auth.ts";
import type { TenantContext } from "../db.ts";
import { DEFAULT_DRAIN_BUDGET_MS, DrainDeadline } from "../drain-deadline.ts";
import { ProviderWatch } from "../llm-outage.ts";
import { HttpError } from "../http.ts";
import type { ConsolidateRequest, ReindexRequest } from "../memories/background-schemas.ts";
import {
  decideProposal,
  getProposal,
  listProposals,
  type Proposal,
  type ProposalAction,
  type ProposalDecision,
  type ProposalListQuery,
} from "../proposals.ts";
import { type ReindexStatus, startReindex } from "../reindex.ts";
import { consolidateTenant, type ConsolidationReport } from "../tenant-consolidation.ts";
import { kickWorker, type ServiceDeps } from "./deps.ts";

/**
 * Tonight's consolidation, now, for the tenant, within the day's caps; a dry run writes nothing but
 * its run record (it spends the same caps). The caller waits for it, so its model part keeps within
 * one drain's budget (WORKER_DRAIN_BUDGET_MS, 120 s: its requests cut at 100 s): a hosted function
 * is stopped at 150 s, and a provider that hangs held the request for 4 x LLM_TIMEOUT_MS and the
 * backoff (about 245 s by default: a 504, nothing applied). At the cut the model's part fails and
 * the rest is applied as without a model (the report's `llm` says so).
 */
export async function consolidate(
  deps: ServiceDeps,
  tenant: TenantContext,
  body: ConsolidateRequest,
): Promise<ConsolidationReport> {
  const deadline = new DrainDeadline(
    deps.config.workerDrainBudgetMs ?? DEFAULT_DRAIN_BUDGET_MS,
    deps.deadlineClock,
    deps.config.llm.timeoutMs,
  );
  try {
    const report = await consolidateTenant({ ...deps, llm: deps.llm && new ProviderWatch(deps.llm, deadline) }, {
      ownerId: tenant.tenantId,
      trigger: "api",
      dryRun: body.dry_run,
      now: deps.clock(),
    });
    if (!body.dry_run) kickWorker(deps);
    return report;
  } finally {
    deadline.end();
  }
}

/** The tenant's memories per embedding model, and (unless a dry run) their re-embedding queued. */
export async function reindex(
  deps: ServiceDeps,
  tenant: TenantContext,
  body: ReindexRequest,
): Promise<ReindexStatus & { started: boolean; dry_run: boolean }> {
  const status = await startReindex(deps, tenant, { dryRun: body.dry_run, now: deps.clock() });
  if (status.started) kickWorker(deps);
  return status;
}

export async function contradictions(
  deps: ServiceDeps,
  tenant: TenantContext,
  q: ContradictionListQuery,
): Promise<Contradiction[]> {
  return await listContradictions(deps.sql, tenant, q);
}

export async function resolve(
  deps: ServiceDeps,
  tenant: TenantContext,
  id: string,
  body: ResolveRequest,
): Promise<Contradiction> {
  return await resolveContradiction(deps, tenant, id, body);
}

export async function proposals(deps: ServiceDeps, tenant: TenantContext, q: ProposalListQuery): Promise<Proposal[]> {
  return await listProposals(deps.sql, tenant, q);
}

export async function proposal(
  deps: ServiceDeps,
  tenant: TenantContext,
  id: string,
): Promise<{ proposal: Proposal; history: ProposalDecision[] }> {
  const found = await getProposal(deps.sql, tenant, id);
  if (!found) throw new HttpError(404, "not_found", `proposal ${id} not found`);
  return found;
}

/**
 * The user's consent to a proposal (docs/consolidation.md#consent). An agent token is refused: the
 * proposals are what models and agents (memory-dedup) put forward, so the agent cannot consent.
 */
export async function decide(
  deps: ServiceDeps,
  tenant: TenantContext & Pick<Caller, "agentBound">,
  id: string,
  action: ProposalAction,
): Promise<{ proposal: Proposal; memory_id: string | null }> {
  refuseAgentToken(tenant, "proposals are accepted or rejected");
  const result = await decideProposal(deps, tenant, id, action);
  if (result.memory_id && deps.llm) kickWorker(deps);
  return result;
}

export async function saveThreadCheckpoint(
  deps: ServiceDeps,
  tenant: TenantContext,
  thread: string,
  body: CheckpointSaveRequest,
): Promise<SavedCheckpoint> {
  return await saveCheckpoint(deps.sql, tenant, thread, body, deps.config.maxCheckpointBytes);
}

/** The thread's checkpoint as JSON text (the state as stored), or a 404. */
export async function loadThreadCheckpoint(
  deps: ServiceDeps,
  tenant: TenantContext,
  thread: string,
): Promise<{ json: string; version: number }> {
  const found = await loadCheckpointJson(deps.sql, tenant, thread);
  if (!found) throw new HttpError(404, "not_found", `no checkpoint for thread ${thread}`);
  return found;
}
