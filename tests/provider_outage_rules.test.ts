// What the worker reads in a provider's failure (llm-outage.ts, drain-deadline.ts), without a server:
// a 429 saying the request alone is over the limit, however the provider prints its counts, is the
// provider's word on the request (counted), not an outage (postponed); and what the drain counts as
// cut by its deadline. docs/operations.md#an-outage-of-the-model-provider.
import assert from "node:assert/strict";
import { failsAsAnOutage } from "../supabase/functions/_shared/llm-outage.ts";
import { cutByTheDeadline, DrainCutError, EmbeddingCutError } from "../supabase/functions/_shared/drain-deadline.ts";
import { emptyUsage, LlmRequestError } from "../supabase/functions/_shared/llm.ts";
import { EmbeddingError } from "../supabase/functions/_shared/embeddings.ts";
import { ModelPartError } from "../supabase/functions/_shared/extract-job.ts";
import { PermanentJobError } from "../supabase/functions/_shared/jobs.ts";

const tooMany = (message: string) => new LlmRequestError(message, 429, true, emptyUsage());

Deno.test("a 429 over the limit alone is a refusal whatever the counts' thousands separators; a busy limit is an outage's", () => {
  const refusals = [
    "Request too large for gpt-4o on tokens per min (TPM): Limit 30000, Requested 61234.",
    "Request too large for gpt-4o on tokens per min (TPM): Limit 30,000, Requested 61,234.",
    "Request too large on tokens per minute (TPM): Limit 6 000, Requested 7 664, please reduce your message size",
    "Limit 1.000.000, Requested 1.200.000",
    "Limit 30\u202f000, Used 0, Requested 45\u202f512",
    "Limit 30'000, Requested 45'512",
  ];
  for (const message of refusals) assert.equal(failsAsAnOutage(tooMany(message)), false, message);
  const busy = [
    "Rate limit reached on tokens per min (TPM): Limit 30,000, Used 25,000, Requested 10,000.",
    "Rate limit reached on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000.",
    "Rate limit reached: Limit 30 000, Requested 30 000",
    "You exceeded your current quota, please check your plan and billing details.",
  ];
  for (const message of busy) assert.equal(failsAsAnOutage(tooMany(message)), true, message);
});

Deno.test("a drain counts as cut only the jobs its deadline cut, not those failing of their own after the cut", () => {
  const cut = new DrainCutError(emptyUsage());
  const rules = { candidates: 1 } as ConstructorParameters<typeof ModelPartError>[1];
  for (
    const err of [cut, new EmbeddingCutError(), new ModelPartError(cut, rules), new Error("wrapped", { cause: cut })]
  ) {
    assert.equal(cutByTheDeadline(err), true, String(err));
  }
  const own = [
    new PermanentJobError("invalid dedup payload"),
    new LlmRequestError("400 bad request", 400, false, emptyUsage()),
    new EmbeddingError("503", 503, true),
    new ModelPartError(new LlmRequestError("400", 400, false, emptyUsage()), rules),
  ];
  for (const err of own) assert.equal(cutByTheDeadline(err), false, String(err));
});
