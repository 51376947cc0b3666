// The SDK as users get it: `npm pack` of sdk/ (its prepack builds the JS and the types), the
// tarball installed into a fresh project, a TypeScript consumer type-checked against the
// package's .d.ts and run by the machine's `node` (Node 20 here) against the local server, which
// this test starts on a free port. Nothing but the npm registry (for the SDK's pinned TypeScript).
import assert from "node:assert/strict";
import { serviceToken, userToken } from "./support/auth.ts";
import { testBackend } from "./support/backend.ts";
import { startTestServer } from "./support/http_server.ts";
import { cleanEnv, spawnWatched } from "./support/process.ts";
import { newTenant } from "./support/seed.ts";

const sdkDir = new URL("../sdk/", import.meta.url).pathname;
const consumer = new URL("./sdk_node/consumer.mts", import.meta.url).pathname;

/** Runs a command to completion; fails the test with its output when it fails. */
async function run(cmd: string, args: string[], cwd: string, env: Record<string, string> = {}): Promise<string> {
  const p = spawnWatched(cmd, args, { cwd, env: cleanEnv(env) });
  const status = await p.exited;
  assert.equal(status.code, 0, `${cmd} ${args.join(" ")} (in ${cwd}):\n${p.output()}`);
  return p.output();
}

Deno.test({
  name:
    "sdk: npm pack → npm install of the tarball → a typed Node program remembers, retrieves and extracts against the server",
  ignore: testBackend !== "postgres",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const npm = {
      npm_config_loglevel: "error",
      npm_config_fund: "false",
      npm_config_audit: "false",
      npm_config_update_notifier: "false",
    };
    await run("npm", ["ci"], sdkDir, npm);
    const work = await Deno.makeTempDir({ prefix: "devai-sdk-consumer-" });
    const server = await startTestServer({ worker: false });
    try {
      const packed = JSON.parse(
        (await run("npm", ["pack", "--json", "--pack-destination", work], sdkDir, npm)).replace(/^[^[]*/s, ""),
      );
      const tarball = `${work}/${packed[0].filename}`;
      const files: string[] = packed[0].files.map((f: { path: string }) => f.path);
      for (const f of ["package.json", "README.md", "dist/index.js", "dist/index.d.ts"]) {
        assert.ok(files.includes(f), `${f} in ${files}`);
      }
      assert.ok(!files.some((f) => f.startsWith("src/") || f.includes("node_modules")), "only the built package ships");

      const app = `${work}/app`;
      await Deno.mkdir(app);
      await Deno.writeTextFile(
        `${app}/package.json`,
        JSON.stringify({ name: "consumer", private: true, type: "module" }),
      );
      await run("npm", ["install", "--offline", tarball], app, npm);
      await Deno.copyFile(consumer, `${app}/consumer.mts`);
      await Deno.writeTextFile(
        `${app}/tsconfig.json`,
        JSON.stringify({
          compilerOptions: {
            target: "ES2022",
            module: "NodeNext",
            moduleResolution: "NodeNext",
            lib: ["ES2022", "DOM"],
            strict: true,
            types: [],
            skipLibCheck: false,
          },
          files: ["consumer.mts", "node-globals.d.ts"],
        }),
      );
      // The consumer reads process.env; @types/node is not installed, so declare just that.
      await Deno.writeTextFile(
        `${app}/node-globals.d.ts`,
        "declare const process: { env: Record<string, string | undefined>; version: string };\n",
      );
      await run(`${sdkDir}node_modules/.bin/tsc`, ["-p", "tsconfig.json"], app);

      const tenant = newTenant();
      const out = await run("node", ["consumer.mjs"], app, {
        SUPABASE_URL: server.url,
        DEVAI_TOKEN: await userToken(tenant),
        SERVICE_TOKEN: await serviceToken(),
      });
      const seen = JSON.parse(out.trim().split("\n").at(-1)!);
      assert.match(seen.node, /^v\d+\./);
      assert.equal(seen.created, true);
      assert.equal(seen.namespace, "devai/project/acme~web/notes");
      assert.deepEqual(seen.injected, [seen.saved_id]);
      assert.match(
        seen.block,
        /### Project Knowledge \(acme\/web\)\n- The acme web app deploys with blue-green releases every Friday/,
      );
      assert.deepEqual(seen.listed, [seen.saved_id]);
      assert.deepEqual(seen.refused, { status: 400, code: "invalid_request", paths: ["top_k"] });
      assert.deepEqual(seen.first, { new_messages: 2, count: 2 });
      assert.deepEqual(seen.second, { new_messages: 1, count: 3 }, "the second send posted only the new message");
      assert.equal(seen.coder_has_testing, true);
      assert.equal(seen.unreachable, "0 network_error");

      // The README's Node example (`npm run example:node`), against the same server.
      const example = await run("bash", ["scripts/sdk.sh", "example"], new URL("..", import.meta.url).pathname, {
        ...npm,
        SUPABASE_URL: server.url,
        DEVAI_TOKEN: await userToken(newTenant()),
      });
      assert.match(example, /remembered: [0-9a-f-]{36}/);
      assert.match(
        example,
        /### Project Knowledge \(acme\/demo-shop\)\n- The demo-shop project deploys with blue-green releases/,
      );
    } finally {
      await server.close();
      await Deno.remove(work, { recursive: true });
    }
  },
});
