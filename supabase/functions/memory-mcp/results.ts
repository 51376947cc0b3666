// What a tool answers: the operation's result as text an agent reads plus the HTTP API's answer as
// structured content, or, for what the caller must fix, a tool error carrying the API's error code.
import type { Caller } from "../_shared/auth.ts";
import { asHttpError } from "../_shared/http.ts";
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
}

/** The operation's answer as a tool result, or its error as a tool error carrying the API's code. */
export async function answer(ctx: ToolContext, run: () => Promise<Answer>) {
  try {
    const { text, structured } = await run();
    return { content: [{ type: "text" as const, text }], structuredContent: structured as Record<string, unknown> };
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
