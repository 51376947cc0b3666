// Waiting for something to happen (a row to change, a lease to expire) without guessing how long
// it takes: the condition is checked again every pollMs until it holds, or the deadline fails the
// test. Assertions follow the event, never a fixed delay.
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
