// The Retry-After of a drained token bucket (rate-limit.ts, public.take_rate_limit_token), for tests
// that drain one and assert what the refused request is told.
import assert from "node:assert/strict";

/**
 * Asserts `retryAfter` (whole seconds) is the wait for the next token: a token every
 * `secondsPerToken`, less what the bucket refilled (by the database's clock) since `started`
 * (performance.now() before the requests that drained it). Exactly secondsPerToken when they took
 * under a second; on a loaded machine they take longer and the wait is that much shorter (the
 * stop 47 CI's '59' where 60 was asserted).
 */
export function assertWaitForNextToken(retryAfter: number, secondsPerToken: number, started: number): void {
  const took = (performance.now() - started) / 1000;
  assert.ok(
    Number.isInteger(retryAfter) && retryAfter <= secondsPerToken && retryAfter >= Math.ceil(secondsPerToken - took),
    `retry after ${retryAfter} s, ${took.toFixed(2)} s after the first request: a token every ${secondsPerToken} s`,
  );
}
