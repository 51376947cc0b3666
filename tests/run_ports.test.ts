// The ports `npm test`, `npm run bench` and `npm run eval` listen on (scripts/lib/ports.sh): every
// fixed default sits below the ephemeral port range, where an outgoing connection could hold it
// when a server starts; the test files' own defaults (tests/support/ports.ts) are scripts/test.sh's;
// and a port another program listens on stops the run at once, naming the variable to set, while
// this project's own cluster on it (an earlier run's, reused) does not.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FREE_PORTS, freePort } from "./support/http.ts";
import { TEST_PORT_DEFAULTS } from "./support/ports.ts";

const repo = new URL("..", import.meta.url).pathname;
/** The lowest port of Linux's default ephemeral range (net.ipv4.ip_local_port_range 32768-60999). */
const EPHEMERAL_LOW = 32768;

/** The `${NAME:-<default>}` defaults a script sets, by variable name. */
function scriptDefaults(script: string): Map<string, number> {
  const text = Deno.readTextFileSync(join(repo, script));
  return new Map([...text.matchAll(/\$\{(DEVAI_\w+_PORT):-(\d+)\}/g)].map((m) => [m[1]!, Number(m[2])]));
}

/** require_free_port VAR PORT [kind] from scripts/lib/ports.sh, in bash. */
async function requireFreePort(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stderr: string }> {
  const out = await new Deno.Command("bash", {
    args: ["-c", 'source scripts/lib/ports.sh && require_free_port "$@"', "bash", ...args],
    cwd: repo,
    env,
    stdout: "null",
    stderr: "piped",
  }).output();
  return { code: out.code, stderr: new TextDecoder().decode(out.stderr) };
}

Deno.test("ports: every fixed default port of the test, bench and eval runs is below the ephemeral range", () => {
  const test = scriptDefaults("scripts/test.sh");
  const bench = scriptDefaults("scripts/bench.sh");
  const evalRun = scriptDefaults("scripts/eval.sh");
  const base = test.get("DEVAI_TEST_PG_PORT")!;
  const fixed: [string, number | undefined][] = [
    ...Object.entries(TEST_PORT_DEFAULTS),
    ...test,
    ["the outage cluster (test cluster + 22)", base + 22],
    ["the replica (test cluster + 23)", base + 23],
    ["the upgrade cluster (test cluster + 24)", base + 24],
    ...bench,
    ["the bench's replica (bench cluster + 1)", bench.get("DEVAI_BENCH_PG_PORT")! + 1],
    ...evalRun,
  ];
  assert.ok(fixed.length >= 12, JSON.stringify(fixed));
  for (const [name, port] of fixed) {
    assert.ok(Number.isInteger(port) && port! > 1024 && port! < EPHEMERAL_LOW, `${name}: ${port}`);
    // freePort never hands one out (a port it draws when a file loads could be a fixed server's later).
    assert.ok(port! < FREE_PORTS.from || port! >= FREE_PORTS.to, `${name}: ${port} is in freePort's range`);
  }
  assert.ok(FREE_PORTS.to <= EPHEMERAL_LOW, "freePort draws below the ephemeral range");
  for (const [name, port] of Object.entries(TEST_PORT_DEFAULTS)) {
    if (name === "DEVAI_TEST_OUTAGE_PG_PORT") assert.equal(port, base + 22, "scripts/test.sh: test cluster + 22");
    else if (name === "DEVAI_TEST_UPGRADE_PG_PORT") assert.equal(port, base + 24, "scripts/test.sh: test cluster + 24");
    else assert.equal(port, test.get(name), `${name}: tests/support/ports.ts and scripts/test.sh agree`);
  }
  assert.notEqual(
    evalRun.get("DEVAI_EVAL_PG_PORT"),
    bench.get("DEVAI_BENCH_PG_PORT")! + 1,
    "eval is not the bench's replica",
  );
});

Deno.test("ports: a port another program listens on stops the run, naming the variable to set", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  try {
    const held = await requireFreePort(["DEVAI_TEST_PGLITE_PORT", String(port)]);
    assert.equal(held.code, 1, held.stderr);
    assert.match(
      held.stderr,
      new RegExp(
        `port ${port} \\(DEVAI_TEST_PGLITE_PORT\\) is already held by another program.*set DEVAI_TEST_PGLITE_PORT to a free port below 32768`,
      ),
    );
    const free = await requireFreePort(["DEVAI_TEST_PGLITE_PORT", String(freePort())]);
    assert.equal(free.code, 0, free.stderr);
    const bad = await requireFreePort(["DEVAI_TEST_PGLITE_PORT", "54x"]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /DEVAI_TEST_PGLITE_PORT=54x is not a port number/);
  } finally {
    listener.close();
  }
});

Deno.test("ports: the project's own cluster or replica on the port (an earlier run's) is not in the way", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const root = mkdtempSync(join(tmpdir(), "devai-ports-"));
  // postmaster.pid as Postgres writes it: pid, data directory, start time, port, ...
  const pidFile = (dir: string, pid: number, pidPort: number) => {
    mkdirSync(join(root, "srv/devai", dir), { recursive: true });
    writeFileSync(
      join(root, "srv/devai", dir, "postmaster.pid"),
      `${pid}\n/srv/devai/${dir}\n1700000000\n${pidPort}\n`,
    );
  };
  try {
    const env = { DEVAI_PG_ROOT: root };
    pidFile(`data-${port}`, Deno.pid, port);
    assert.equal((await requireFreePort(["DEVAI_TEST_PG_PORT", String(port), "cluster"], env)).code, 0);
    // The cluster's folder, but another kind asked for (a replica on that port would be replica-<port>).
    assert.equal((await requireFreePort(["DEVAI_TEST_REPLICA_PG_PORT", String(port), "replica"], env)).code, 1);
    pidFile(`replica-${port}`, Deno.pid, port);
    assert.equal((await requireFreePort(["DEVAI_TEST_REPLICA_PG_PORT", String(port), "replica"], env)).code, 0);
    // A stale postmaster.pid (its server gone, or on another port) proves nothing about the listener.
    pidFile(`data-${port}`, Deno.pid, port + 1);
    assert.equal((await requireFreePort(["DEVAI_TEST_PG_PORT", String(port), "cluster"], env)).code, 1);
    pidFile(`data-${port}`, 2 ** 22 + 1, port);
    assert.equal((await requireFreePort(["DEVAI_TEST_PG_PORT", String(port), "cluster"], env)).code, 1);
  } finally {
    listener.close();
    rmSync(root, { recursive: true, force: true });
  }
});
