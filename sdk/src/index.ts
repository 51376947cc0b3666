// devai-memory-sdk: a typed client for the devai-memory edge functions (long-term memory for
// coding agents on Supabase). Runs on Node 20.3+, Deno and Bun with the runtime's own fetch.
export {
  createMemoryClient,
  type MemoryClient,
  type MemoryClientOptions,
  SDK_VERSION,
  TENANT_HEADER,
} from "./client.ts";
export { MemoryApiError, type MemoryApiIssue } from "./errors.ts";
export type * from "./types.ts";
