// The background intelligence's job kinds, dispatched here by the worker (drain-queue.ts):
//   nightly_consolidation  a tenant's nightly consolidation (tenant-consolidation.ts), queued by
//                          memory_private.enqueue_nightly_consolidation
//   contradiction_check    new memories against their nearest ones (contradiction-check.ts),
//                          queued by the writers
//   insight                Theory-of-Mind insights after a consolidation run (insights.ts)
//   reindex                re-embedding with the configured model (reindex.ts)
// Each job's writes run as its tenant (RLS) and commit with the job's completion.
// docs/consolidation.md.
import { z } from "zod";
import { checkNewMemories } from "./contradiction-check.ts";
import type { WorkerDeps } from "./drain-queue.ts";
import { runInsights } from "./insights.ts";
import { type Job, type JobKind, PermanentJobError } from "./jobs.ts";
import { runReindex } from "./reindex.ts";
import { consolidateTenant } from "./tenant-consolidation.ts";

export const BACKGROUND_JOB_KINDS = [
  "nightly_consolidation",
  "contradiction_check",
  "insight",
  "reindex",
] as const satisfies readonly JobKind[];

export function isBackgroundJob(kind: string): boolean {
  return (BACKGROUND_JOB_KINDS as readonly string[]).includes(kind);
}

const NightPayloadSchema = z.object({ night: z.string().regex(/^\d{4}-\d{2}-\d{2}$/) }).strict();
const ReindexPayloadSchema = z.object({ model: z.string().min(1).max(200).nullable() }).strict();

export async function processBackgroundJob(deps: WorkerDeps, job: Job, workerId: string): Promise<void> {
  switch (job.kind) {
    case "nightly_consolidation":
      if (!NightPayloadSchema.safeParse(job.payload).success) {
        throw new PermanentJobError("invalid nightly_consolidation payload");
      }
      await consolidateTenant(deps, {
        ownerId: job.owner_id,
        trigger: "nightly",
        dryRun: false,
        job: { job, workerId },
        now: deps.clock?.(),
      });
      return;
    case "contradiction_check":
      return await checkNewMemories(deps, job, workerId);
    case "insight":
      if (!NightPayloadSchema.safeParse(job.payload).success) throw new PermanentJobError("invalid insight payload");
      return await runInsights(deps, job, workerId);
    case "reindex":
      if (!ReindexPayloadSchema.safeParse(job.payload).success) throw new PermanentJobError("invalid reindex payload");
      return await runReindex(deps, job, workerId);
    default:
      throw new PermanentJobError(`unknown background job kind '${job.kind}'`);
  }
}
