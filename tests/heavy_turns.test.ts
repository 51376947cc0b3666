// Heavy requests take turns (_shared/heavy-turns.ts): a tenant's memory-extract and memory-compact
// bodies are read and passed over one at a time in the process, so a tenant's burst of them cannot
// fill the event loop every other tenant's requests share; another tenant's are read meanwhile; a
// request that waited too long for its turn is a 503 heavy_busy with nothing written.
import assert from "node:assert/strict";
import { heavyTurns } from "../supabase/functions/_shared/heavy-turns.ts";
import { userHeaders } from "./support/auth.ts";
import { functionJson, type RunningServer, startTestServer } from "./support/http_server.ts";
import { newTenant, testSql } from "./support/seed.ts";
import { waitUntil } from "./support/wait.ts";

const message = (content: string) => ({ role: "user", content });

/** Sends the rest of every held body (a test that failed midway must not leave its server waiting for one). */
const unfinished = new Set<() => void>();
function finishAll() {
  for (const finish of unfinished) finish();
  unfinished.clear();
}

/** A compaction whose body the test holds open (its first message sent) until `finish` sends the rest. */
async function heldCompaction(server: RunningServer, tenant: string) {
  const encoder = new TextEncoder();
  let finish!: () => void;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(`{"session_id":"held","messages":[${JSON.stringify(message("first"))}`));
      finish = () => {
        if (!unfinished.delete(finish)) return;
        controller.enqueue(encoder.encode(`,${JSON.stringify(message("second"))}]}`));
        controller.close();
      };
    },
  });
  unfinished.add(finish);
  const response = fetch(`${server.functionsUrl}/memory-compact`, {
    method: "POST",
    headers: await userHeaders(tenant),
    body,
  });
  await waitUntil(() => Promise.resolve(heavyTurns.load(tenant).active === 1), "the held compaction takes its turn");
  return { response, finish };
}

Deno.test("heavy turns: a tenant's extract waits while its compaction's body is read; another tenant's are served meanwhile", async () => {
  const server = await startTestServer({ worker: false });
  const [a, b] = [newTenant(), newTenant()];
  try {
    const held = await heldCompaction(server, a);
    const extractA = functionJson(server, "memory-extract", await userHeaders(a), {
      session_id: "a-extract",
      messages: [message("remember that we deploy on fridays")],
    });
    await waitUntil(() => Promise.resolve(heavyTurns.load(a).waiting === 1), "a's extract waits for a's turn");

    const compactB = await functionJson(server, "memory-compact", await userHeaders(b), {
      session_id: "b-compact",
      messages: [message("hello"), message("what next?")],
    });
    assert.equal(compactB.status, 200, JSON.stringify(compactB.body));
    const extractB = await functionJson(server, "memory-extract", await userHeaders(b), {
      session_id: "b-extract",
      messages: [message("remember that billing runs on postgres")],
    });
    assert.equal(extractB.status, 202, JSON.stringify(extractB.body));
    assert.deepEqual(heavyTurns.load(a), { active: 1, waiting: 1 }, "a's extract still waits, its body unread");

    held.finish();
    const compacted = await held.response;
    assert.equal(compacted.status, 200);
    assert.equal((await compacted.json()).compacted, false);
    assert.equal((await extractA).status, 202);
    for (const t of [a, b]) assert.deepEqual(heavyTurns.load(t), { active: 0, waiting: 0 });
  } finally {
    finishAll();
    await server.close();
  }
});

Deno.test("heavy turns: a request that waits four statement timeouts for its turn is a 503 heavy_busy and writes nothing", async () => {
  const server = await startTestServer({ worker: false, env: { DB_POOL_MAX: "4", DB_STATEMENT_TIMEOUT_MS: "250" } });
  const sql = testSql(1);
  const a = newTenant();
  try {
    const held = await heldCompaction(server, a);
    const res = await fetch(`${server.functionsUrl}/memory-extract`, {
      method: "POST",
      headers: await userHeaders(a),
      body: JSON.stringify({ session_id: "a-waits", messages: [message("remember that we deploy on fridays")] }),
    });
    const answer = await res.json();
    assert.equal(res.status, 503);
    assert.equal(answer.error.code, "heavy_busy");
    assert.equal(res.headers.get("retry-after"), "2");
    const [jobs] = await sql<{ n: number }[]>`select count(*)::int as n from public.memory_jobs where owner_id = ${a}`;
    assert.equal(jobs!.n, 0, "nothing queued");
    held.finish();
    const compacted = await held.response;
    assert.equal(compacted.status, 200);
    await compacted.body?.cancel();
  } finally {
    finishAll();
    await sql.end();
    await server.close();
  }
});
