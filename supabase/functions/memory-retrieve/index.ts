// memory-retrieve: the `## Relevant Memories` block before each turn (POST /memory-retrieve) and
// memory.query for scoped agents (POST /memory-retrieve/query). See handler.ts.
import { createHandler, defaultDeps } from "./handler.ts";

Deno.serve(createHandler(defaultDeps()));
