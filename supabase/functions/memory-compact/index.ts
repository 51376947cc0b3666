// Wires the handler to Deno.serve with the process-wide dependencies (see handler.ts).
import { workerDepsFromEnv } from "../_shared/worker-deps.ts";
import { createHandler } from "./handler.ts";

Deno.serve(createHandler(workerDepsFromEnv("memory-compact")));
