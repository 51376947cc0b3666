// Entry point on Supabase Edge Runtime / Deno: only wiring. Routes live in handler.ts.
import { createHandler, defaultDeps } from "./handler.ts";

Deno.serve(createHandler(defaultDeps()));
