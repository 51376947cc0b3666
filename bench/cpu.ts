// CPU time a run costs: in this process (Deno, every thread: V8, the event loop, sockets) and in
// the Postgres backends of a pool (read from /proc: the bench's database runs on this machine).
// Throughput on 2 cores cannot exceed 2,000 ms / (CPU ms per request): the figure that says
// whether more clients can still help, or the work itself must get cheaper.
import process from "node:process";
import type { Sql } from "./benchdb.ts";

export interface CpuSpent {
  denoMs: number;
  /** null when the backends' /proc entries cannot be read (a database on another machine). */
  postgresMs: number | null;
}

const TICK_MS = 10; // USER_HZ: 100 ticks a second on Linux

async function backendTicks(sql: Sql, applicationNames: string[]): Promise<Map<number, number> | null> {
  const pids = await sql<
    { pid: number }[]
  >`select pid from pg_stat_activity where application_name = any (${applicationNames})`;
  const ticks = new Map<number, number>();
  for (const { pid } of pids) {
    try {
      // Fields after the command name: utime and stime are the 12th and 13th (man 5 proc).
      const fields = (await Deno.readTextFile(`/proc/${pid}/stat`)).split(") ")[1]!.split(" ");
      ticks.set(pid, Number(fields[11]) + Number(fields[12]));
    } catch {
      return null;
    }
  }
  return ticks;
}

/** Ticks of the backends of every (server, application names) given, by pid. */
async function allTicks(sources: readonly [Sql, string[]][]): Promise<Map<number, number> | null> {
  const all = new Map<number, number>();
  for (const [sql, names] of sources) {
    const ticks = await backendTicks(sql, names);
    if (!ticks) return null;
    for (const [pid, t] of ticks) all.set(pid, t);
  }
  return all;
}

/**
 * Starts measuring the backends of the pools with these application names on each server (a
 * replica's backends are listed by the replica); the function returned says what was spent since.
 */
export async function cpuMeter(sources: readonly [Sql, string[]][]): Promise<() => Promise<CpuSpent>> {
  const before = await allTicks(sources);
  const deno0 = process.cpuUsage();
  return async () => {
    const deno = process.cpuUsage(deno0);
    const after = await allTicks(sources);
    let postgresMs: number | null = null;
    if (before && after) {
      postgresMs = 0;
      // A backend opened during the run counts from zero; one closed during it is not seen.
      for (const [pid, t] of after) postgresMs += (t - (before.get(pid) ?? 0)) * TICK_MS;
    }
    return { denoMs: (deno.user + deno.system) / 1000, postgresMs };
  };
}
