// A pool's server sessions (db-pool.ts, IDLE_TIMEOUT_SECONDS): a connection no statement used
// during an agent's pause between two turns is still there for the next turn, whose retrieval so
// finds the plans and catalog entries the previous one cached (docs/operations.md#a-pools-connections).
// The pause is the pool's timers run by hand (the ones due within it), not a wait. And a connection
// in steady use is replaced after hours, not every 30-60 minutes (db-pool.ts,
// connectionLifetimeSeconds), each replacement paying a new session's first retrieval again.
import assert from "node:assert/strict";
import { createSql, type Sql } from "../supabase/functions/_shared/db.ts";
import { IDLE_TIMEOUT_SECONDS } from "../supabase/functions/_shared/db-pool.ts";
import { realServerOnly } from "./support/backend.ts";
import { testDatabaseUrl } from "./support/config.ts";

/** A pause of an agent between two turns: a user reading an answer, a build, a review. */
const PAUSE_MS = 5 * 60_000;

type Due = { run: () => void; ms: number };

/**
 * Runs `made` with the timers it sets of a second or more held here, then runs those due within
 * `pauseMs` and not cancelled meanwhile: what a pause of that length does to them. With `busy`,
 * the period is one of steady use instead: the idle timers (which each statement restarts) do
 * not fire, the others (a connection's lifetime) do.
 */
async function afterPause(pauseMs: number, made: () => Promise<void>, busy = false): Promise<number> {
  const held = new Map<number, Due>();
  let next = 1e9;
  const realSet = globalThis.setTimeout, realClear = globalThis.clearTimeout;
  globalThis.setTimeout = ((fn: (...a: unknown[]) => void, ms = 0, ...args: unknown[]) => {
    if (ms < 1000) return realSet(fn, ms, ...args);
    const id = next++;
    held.set(id, { run: () => fn(...args), ms });
    return id;
  }) as typeof setTimeout;
  globalThis.clearTimeout = ((id?: number) => {
    if (id !== undefined && held.delete(id)) return;
    realClear(id);
  }) as typeof clearTimeout;
  try {
    await made();
  } finally {
    globalThis.setTimeout = realSet;
    globalThis.clearTimeout = realClear;
  }
  const due = [...held.values()].filter((t) => t.ms <= pauseMs && !(busy && t.ms <= IDLE_TIMEOUT_SECONDS * 1000));
  for (const t of due) t.run();
  return due.length;
}

async function backendPid(sql: Sql): Promise<number> {
  const [row] = await sql<{ pid: number }[]>`select pg_backend_pid() as pid`;
  return row!.pid;
}

Deno.test(
  realServerOnly("a turn after a pause of minutes is served on the session of the turn before it", "server sessions"),
  async () => {
    const sql = createSql(testDatabaseUrl(), { max: 2, applicationName: "devai-memory-tests" });
    try {
      let before = 0;
      await afterPause(PAUSE_MS, async () => {
        before = await backendPid(sql);
      });
      const after = await backendPid(sql);
      // Sessions the two turns were served on: one. With postgres.js's 20 s idle timeout, two (the
      // second turn's first retrieval paid the new session's 150-200 ms).
      assert.equal(
        new Set([before, after]).size,
        1,
        `the turn after the pause ran on a new session (${before} -> ${after})`,
      );
    } finally {
      await sql.end();
    }
  },
);

/** A mark on the server session a statement runs on (session-level, so a new session lacks it). */
async function markSession(sql: Sql): Promise<void> {
  await sql`select set_config('devai.test_session_mark', 'marked', false)`;
}

async function sessionMarked(sql: Sql): Promise<boolean> {
  const [row] = await sql<{ mark: string | null }[]>`select current_setting('devai.test_session_mark', true) as mark`;
  return row!.mark === "marked";
}

Deno.test("a connection in steady use for two hours is not replaced", async () => {
  const sql = createSql(testDatabaseUrl(), { max: 1, applicationName: "devai-memory-tests" });
  try {
    const fired = await afterPause(2 * 3600_000, () => markSession(sql), true);
    // With postgres.js's own lifetime (30-60 minutes) its timer fired here and the next statement
    // ran on a new session, which paid the first retrieval's plans and catalog reads again. On
    // PGlite the session is the one backend's, reset when its last client leaves: the same check.
    assert.equal(fired, 0, `${fired} of the pool's timers ended the connection within two hours of use`);
    assert.equal(await sessionMarked(sql), true, "the statement after two hours of use ran on a new session");
  } finally {
    await sql.end();
  }
});
