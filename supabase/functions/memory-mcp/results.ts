// What a tool answers: the operation's result as text an agent reads (plus the HTTP API's answer as
// structured content for a client that asks for it), or, for what the caller must fix, a tool error
// carrying the API's error code.
import type { Caller } from "../_shared/auth.ts";
import { asHttpError, HttpError } from "../_shared/http.ts";
import { issuesText } from "../_shared/issue-text.ts";
import type { ServiceDeps } from "../_shared/services/deps.ts";

export interface Answer {
  text: string;
  /** The HTTP API's answer for the same operation. */
  structured: object;
}

export interface ToolContext {
  deps: ServiceDeps;
  caller: Caller;
  requestId: string;
  /** The client asked for the HTTP answer as structured content (STRUCTURED_CONTENT_HEADER). */
  structured: boolean;
}

/**
 * The header a client sends (`true`) to get each result's HTTP answer as structured content too.
 * Without it a result is its text alone: Claude Code and VS Code give the model a result's
 * structured content instead of its text whenever it has one (docs/mcp.md#what-the-model-reads),
 * so the model never read the text and paid 3-6 times its tokens for the JSON.
 */
export const STRUCTURED_CONTENT_HEADER = "x-devai-structured-content";

/** Whether the request asks for structured content; a value other than true or false is a 400. */
export function wantsStructuredContent(req: Request): boolean {
  const value = req.headers.get(STRUCTURED_CONTENT_HEADER)?.trim().toLowerCase();
  if (value === undefined || value === "false") return false;
  if (value === "true") return true;
  throw new HttpError(400, "invalid_request", `${STRUCTURED_CONTENT_HEADER} must be true or false`);
}

/** The operation's answer as a tool result, or its error as a tool error carrying the API's code. */
export async function answer(ctx: ToolContext, run: () => Promise<Answer>) {
  try {
    const { text, structured } = await run();
    const content = [{ type: "text" as const, text }];
    return ctx.structured ? { content, structuredContent: structured as Record<string, unknown> } : { content };
  } catch (err) {
    return toolError(err, ctx.requestId);
  }
}

/**
 * An error as a tool error (docs/mcp.md): text that starts with the API's error code, and the HTTP
 * API's error as structured content. The text names each issue too: many clients show the model the
 * text only, and it is what the model must fix (a tool's bad arguments come here: tool-server.ts).
 */
export function toolError(err: unknown, requestId: string) {
  const e = asHttpError(err, requestId);
  const error = {
    code: e.code,
    message: e.message,
    status: e.status,
    ...(e.issues ? { issues: e.issues } : {}),
    request_id: requestId,
  };
  const issues = e.issues?.length ? `: ${issuesText(e.issues, "(arguments)")}` : "";
  return {
    isError: true,
    content: [{ type: "text" as const, text: `${e.code}: ${e.message}${issues}` }],
    structuredContent: { error },
  };
}
