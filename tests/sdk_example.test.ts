// `npm run example` (sdk/example.ts), run as the README and docs/sdk.md tell a new user to, against
// the local functions server: it remembers the fact and prints the block docs/sdk.md shows, for the
// project the README's snippet names. (sdk/example.mjs, the Node twin, needs sdk/dist built:
// tests/sdk_node.test.ts runs the packed SDK from Node.)
import assert from "node:assert/strict";
import { userToken } from "./support/auth.ts";
import { TEST_JWT_SECRET } from "./support/config.ts";
import { startTestServer } from "./support/http_server.ts";
import { newTenant } from "./support/seed.ts";

const ROOT = new URL("../", import.meta.url);

async function runExample(env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--config", "supabase/functions/deno.json", "sdk/example.ts"],
    cwd: ROOT.pathname,
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
}

Deno.test({
  name: "sdk example: npm run example remembers, then prints the block docs/sdk.md shows",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const server = await startTestServer();
  try {
    const env = { SUPABASE_URL: server.url, DEVAI_TOKEN: await userToken(newTenant()) };
    const first = await runExample(env);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /^remembered: [0-9a-f-]{36}$/m);
    const block = "## Relevant Memories\n\n### Project Knowledge (acme/demo-shop)\n" +
      "- The demo-shop project deploys with blue-green releases every Friday afternoon";
    assert.ok(first.stdout.includes(block), first.stdout);
    const docs = await Deno.readTextFile(new URL("docs/sdk.md", ROOT));
    assert.ok(docs.includes("// ### Project Knowledge (acme/demo-shop)"), "docs/sdk.md shows another project");
    // Run again: the same fact is known, not written twice.
    const second = await runExample(env);
    assert.equal(second.code, 0, second.stderr);
    assert.match(second.stdout, /^already known: [0-9a-f-]{36}$/m);
  } finally {
    await server.close();
  }
});

Deno.test("sdk example: without a server it says what to start", async () => {
  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const url = `http://127.0.0.1:${(closed.addr as Deno.NetAddr).port}`;
  closed.close();
  const run = await runExample({ SUPABASE_URL: url, DEVAI_TOKEN: "unused" });
  assert.equal(run.code, 1);
  assert.match(run.stderr, /network_error/);
  assert.ok(run.stderr.includes(`is the server running? npm start (expected at ${url})`), run.stderr);
});

Deno.test({
  name: "sdk example: without DEVAI_TOKEN it signs the demo user's token with JWT_SECRET, as npm start does",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  // npm start verifies (and signs its banner's tokens) with SUPABASE_JWT_SECRET, else JWT_SECRET; the
  // example read only the first, so a server started with JWT_SECRET answered it 401 invalid_token.
  const server = await startTestServer();
  try {
    const run = await runExample({ SUPABASE_URL: server.url, JWT_SECRET: TEST_JWT_SECRET });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^(remembered|already known): [0-9a-f-]{36}$/m);
  } finally {
    await server.close();
  }
});
