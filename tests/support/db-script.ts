// scripts/db.sh <command> as the tests that run a cluster, replica or pooler of their own call it:
// on the ports in `env`, never on DATABASE_URL; fails the test with the script's stderr.
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const REPO = fileURLToPath(new URL("../..", import.meta.url));

export async function dbScript(command: string, env: Record<string, string>): Promise<void> {
  const out = await new Deno.Command("bash", {
    args: ["scripts/db.sh", command],
    cwd: REPO,
    env: { ...env, DATABASE_URL: "" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, `db.sh ${command}: ${new TextDecoder().decode(out.stderr)}`);
}
