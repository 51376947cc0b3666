// Whether a POST's Accept header admits what MCP's streamable HTTP asks a client to accept: both
// application/json and text/event-stream (memory-mcp answers with JSON only, but MCP asks for both).
// Read as HTTP reads it (RFC 9110 §12.5.1): media types in any letter case, wildcards (*/*,
// application/*) and q-values, q=0 meaning "not acceptable". The SDK (1.32.2) looks for the two
// strings as written: `*/*` (curl's and fetch's default) and `APPLICATION/JSON, TEXT/EVENT-STREAM`
// were 406, and `application/json;q=0, text/event-stream` passed.
import { json } from "../_shared/http.ts";

/** The media types MCP's streamable HTTP asks a client's Accept header to admit, as the SDK checks them. */
export const MCP_ACCEPT = "application/json, text/event-stream";

/** The q-value the header gives `type` (a lower-case "type/subtype"): the most specific range's, 0 if none. */
function qualityOf(accept: string, type: string): number {
  const [major] = type.split("/");
  let best = { specificity: -1, q: 0 };
  for (const part of accept.split(",")) {
    const [rangeText, ...params] = part.split(";");
    const range = rangeText!.trim().toLowerCase();
    const specificity = range === type ? 2 : range === `${major}/*` ? 1 : range === "*/*" ? 0 : -1;
    if (specificity < 0 || specificity < best.specificity) continue;
    const qParam = params.map((p) => p.trim().toLowerCase()).find((p) => p.startsWith("q="));
    const q = qParam === undefined ? 1 : Number(qParam.slice(2));
    best = { specificity, q: Number.isFinite(q) ? q : 0 };
  }
  return best.q;
}

/** True when the header admits both of MCP's media types (a missing header does not: MCP requires one). */
export function admitsMcpAnswers(accept: string | null): boolean {
  if (accept === null) return false;
  return qualityOf(accept, "application/json") > 0 && qualityOf(accept, "text/event-stream") > 0;
}

/** The 406 of a request whose Accept header does not admit MCP's answers (the SDK's words), or undefined. */
export function notAcceptable(req: Request): Response | undefined {
  if (admitsMcpAnswers(req.headers.get("accept"))) return undefined;
  const message = "Not Acceptable: Client must accept both application/json and text/event-stream";
  return json({ jsonrpc: "2.0", id: null, error: { code: -32000, message } }, 406);
}

/**
 * The request as the SDK's transport is given it, one notAcceptable passed: its Accept header
 * spelled as the SDK looks for it.
 */
export function withMcpAccept(req: Request): Request {
  if (req.headers.get("accept") === MCP_ACCEPT) return req;
  const headers = new Headers(req.headers);
  headers.set("accept", MCP_ACCEPT);
  // The body was read already (the SDK is handed the parsed message): a new request without one.
  return new Request(req.url, { method: req.method, headers });
}
