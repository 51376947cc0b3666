// The agent's checkpointer (docs/consolidation.md#checkpoints), a thin adapter over
// _shared/checkpoints.ts:
//   PUT /memory/checkpoints/{thread_id}   {state, version?} → 201 created | 200 saved, {version, …};
//                                         409 version_conflict for a stale version, 413 over MAX_CHECKPOINT_BYTES
//   GET /memory/checkpoints/{thread_id}   → {thread_id, version, state, size_bytes, created_at, updated_at}, ETag "<version>"
// Registered by handler.ts before /memory/{id}. Another tenant's thread is a 404, like an unknown one.
import { checkpointThreadId, CheckpointSaveRequest, loadCheckpointJson, saveCheckpoint } from "../_shared/checkpoints.ts";
import { corsHeaders } from "../_shared/cors.ts";
import { HttpError, json, methodNotAllowed, parseJsonBody, validate } from "../_shared/http.ts";
import type { Ctx, MemoryApp, RouteDeps } from "./routing.ts";
import { who } from "./routing.ts";

const PATH = "/memory/checkpoints/:thread_id";
const threadOf = (c: Ctx) => validate(checkpointThreadId, c.req.param("thread_id"), "thread id");

export function registerCheckpointRoutes(app: MemoryApp, deps: RouteDeps): void {
  const { sql, config } = deps;

  app.put(PATH, async (c) => {
    const thread = threadOf(c);
    const body = await parseJsonBody(c.req.raw, CheckpointSaveRequest, config.maxCheckpointBytes, {
      tooLarge: `a checkpoint is at most ${config.maxCheckpointBytes} bytes (MAX_CHECKPOINT_BYTES): keep large artefacts out of the ` +
        "state (store a reference), or raise MAX_CHECKPOINT_BYTES on the server",
    });
    const saved = await saveCheckpoint(sql, who(c), thread, body);
    const { created, ...info } = saved;
    return json(info, created ? 201 : 200, { etag: `"${info.version}"` });
  });

  app.get(PATH, async (c) => {
    const thread = threadOf(c);
    const found = await loadCheckpointJson(sql, who(c), thread);
    if (!found) throw new HttpError(404, "not_found", `no checkpoint for thread ${thread}`);
    return new Response(found.json, {
      status: 200,
      headers: { ...corsHeaders, "content-type": "application/json; charset=utf-8", etag: `"${found.version}"` },
    });
  });

  app.all(PATH, () => {
    throw methodNotAllowed(["GET", "PUT"]);
  });
}
