// The SDK's entry point for Deno in this repository (`import { createMemoryClient } from "./sdk/mod.ts"`).
// The same sources are the npm package devai-memory-sdk (sdk/package.json), built to JS + types.
export * from "./src/index.ts";
