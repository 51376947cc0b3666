// OAuth 2.0 Protected Resource Metadata (RFC 9728) for MCP clients: where this server is and which
// authorization server issues its tokens (the project's Supabase Auth). A request without a valid
// credential is a 401 whose WWW-Authenticate header points at this document, so a client that
// supports discovery can sign the user in; others are configured with a token (docs/auth.md).
import type { Config } from "../_shared/env.ts";

export const FUNCTION_NAME = "memory-mcp";
/** Served under the function's own path: the host's root /.well-known is not the function's to serve. */
export const METADATA_PATH = `/${FUNCTION_NAME}/.well-known/oauth-protected-resource`;

/**
 * The function's public URL: the project's (SUPABASE_URL, set on hosted projects) or, locally, the
 * origin the request came to, with the gateway's /functions/v1 path.
 */
export function resourceUrl(config: Pick<Config, "publicUrl">, req: Request): string {
  const base = config.publicUrl ?? new URL(req.url).origin;
  return `${base}/functions/v1/${FUNCTION_NAME}`;
}

export function protectedResourceMetadata(config: Pick<Config, "publicUrl">, req: Request): Record<string, unknown> {
  return {
    resource: resourceUrl(config, req),
    // Supabase Auth is the authorization server of a hosted project (its OAuth 2.1 server issues
    // the user JWTs this function accepts). Locally there is none: use the printed tokens.
    ...(config.publicUrl ? { authorization_servers: [`${config.publicUrl}/auth/v1`] } : {}),
    bearer_methods_supported: ["header"],
    resource_name: "devai-memory",
  };
}

/** The WWW-Authenticate header of a 401 (RFC 6750 §3 with RFC 9728's resource_metadata). */
export function wwwAuthenticate(
  config: Pick<Config, "publicUrl">,
  req: Request,
  code: string,
  message: string,
): string {
  const metadata = `${resourceUrl(config, req)}/.well-known/oauth-protected-resource`;
  // RFC 6750 §3 allows only printable ASCII but " and \ in error_description, and a header must
  // be a ByteString: a 401 message with "…" or any non-ASCII character made this a 500.
  const description = message.replaceAll("…", "...").replace(
    /[^\x20-\x21\x23-\x5B\x5D-\x7E]/g,
    (c) => c === '"' ? "'" : "?",
  );
  const error = code === "missing_token" ? "" : `, error="invalid_token", error_description="${description}"`;
  return `Bearer realm="devai-memory", resource_metadata="${metadata}"${error}`;
}
