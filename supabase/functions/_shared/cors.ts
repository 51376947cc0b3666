// Browser clients (Studio, dashboards) call the functions cross-origin; the gateway expects these.
// The functions answer CORS with hono/cors (app.ts); the local server's own errors carry corsHeaders.
export const CORS_ALLOW_HEADERS = [
  "authorization",
  "x-client-info",
  "apikey",
  "content-type",
  "x-devai-tenant",
  "x-devai-agent",
  "x-request-id",
  // Browser MCP clients send these on every POST after initialize (docs/mcp.md).
  "mcp-protocol-version",
  "mcp-session-id",
  "x-devai-structured-content",
];
// Headers a browser script may read: where to sign in after a 401 (MCP authorization, RFC 9728),
// the MCP session, when to retry after a 429, and the request id to quote in a report.
export const CORS_EXPOSE_HEADERS = ["www-authenticate", "mcp-session-id", "retry-after", "x-request-id"];
export const CORS_ALLOW_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

export const corsHeaders: Record<string, string> = {
  "access-control-allow-origin": "*",
  "access-control-allow-headers": CORS_ALLOW_HEADERS.join(", "),
  "access-control-allow-methods": CORS_ALLOW_METHODS.join(", "),
  "access-control-expose-headers": CORS_EXPOSE_HEADERS.join(", "),
};
