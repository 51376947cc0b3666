// Heavy requests take turns (_shared/heavy-turns.ts): once received, a tenant's memory-extract and
// memory-compact bodies are parsed and passed over one at a time in the process, so a tenant's
// burst of them cannot fill the event loop every other tenant's requests share; another tenant's
// are served meanwhile; a client still sending its body holds no turn; a request that waited too
// long for its turn is a 503 heavy_busy with nothing written.
import assert from "node:assert/strict";
import { heavyTurns } from "../supabase/functions/_shared/heavy-turns.ts";
import { userHeaders } from "./support/auth.ts";
import { functionJson, startTestServer } from "./support/http_server.ts";
import { newTenant, testSql } from "./support/seed.ts";
import { waitUntil } from "./support/wait.ts";
import { heldTurn } from "./support/heavy-turns.ts";

const message = (content: string) => ({ role: "user", content });

Deno.test("heavy turns: a tenant's extract waits while another of its passes runs; another tenant's are served meanwhile", async () => {
  const server = await startTestServer({ worker: false });
  const [a, b] = [newTenant(), newTenant()];
  const held = await heldTurn(a);
  try {
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
    assert.deepEqual(heavyTurns.load(a), { active: 1, waiting: 1 }, "a's extract still waits");

    await held.release();
    assert.equal((await extractA).status, 202);
    for (const t of [a, b]) assert.deepEqual(heavyTurns.load(t), { active: 0, waiting: 0 });
  } finally {
    await held.release();
    await server.close();
  }
});

Deno.test("heavy turns: a client still sending its body holds no turn: the tenant's next heavy request is answered meanwhile", async () => {
  const server = await startTestServer({ worker: false });
  const a = newTenant();
  const encoder = new TextEncoder();
  let finish!: () => void;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(`{"session_id":"slow","messages":[${JSON.stringify(message("first"))}`));
      let sent = false;
      finish = () => {
        if (sent) return;
        sent = true;
        controller.enqueue(encoder.encode(`,${JSON.stringify(message("second"))}]}`));
        controller.close();
      };
    },
  });
  const sql = testSql(1);
  try {
    const slow = fetch(`${server.functionsUrl}/memory-compact`, {
      method: "POST",
      headers: await userHeaders(a),
      body,
    });
    // The compaction is in its handler (its rate-limit token is taken before its body is read):
    // from here a turn taken before the body is received would hold the extract below.
    await waitUntil(async () => {
      const [row] = await sql<{ n: number }[]>`
        select count(*)::int as n from memory_private.rate_limit_buckets where owner_id = ${a} and route_class = 'heavy'`;
      return row!.n === 1;
    }, "the slow compaction reached its handler");
    const extract = await functionJson(server, "memory-extract", await userHeaders(a), {
      session_id: "a-extract",
      messages: [message("remember that we deploy on fridays")],
    });
    assert.equal(extract.status, 202, JSON.stringify(extract.body));
    assert.deepEqual(heavyTurns.load(a), { active: 0, waiting: 0 }, "the slow upload takes no turn");
    finish();
    const compacted = await slow;
    assert.equal(compacted.status, 200);
    assert.equal((await compacted.json()).compacted, false);
  } finally {
    finish();
    await sql.end();
    await server.close();
  }
});

Deno.test("heavy turns: a request that waits four statement timeouts for its turn is a 503 heavy_busy and writes nothing", async () => {
  const server = await startTestServer({ worker: false, env: { DB_POOL_MAX: "4", DB_STATEMENT_TIMEOUT_MS: "250" } });
  const sql = testSql(1);
  const a = newTenant();
  const held = await heldTurn(a);
  try {
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
  } finally {
    await held.release();
    await sql.end();
    await server.close();
  }
});
