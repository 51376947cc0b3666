// The SDK's hand-written types (sdk/src/types.ts, what the npm package ships without any
// dependency) against the functions' own zod schemas and response interfaces: each pair must be
// assignable both ways, so a change on either side fails `deno check` (run by npm test) until the
// other follows. The runtime part of this test is trivial; the checks are the types below.
import assert from "node:assert/strict";
import type { z } from "zod";
import type * as Sdk from "../sdk/src/types.ts";
import type * as MemorySchemas from "../supabase/functions/_shared/memories/schemas.ts";
import type * as RetrieveSchemas from "../supabase/functions/_shared/retrieval/schemas.ts";
import type { ExtractRequestSchema } from "../supabase/functions/memory-extract/handler.ts";
import type { CompactRequestSchema } from "../supabase/functions/memory-compact/handler.ts";
import type { DedupRequestSchema } from "../supabase/functions/memory-dedup/handler.ts";
import type { Explanation } from "../supabase/functions/_shared/memories/explain.ts";
import type { MemoryStats } from "../supabase/functions/_shared/memories/stats.ts";
import type { AgentConfig, CategoryConfig } from "../supabase/functions/_shared/memory-config.ts";
import type { PreparedCandidates } from "../supabase/functions/_shared/candidates.ts";
import type { EpisodeBatchRequest, EpisodeBatchResult } from "../supabase/functions/_shared/episodes.ts";
import type { EntityListItem, EntityProfile } from "../supabase/functions/_shared/memories/entities.ts";
import type * as ContextSchemas from "../supabase/functions/_shared/context/schemas.ts";
import type { AssembleResponse } from "../supabase/functions/_shared/context/assemble.ts";
import type { PredictResponse } from "../supabase/functions/_shared/context/predict.ts";
import type { UsageResponse } from "../supabase/functions/_shared/context/usage.ts";
import type * as BackgroundSchemas from "../supabase/functions/_shared/memories/background-schemas.ts";
import type { ConsolidationReport } from "../supabase/functions/_shared/tenant-consolidation.ts";
import type {
  Contradiction,
  ContradictionListQuery,
  ResolveRequest,
} from "../supabase/functions/_shared/contradictions.ts";
import type { Proposal, ProposalDecision } from "../supabase/functions/_shared/proposals.ts";
import type { CheckpointInfo, CheckpointSaveRequest } from "../supabase/functions/_shared/checkpoints.ts";
import type { AgentToken } from "../supabase/functions/_shared/agent-tokens.ts";

/** true when A and B are assignable to each other. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const same = <A, B>(ok: Same<A, B>) => ok;

// Requests: what a client may send (z.input: defaults optional).
same<Sdk.RetrieveInput, z.input<typeof RetrieveSchemas.RetrieveRequest>>(true);
same<Sdk.QueryInput, z.input<typeof RetrieveSchemas.QueryRequest>>(true);
same<Sdk.RememberInput, z.input<typeof MemorySchemas.RememberRequest>>(true);
same<Sdk.CorrectInput, z.input<typeof MemorySchemas.CorrectRequest>>(true);
same<Sdk.ForgetInput, z.input<typeof MemorySchemas.ForgetRequest>>(true);
same<Sdk.LifecycleInput, z.input<typeof MemorySchemas.LifecycleRequest>>(true);
same<NonNullable<Sdk.ExtractInput["after"]>, NonNullable<z.input<typeof ExtractRequestSchema>["after"]>>(true);
same<Omit<Sdk.ExtractInput, "messages">, Omit<z.input<typeof ExtractRequestSchema>, "messages">>(true);
same<Omit<Sdk.CompactInput, "messages">, Omit<z.input<typeof CompactRequestSchema>, "messages">>(true);
same<Sdk.DedupInput, z.input<typeof DedupRequestSchema>>(true);
same<Sdk.EpisodesInput, z.input<typeof EpisodeBatchRequest>>(true);
same<Sdk.GetParams, z.input<typeof MemorySchemas.MemoryQuery>>(true);
same<{ context?: "all" | "rag"; rag_length?: number | null }, z.input<typeof MemorySchemas.CategoryUpsert>>(true);
same<Sdk.AssembleInput, z.input<typeof ContextSchemas.AssembleRequest>>(true);
same<Sdk.PredictInput, z.input<typeof ContextSchemas.PredictRequest>>(true);
same<Sdk.UsageInput, z.input<typeof ContextSchemas.UsageRequest>>(true);
same<Sdk.ContextSignals, z.input<typeof ContextSchemas.Signals>>(true);
same<Sdk.LineageSignals, z.input<typeof ContextSchemas.LineageSignals>>(true);
same<Sdk.MemoryMetadata, NonNullable<z.input<typeof MemorySchemas.RememberRequest>["metadata"]>>(true);
same<Sdk.CodeOrigin, NonNullable<z.input<typeof ExtractRequestSchema>["lineage"]>>(true);
same<Sdk.Candidate, z.input<typeof DedupRequestSchema>["candidates"][number]>(true);
// A message the server accepts is one the SDK lets you send, and the other way round for the roles.
same<Sdk.ChatMessage["role"], z.input<typeof ExtractRequestSchema>["messages"][number]["role"]>(true);

// Responses.
same<Sdk.Memory, MemorySchemas.Memory>(true);
same<Sdk.HistoryEntry, MemorySchemas.HistoryEntry>(true);
same<Sdk.Relation, MemorySchemas.Relation>(true);
same<Sdk.RetrieveResponse, RetrieveSchemas.RetrieveResponse>(true);
same<Sdk.QueryResponse, RetrieveSchemas.QueryResponse>(true);
same<Sdk.Explanation, Explanation>(true);
same<Sdk.MemoryStats, MemoryStats>(true);
same<Sdk.CategoryConfig, CategoryConfig>(true);
same<Sdk.AgentConfig, AgentConfig>(true);
same<Sdk.EpisodeBatchResult, EpisodeBatchResult>(true);
same<Sdk.EntityListResponse["entities"][number], EntityListItem>(true);
same<Sdk.EntityProfile, EntityProfile>(true);
same<Sdk.DedupResponse["stats"], PreparedCandidates["stats"]>(true);
same<Sdk.AssembleResponse, AssembleResponse>(true);
same<Sdk.PredictResponse, PredictResponse>(true);
same<Sdk.UsageResponse, UsageResponse>(true);
// Background intelligence.
same<Sdk.ConsolidateInput, z.input<typeof BackgroundSchemas.ConsolidateRequest>>(true);
same<Sdk.ReindexInput, z.input<typeof BackgroundSchemas.ReindexRequest>>(true);
same<Sdk.ConsolidationReport, ConsolidationReport>(true);
same<Sdk.Contradiction, Contradiction>(true);
same<Sdk.ResolveInput, z.input<typeof ResolveRequest>>(true);
same<Sdk.ContradictionListParams["status"], z.input<typeof ContradictionListQuery>["status"]>(true);
same<Sdk.Proposal, Proposal>(true);
same<Sdk.ProposalDecision, ProposalDecision>(true);
same<Sdk.CheckpointInput, z.input<typeof CheckpointSaveRequest>>(true);
same<Sdk.CheckpointInfo, CheckpointInfo>(true);
same<Sdk.AgentTokenInput, z.input<typeof MemorySchemas.AgentTokenRequest>>(true);
same<Sdk.AgentToken, AgentToken>(true);

Deno.test("sdk types: the package's types are the functions' (checked by deno check)", () => {
  assert.ok(true);
});
