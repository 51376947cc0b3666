// Browser clients (Studio, dashboards) call the functions cross-origin; the gateway expects these.
// The functions answer CORS with hono/cors (app.ts); the local server's own errors carry corsHeaders.
export const CORS_ALLOW_HEADERS = [
  "authorization",
  "x-client-info",
  "apikey",
  "content-type",
  "x-devai-tenant",
  "x-request-id",
];
export const CORS_ALLOW_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

export const corsHeaders: Record<string, string> = {
  "access-control-allow-origin": "*",
  "access-control-allow-headers": CORS_ALLOW_HEADERS.join(", "),
  "access-control-allow-methods": CORS_ALLOW_METHODS.join(", "),
};
