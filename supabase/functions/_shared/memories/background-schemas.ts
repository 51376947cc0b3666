// Request schemas of the background-intelligence routes of the `memory` function (consolidation,
// re-embedding; contradictions, proposals and checkpoints have theirs beside their services in
// _shared/). .strict(): an unknown field is a 400.
import { z } from "zod";

/** POST /memory/consolidate: run tonight's consolidation for the calling tenant now. */
export const ConsolidateRequest = z
  .object({
    /** Compute and answer what the run would do, writing nothing. */
    dry_run: z.boolean().default(false),
  })
  .strict();
export type ConsolidateRequest = z.infer<typeof ConsolidateRequest>;

/** POST /memory/reindex: start (or report) re-embedding with the configured embedding model. */
export const ReindexRequest = z
  .object({
    /** Only report what would be re-embedded. */
    dry_run: z.boolean().default(false),
  })
  .strict();
export type ReindexRequest = z.infer<typeof ReindexRequest>;

/** POST /memory/proposals/{id}/accept|reject: the body is optional and has no fields. */
export const ProposalDecisionRequest = z.object({}).strict();
