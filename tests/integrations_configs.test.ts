// The copy-paste configs in integrations/ (Claude Code, Cursor, Codex CLI, Cline, Windsurf) point
// at the MCP server with a header it accepts: each is read the way its client reads it (its own
// field names, its own variable syntax filled in), and the MCP SDK's client connects with what it
// says and lists the tools. The Claude Code settings run hook scripts that exist.
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { parse as parseToml } from "smol-toml";
import { userToken } from "./support/auth.ts";
import { startTestServer } from "./support/http_server.ts";
import { WRITE_TOOLS } from "../supabase/functions/memory-mcp/tools.ts";
import { newTenant } from "./support/seed.ts";

const INTEGRATIONS = new URL("../integrations/", import.meta.url);
const DOCUMENTED_URL = "http://127.0.0.1:54321";

interface Endpoint {
  url: string;
  authorization: string;
}

type Servers = Record<string, Record<string, unknown>>;
const json = async (path: string) =>
  JSON.parse(await Deno.readTextFile(new URL(path, INTEGRATIONS))) as { mcpServers: Servers };
const header = (server: Record<string, unknown>) => (server.headers as Record<string, string>).Authorization!;

/** Where each client finds the URL and the Authorization header in its own config. */
const CONFIGS: Record<string, () => Promise<Endpoint>> = {
  "claude-code/mcp.json": async () => {
    const s = (await json("claude-code/mcp.json")).mcpServers["devai-memory"]!;
    assert.equal(s.type, "http");
    return { url: s.url as string, authorization: header(s) };
  },
  "cursor/mcp.json": async () => {
    const s = (await json("cursor/mcp.json")).mcpServers["devai-memory"]!;
    return { url: s.url as string, authorization: header(s) };
  },
  "windsurf/mcp_config.json": async () => {
    const s = (await json("windsurf/mcp_config.json")).mcpServers["devai-memory"]!;
    return { url: s.serverUrl as string, authorization: header(s) };
  },
  "cline/cline_mcp_settings.json": async () => {
    const s = (await json("cline/cline_mcp_settings.json")).mcpServers["devai-memory"]!;
    assert.equal(s.type, "streamableHttp");
    // Auto-approved: tools that never change what a memory says (searches only reinforce).
    const writing = (s.autoApprove as string[]).filter((name) => WRITE_TOOLS.has(name));
    assert.deepEqual(writing, [], "no writing tool is auto-approved");
    return { url: s.url as string, authorization: header(s) };
  },
  "codex/config.toml": async () => {
    const doc = parseToml(await Deno.readTextFile(new URL("codex/config.toml", INTEGRATIONS))) as {
      mcp_servers: Servers;
    };
    const s = doc.mcp_servers["devai-memory"]!;
    // Codex sends `Authorization: Bearer <the variable's value>`.
    return { url: s.url as string, authorization: `Bearer \${env:${s.bearer_token_env_var}}` };
  },
};

/** The values a client fills in: ${VAR}, ${VAR:-default} (Claude Code), ${env:VAR} (Cursor, Windsurf), Cline's placeholder. */
function fill(text: string, env: Record<string, string>): string {
  return text
    .replace(/\$\{env:([A-Z_]+)\}/g, (_, name: string) => env[name] ?? "")
    .replace(/\$\{([A-Z_]+)(?::-([^}]*))?\}/g, (_, name: string, fallback?: string) => env[name] ?? fallback ?? "")
    .replace("<your agent token>", env.DEVAI_AGENT_TOKEN ?? "");
}

Deno.test("integrations: every MCP config reaches memory-mcp with a token it accepts", async () => {
  const server = await startTestServer({ worker: false });
  try {
    const token = await userToken(newTenant());
    for (const [file, read] of Object.entries(CONFIGS)) {
      const endpoint = await read();
      const env = { DEVAI_AGENT_TOKEN: token };
      const documented = fill(endpoint.url, env);
      assert.equal(documented, `${DOCUMENTED_URL}/functions/v1/memory-mcp`, file);
      // The documented local URL, pointed at this test's server.
      const url = documented.replace(DOCUMENTED_URL, server.url);
      const client = new Client({ name: file, version: "0" });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(url), {
          requestInit: { headers: { authorization: fill(endpoint.authorization, env) } },
        }),
      );
      try {
        const { tools } = await client.listTools();
        assert.equal(tools.length, 13, file);
      } finally {
        await client.close();
      }
    }
  } finally {
    await server.close();
  }
});

Deno.test("integrations: the Claude Code settings run the three hooks, which exist", async () => {
  const settings = JSON.parse(await Deno.readTextFile(new URL("claude-code/settings.json", INTEGRATIONS))) as {
    hooks: Record<string, { hooks: { type: string; command: string }[] }[]>;
  };
  assert.deepEqual(Object.keys(settings.hooks).sort(), ["PreCompact", "SessionEnd", "UserPromptSubmit"]);
  for (const [event, groups] of Object.entries(settings.hooks)) {
    const command = groups[0]!.hooks[0]!.command;
    const script = /\/([a-z-]+\.mjs)"/.exec(command)?.[1];
    assert.ok(script, `${event}: ${command}`);
    assert.ok(
      (await Deno.stat(new URL(`claude-code/hooks/${script}`, INTEGRATIONS))).isFile,
      `${event} runs ${script}`,
    );
  }
});
