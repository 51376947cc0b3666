// The local server's close() is bounded a step at a time (scripts/serve/shutdown.ts): a step that
// waits on something nothing settles is named in close()'s error, with what it still waited for,
// instead of a test that never ends (Deno: "Promise resolution is still pending but the event loop
// has already resolved"), and the steps after it still run.
import assert from "node:assert/strict";
import { CloseIncompleteError, closeInSteps } from "../scripts/serve/shutdown.ts";
import { startTestServer } from "./support/http_server.ts";
import { within } from "./support/wait.ts";

Deno.test("close: a step that never finishes is named with what it waited for; one that fails is named too; the rest run", async () => {
  const ran: string[] = [];
  const failure = await closeInSteps([
    { name: "never", run: () => new Promise(() => {}), pending: () => "3 things unsettled" },
    {
      name: "fails",
      run: () => {
        ran.push("fails");
        return Promise.reject(new Error("boom"));
      },
    },
    { name: "last", run: () => Promise.resolve(void ran.push("last")) },
  ], 20).then(() => undefined, (e) => e);
  assert.ok(failure instanceof CloseIncompleteError, String(failure));
  assert.deepEqual(failure.unfinished, [
    "never did not finish within 20 ms (3 things unsettled)",
    "fails failed: Error: boom",
  ]);
  assert.deepEqual(ran, ["fails", "last"]);
});

Deno.test("close: work handed to EdgeRuntime.waitUntil that never settles fails the server's close(), naming the step and where the work came from", async () => {
  const server = await startTestServer({ worker: false, closeStepMs: 200 });
  const stuck = Promise.withResolvers<void>();
  (globalThis as unknown as { EdgeRuntime: { waitUntil(p: Promise<unknown>): void } }).EdgeRuntime.waitUntil(
    stuck.promise,
  );
  try {
    const failure = await within(server.close().then(() => undefined, (e) => e), "the server's close()");
    assert.ok(failure instanceof CloseIncompleteError, `close() failed naming its step: ${failure}`);
    // The first step named (the pool's end, after it, may be named too on a busy machine).
    assert.match(
      failure.unfinished[0]!,
      /^background work did not finish within 200 ms \(1 promise\(s\) handed to EdgeRuntime\.waitUntil unsettled, from file:.*http_server_close\.test\.ts/,
    );
  } finally {
    stuck.resolve(); // later servers of this process wait for the same background work
  }
});
