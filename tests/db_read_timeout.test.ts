// The client's bound on a one-statement read (_shared/db-read-timeout.ts), on a stand-in query: past
// the timeout a cancel request goes out, again each RECANCEL_MS while the read runs (one may land
// where Postgres ignores it), none once the read has ended, and a cancel request that fails is no
// unhandled rejection (one would end the process). A real server's cancel: database_errors.test.ts
// and transaction_pooler.test.ts.
import assert from "node:assert/strict";
import { cancelledAfter } from "../supabase/functions/_shared/db-read-timeout.ts";
import { waitUntil } from "./support/wait.ts";

Deno.test("read timeout: a read still running is cancelled again; a failing cancel request is no unhandled rejection", async () => {
  let requests = 0;
  let answer!: (rows: object[]) => void;
  const running = new Promise<object[]>((resolve) => (answer = resolve));
  // What cancelledAfter uses of a postgres.js query: awaited, and its pool's canceller.
  const query = Object.assign(running, {
    canceller: () => {
      requests++;
      return Promise.reject(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }));
    },
  });
  const read = cancelledAfter(query as never, 10);
  await waitUntil(() => Promise.resolve(requests >= 2), "a second cancel request while the read runs", {
    pollMs: 20,
  });
  answer([{ done: true }]);
  assert.deepEqual(await read, [{ done: true }], "the read's own answer, once it comes");
});
