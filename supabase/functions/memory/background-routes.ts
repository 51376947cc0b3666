// The background-intelligence routes of the `memory` function, thin adapters over
// _shared/services/background.ts (docs/consolidation.md):
//   POST /memory/consolidate                   {dry_run?} the nightly consolidation, now, for the caller
//   POST /memory/reindex                       {dry_run?} re-embedding with the configured model: start or report
//   GET  /memory/contradictions                ?status=open|resolved|all&limit=
//   POST /memory/contradictions/{id}/resolve   {resolution: a_wins|b_wins|both_valid|merged, note?, content?}
//   GET  /memory/proposals                     ?status=pending|accepted|rejected|lapsed|all&limit=
//   GET  /memory/proposals/{id}                the proposal and its decisions (history)
//   POST /memory/proposals/{id}/accept|reject  the user's consent
//   PUT|GET /memory/checkpoints/{thread_id}    the agent's checkpoint (checkpoint-routes.ts)
// Registered by handler.ts before the memory routes, whose /memory/{id} would take these paths.
import { ContradictionListQuery, ResolveRequest } from "../_shared/contradictions.ts";
import { HttpError, json, methodNotAllowed, parseJsonBody } from "../_shared/http.ts";
import { ConsolidateRequest, ProposalDecisionRequest, ReindexRequest } from "../_shared/memories/background-schemas.ts";
import { PROPOSAL_ACTIONS, type ProposalAction, ProposalListQuery } from "../_shared/proposals.ts";
import {
  consolidate,
  contradictions,
  decide,
  proposal,
  proposals,
  reindex,
  resolve,
} from "../_shared/services/background.ts";
import type { ServiceDeps } from "../_shared/services/deps.ts";
import { registerCheckpointRoutes } from "./checkpoint-routes.ts";
import { type MemoryApp, noQuery, optionalBody, parseQuery, parseUuidParam, who } from "./routing.ts";

/** Paths with one method: another method is a 405 naming it, never read as a memory id. */
const FIXED_PATHS: [string, string[]][] = [
  ["/memory/consolidate", ["POST"]],
  ["/memory/reindex", ["POST"]],
  ["/memory/contradictions", ["GET"]],
  ["/memory/proposals", ["GET"]],
];

export function registerBackgroundRoutes(app: MemoryApp, deps: ServiceDeps): void {
  const max = deps.config.maxBodyBytes;

  app.post(
    "/memory/consolidate",
    async (c) => json(await consolidate(deps, who(c), await optionalBody(c.req.raw, ConsolidateRequest, max))),
  );
  app.post("/memory/reindex", async (c) => {
    const status = await reindex(deps, who(c), await optionalBody(c.req.raw, ReindexRequest, max));
    return json(status, status.started ? 202 : 200);
  });

  app.get("/memory/contradictions", async (c) => {
    const q = parseQuery(c, ContradictionListQuery);
    return json({ status: q.status, contradictions: await contradictions(deps, who(c), q) });
  });
  app.post("/memory/contradictions/:id/resolve", async (c) => {
    const id = parseUuidParam(c, "id", "contradiction id");
    return json({
      contradiction: await resolve(deps, who(c), id, await parseJsonBody(c.req.raw, ResolveRequest, max)),
    });
  });

  app.get("/memory/proposals", async (c) => {
    const q = parseQuery(c, ProposalListQuery);
    return json({ status: q.status, proposals: await proposals(deps, who(c), q) });
  });
  app.get(
    "/memory/proposals/:id",
    async (c) => {
      const id = parseUuidParam(c, "id", "proposal id");
      noQuery(c);
      return json(await proposal(deps, who(c), id));
    },
  );
  app.post("/memory/proposals/:id/:action", async (c) => {
    const id = parseUuidParam(c, "id", "proposal id");
    const action = c.req.param("action");
    if (!(PROPOSAL_ACTIONS as readonly string[]).includes(action)) {
      throw new HttpError(
        400,
        "invalid_action",
        `unknown proposal action '${action}': use ${PROPOSAL_ACTIONS.join(" or ")}`,
        [
          { path: ["action"], message: `one of ${PROPOSAL_ACTIONS.join(", ")}` },
        ],
      );
    }
    await optionalBody(c.req.raw, ProposalDecisionRequest, max);
    return json(await decide(deps, c.get("caller"), id, action as ProposalAction));
  });

  registerCheckpointRoutes(app, deps);
  for (const [path, allowed] of FIXED_PATHS) {
    app.all(path, () => {
      throw methodNotAllowed(allowed);
    });
  }
}
