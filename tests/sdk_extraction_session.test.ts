// The SDK's extractionSession against the real server: a transcript past memory-extract's body
// limit (a session adopted late, or sent whole again after transcript_mismatch) goes in parts,
// each `after` the last, instead of a 413 on every send.
import assert from "node:assert/strict";
import { createMemoryClient } from "../sdk/mod.ts";
import type { ChatMessage } from "../sdk/mod.ts";
import { userToken } from "./support/auth.ts";
import { startTestServer } from "./support/http_server.ts";
import { newTenant, testSql } from "./support/seed.ts";
import { extractPartsInOrder } from "./support/extract.ts";

Deno.test("sdk extractionSession: a transcript past the body limit goes in parts, each after the last", async () => {
  // A 64 KiB limit stands for the default 8 MiB.
  const server = await startTestServer({ worker: false, env: { MAX_EXTRACT_BODY_BYTES: String(64 * 1024) } });
  const sql = testSql(2);
  try {
    const tenant = newTenant();
    const memory = createMemoryClient({ supabaseUrl: server.url, accessToken: await userToken(tenant) });
    const transcript: ChatMessage[] = Array.from({ length: 40 }, (_, i) => ({
      role: i % 2 ? "assistant" : "user",
      content: `${i % 2 ? "Here is the build log" : "Why does the build fail?"} ${"line of output ".repeat(400)}#${i}`,
    }));
    const session = memory.extractionSession({ session_id: "long-adopted", project: "parts" });
    const answer = await session.send(transcript);
    assert.equal(answer?.new_messages, 40);
    assert.deepEqual(session.transcript?.count, 40);
    // Every message queued once, in order: each part follows the last.
    const queued = await extractPartsInOrder(sql, tenant);
    assert.ok(queued.parts > 1, "more than one part");
    assert.equal(queued.messages, 40);
    // Growing on: only what follows is sent.
    transcript.push({ role: "user", content: "Thanks, that fixed it." });
    assert.equal((await session.send(transcript))?.new_messages, 1);
  } finally {
    await server.close();
    await sql.end();
  }
});
