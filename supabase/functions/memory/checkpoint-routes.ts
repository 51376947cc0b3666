// The agent's checkpointer (docs/consolidation.md#checkpoints), a thin adapter over
// _shared/services/background.ts:
//   PUT /memory/checkpoints/{thread_id}   {state, version?} → 201 created | 200 saved, {version, …};
//                                         409 version_conflict for a stale version, 413 over MAX_CHECKPOINT_BYTES
//   GET /memory/checkpoints/{thread_id}   → {thread_id, version, state, size_bytes, created_at, updated_at}, ETag "<version>"
// Another tenant's thread is a 404, like an unknown one.
import { CheckpointSaveRequest, checkpointThreadId } from "../_shared/checkpoints.ts";
import { corsHeaders } from "../_shared/cors.ts";
import { json, methodNotAllowed, parseJsonBody } from "../_shared/http.ts";
import { loadThreadCheckpoint, saveThreadCheckpoint } from "../_shared/services/background.ts";
import type { ServiceDeps } from "../_shared/services/deps.ts";
import { type Ctx, type MemoryApp, noQuery, parsePathParam, who } from "./routing.ts";

const PATH = "/memory/checkpoints/:thread_id";
const threadOf = (c: Ctx) => parsePathParam(c, "thread_id", checkpointThreadId, "thread id");

export function registerCheckpointRoutes(app: MemoryApp, deps: ServiceDeps): void {
  const max = deps.config.maxCheckpointBytes;

  app.put(PATH, async (c) => {
    const thread = threadOf(c);
    // The limit is the state's as stored (compact JSON, saveCheckpoint); the body may hold it with
    // whitespace: a load returns it as jsonb prints it (`": "`, `", "`: 4.67 MB for a 4.15 MB state)
    // and Python's json.dumps spaces it alike, and such a body of a state saved before was a 413.
    const body = await parseJsonBody(c.req.raw, CheckpointSaveRequest, 2 * max, {
      tooLarge: `a checkpoint is at most ${max} bytes (MAX_CHECKPOINT_BYTES): keep large artefacts out of the ` +
        "state (store a reference), or raise MAX_CHECKPOINT_BYTES on the server",
      // The state is the agent's own data, loaded back as saved: a number it would not get back is a 400.
      exactNumbers: true,
    });
    const { created, ...info } = await saveThreadCheckpoint(deps, who(c), thread, body);
    return json(info, created ? 201 : 200, { etag: `"${info.version}"` });
  });

  app.get(PATH, async (c) => {
    const thread = threadOf(c);
    noQuery(c);
    const found = await loadThreadCheckpoint(deps, who(c), thread);
    // The stored JSON as it is: a large state is never parsed and serialised again.
    return new Response(found.json, {
      status: 200,
      headers: { ...corsHeaders, "content-type": "application/json; charset=utf-8", etag: `"${found.version}"` },
    });
  });

  app.all(PATH, () => {
    throw methodNotAllowed(["GET", "PUT"]);
  });
}
