// Waiting for something to happen (a row to change, a lease to expire) without guessing how long
// it takes: the condition is checked again every pollMs until it holds, or the deadline fails the
// test. Assertions follow the event, never a fixed delay.
import type { Sql } from "../../supabase/functions/_shared/db.ts";
export async function waitUntil<T>(
  check: () => Promise<T | undefined | false>,
  what: string,
  opts: { deadlineMs?: number; pollMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + (opts.deadlineMs ?? 30_000);
  const pollMs = opts.pollMs ?? 100;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`gave up waiting: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/** How many connections of the test pools (testSql) wait for a lock now (pg_locks): an interleaving's step. */
export async function lockWaiters(sql: Sql): Promise<number> {
  const [r] = await sql<{ n: number }[]>`
    select count(*)::int as n from pg_locks l join pg_stat_activity a on a.pid = l.pid
     where not l.granted and a.application_name = 'devai-memory-tests'`;
  return r!.n;
}

/** `p`, or a failure naming `what` when it has not settled within `ms`: a fault that makes a call wait forever fails the test, never hangs it. */
export async function within<T>(p: Promise<T>, what: string, ms = 10_000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}
