// The `memory-mcp` function's entry point: what `supabase functions deploy` bundles and the Edge
// Runtime runs (Deno.serve, with the dependencies the environment describes, when this is the main
// module). The local server (scripts/serve.ts) imports it instead and calls createHandler with the
// dependencies it shares across functions. The MCP server: handler.ts.
import { createHandler, defaultDeps } from "./handler.ts";

export { createHandler };

if (import.meta.main) Deno.serve(createHandler(defaultDeps()));
