// Request schemas of living context (docs/context.md): context/assemble, context/predict and
// memory/usage, and the coding signals they share with memory-retrieve. Every object is strict:
// an unknown field is a 400 naming it, like a value of the wrong shape.
import { z } from "zod";
import {
  branchName,
  commitSha,
  filePath,
  freeText,
  intWithin,
  projectName,
  repoName,
  sessionId,
  threadId,
  uuid,
} from "../schemas.ts";

/** What the developer is doing; it rebalances the tiers (tiers.ts). */
export const ACTIVITIES = ["debugging", "feature", "review", "refactor", "testing", "docs", "ops"] as const;
export type Activity = typeof ACTIVITIES[number];

export const MIN_BUDGET = 200;
export const MAX_BUDGET = 32_000;
export const DEFAULT_BUDGET = 8_000;

const text = freeText;

/**
 * What the client knows about the repository, which decides whose notes are facts here
 * (docs/context.md#code-lineage): the branch it is on, the branches and commits merged into it,
 * and the files deleted or renamed since memories cited them.
 */
export const lineageSignalFields = {
  repo: repoName.optional(),
  /** The branch checked out; default: the default branch. */
  branch: branchName.optional(),
  commit: commitSha.optional(),
  /** The repository's default branch; default "main" (and "master"). */
  default_branch: branchName.optional(),
  /** Branches merged into the current one: their memories are project knowledge here. */
  merged_branches: z.array(branchName).max(500).optional(),
  /** Commits in the current branch's history (e.g. `git rev-list -n 1000 HEAD`): memories recorded at them are merged. */
  ancestor_commits: z.array(commitSha).max(1000).optional(),
  /** Files deleted since: a memory citing one is flagged stale, not injected. */
  deleted_files: z.array(filePath).max(500).optional(),
  /** Files renamed since: a memory citing the old path is flagged stale, not injected. */
  renamed_files: z.array(z.object({ from: filePath, to: filePath }).strict()).max(500).optional(),
};
export const LineageSignals = z.object(lineageSignalFields).strict();
export type LineageSignals = z.infer<typeof LineageSignals>;

/** Coding signals: what is on the developer's screen, plus the lineage. */
export const Signals = z
  .object({
    current_file: filePath.optional(),
    open_files: z.array(filePath).max(50).optional(),
    /** Errors on screen (a compiler message, a stack trace's first lines), newest first. */
    recent_errors: z.array(text(4_000)).max(10).optional(),
    activity: z.enum(ACTIVITIES).optional(),
    ...lineageSignalFields,
  })
  .strict();
export type Signals = z.infer<typeof Signals>;

export const AssembleRequest = z
  .object({
    /** Tokens the context may take (exact, o200k_base); 200-32,000. */
    budget: intWithin(MIN_BUDGET, MAX_BUDGET).default(DEFAULT_BUDGET),
    /** The user's message, when there is one: the relevant tier's search. */
    message: text(20_000).optional(),
    project: projectName.optional(),
    /** The agent's session: a fresh context/predict result for it is served, and injections are recorded for memory/usage. */
    session_id: sessionId.optional(),
    thread_id: threadId.optional(),
    signals: Signals.optional(),
  })
  .strict();
export type AssembleRequest = z.infer<typeof AssembleRequest>;

/** Memories a prediction answers unless the request says otherwise (a lazy refresh predicts as many). */
export const PREDICT_LIMIT = 20;

export const PredictRequest = z
  .object({
    file_opened: filePath.optional(),
    branch: branchName.optional(),
    error: text(4_000).optional(),
    project: projectName.optional(),
    /** Cache the prediction for this session (its next context/assemble is served from it). */
    session_id: sessionId.optional(),
    /** How many memories to predict, best first (default PREDICT_LIMIT). */
    limit: intWithin(1, 50).default(PREDICT_LIMIT),
    /** Lineage, so another branch's notes are not predicted; `branch` above is also the current branch. */
    signals: LineageSignals.optional(),
  })
  .strict()
  .refine((b) => b.file_opened !== undefined || b.branch !== undefined || b.error !== undefined, {
    message: "give at least one signal: file_opened, branch or error",
    path: ["file_opened"],
  });
export type PredictRequest = z.infer<typeof PredictRequest>;

export const UsageRequest = z
  .object({
    session_id: sessionId,
    /** The memories the agent was given (injected into its context or returned by a search). */
    retrieved: z.array(uuid).max(500).default([]),
    /** The ones it used; they count as retrieved too. */
    cited: z.array(uuid).max(500).default([]),
  })
  .strict()
  .refine((b) => b.retrieved.length + b.cited.length > 0, {
    message: "report at least one memory",
    path: ["retrieved"],
  });
export type UsageRequest = z.infer<typeof UsageRequest>;
