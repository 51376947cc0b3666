// A streaming read replica of the bench's own cluster for the handler suite's replica rows: made
// and started by the project's script (scripts/db.sh replica-start, on DEVAI_BENCH_REPLICA_PORT,
// which scripts/bench.sh sets) right before the suite, caught up with the primary, and stopped
// after it, so its WAL replay never competes with the other suites for the cores. With
// BENCH_READ_DATABASE_URL, that database is used as the replica instead (nothing is started).
import { fileURLToPath } from "node:url";
import { connect } from "./benchdb.ts";
import { log } from "./lib.ts";

const REPO = fileURLToPath(new URL("..", import.meta.url));

async function dbScript(command: string, env: Record<string, string>): Promise<void> {
  const out = await new Deno.Command("bash", {
    args: ["scripts/db.sh", command],
    cwd: REPO,
    env: { ...env, DATABASE_URL: "" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) throw new Error(`scripts/db.sh ${command}: ${new TextDecoder().decode(out.stderr)}`);
}

/** Runs fn with the URL of a replica of `url`'s cluster, or undefined when there is none to use. */
export async function withReplica<T>(url: string, fn: (readUrl: string | undefined) => Promise<T>): Promise<T> {
  const given = Deno.env.get("BENCH_READ_DATABASE_URL");
  if (given) return await fn(given);
  const port = Deno.env.get("DEVAI_BENCH_REPLICA_PORT");
  if (!port) return await fn(undefined);
  const env = { DEVAI_PG_PORT: new URL(url).port, DEVAI_PG_REPLICA_PORT: port };
  log(`starting a streaming replica of the bench cluster on ${port} (scripts/db.sh replica-start)`);
  await dbScript("replica-start", env);
  const readUrl = `postgresql://postgres@127.0.0.1:${port}${new URL(url).pathname}`;
  try {
    const primary = connect(url, 1), replica = connect(readUrl, 1);
    try {
      const [p] = await primary<{ lsn: string }[]>`select pg_current_wal_lsn()::text as lsn`;
      for (;;) {
        const [r] = await replica<{ done: boolean }[]>`select pg_last_wal_replay_lsn() >= ${p!.lsn}::pg_lsn as done`;
        if (r!.done) break;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    } finally {
      await primary.end();
      await replica.end();
    }
    return await fn(readUrl);
  } finally {
    await dbScript("replica-stop", env);
  }
}
