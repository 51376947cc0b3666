// The background-intelligence routes of the `memory` function, thin adapters over _shared/
// services (docs/consolidation.md):
//   POST /memory/consolidate                   {dry_run?} the nightly consolidation, now, for the caller
//   POST /memory/reindex                       {dry_run?} re-embedding with the configured model: start or report
//   GET  /memory/contradictions                ?status=open|resolved|all&limit=
//   POST /memory/contradictions/{id}/resolve   {resolution: a_wins|b_wins|both_valid|merged, note?, content?}
//   GET  /memory/proposals                     ?status=pending|accepted|rejected|lapsed|all&limit=
//   GET  /memory/proposals/{id}                the proposal and its decisions (history)
//   POST /memory/proposals/{id}/accept|reject  the user's consent
// Registered by handler.ts before /memory/{id}. Every request runs as the tenant (RLS): another
// tenant's contradiction or proposal id is a 404, like an unknown one.
import { ContradictionListQuery, listContradictions, resolveContradiction, ResolveRequest } from "../_shared/contradictions.ts";
import { HttpError, json, parseJsonBody } from "../_shared/http.ts";
import { runInBackground } from "../_shared/jobs.ts";
import { decideProposal, getProposal, listProposals, PROPOSAL_ACTIONS, type ProposalAction, ProposalListQuery } from "../_shared/proposals.ts";
import { startReindex } from "../_shared/reindex.ts";
import { consolidateTenant } from "../_shared/tenant-consolidation.ts";
import { ConsolidateRequest, ProposalDecisionRequest, ReindexRequest } from "./background-schemas.ts";
import { type MemoryApp, optionalBody, parseQuery, parseUuidParam, type RouteDeps, who } from "./routing.ts";

export const BACKGROUND_FIXED_PATHS: [string, string[]][] = [
  ["/memory/consolidate", ["POST"]],
  ["/memory/reindex", ["POST"]],
  ["/memory/contradictions", ["GET"]],
  ["/memory/proposals", ["GET"]],
];

export function registerBackgroundRoutes(app: MemoryApp, deps: RouteDeps): void {
  const { sql, config } = deps;
  const kick = () => {
    if (deps.kickWorker) runInBackground(deps.kickWorker, "memory worker kick");
  };

  app.post("/memory/consolidate", async (c) => {
    const body = await optionalBody(c.req.raw, ConsolidateRequest, config.maxBodyBytes);
    const report = await consolidateTenant(deps, { ownerId: who(c).tenantId, trigger: "api", dryRun: body.dry_run, now: deps.clock() });
    if (!body.dry_run) kick();
    return json(report);
  });

  app.post("/memory/reindex", async (c) => {
    const body = await optionalBody(c.req.raw, ReindexRequest, config.maxBodyBytes);
    const status = await startReindex(deps, who(c), { dryRun: body.dry_run, now: deps.clock() });
    if (status.started) kick();
    return json(status, status.started ? 202 : 200);
  });

  app.get("/memory/contradictions", async (c) => {
    const q = parseQuery(c, ContradictionListQuery);
    return json({ status: q.status, contradictions: await listContradictions(sql, who(c), q) });
  });

  app.post("/memory/contradictions/:id/resolve", async (c) => {
    const id = parseUuidParam(c, "id", "contradiction id");
    const body = await parseJsonBody(c.req.raw, ResolveRequest, config.maxBodyBytes);
    return json({ contradiction: await resolveContradiction(deps, who(c), id, body) });
  });

  app.get("/memory/proposals", async (c) => {
    const q = parseQuery(c, ProposalListQuery);
    return json({ status: q.status, proposals: await listProposals(sql, who(c), q) });
  });

  app.get("/memory/proposals/:id", async (c) => {
    const id = parseUuidParam(c, "id", "proposal id");
    const found = await getProposal(sql, who(c), id);
    if (!found) throw new HttpError(404, "not_found", `proposal ${id} not found`);
    return json(found);
  });

  app.post("/memory/proposals/:id/:action", async (c) => {
    const id = parseUuidParam(c, "id", "proposal id");
    const action = c.req.param("action");
    if (!(PROPOSAL_ACTIONS as readonly string[]).includes(action)) {
      throw new HttpError(400, "invalid_action", `unknown proposal action '${action}': use ${PROPOSAL_ACTIONS.join(" or ")}`, [
        { path: ["action"], message: `one of ${PROPOSAL_ACTIONS.join(", ")}` },
      ]);
    }
    await optionalBody(c.req.raw, ProposalDecisionRequest, config.maxBodyBytes);
    const result = await decideProposal(deps, who(c), id, action as ProposalAction);
    return json(result);
  });
}
