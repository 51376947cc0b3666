// The SDK's extractionSession and the Claude Code hooks cut a transcript into memory-extract parts
// each by their own code: the hooks run as plain Node with nothing installed, so they cannot import
// the SDK (integrations/claude-code/README.md). The two must cut alike (the same part size, halved
// alike on a 413, each part `after` the last), or a transcript one of them sends whole is refused
// from the other. Here both send the same messages to a server with a small body limit, and the
// parts queued for each tenant are compared.
import assert from "node:assert/strict";
import { createMemoryClient } from "../sdk/mod.ts";
import type { ChatMessage } from "../sdk/mod.ts";
import { EXTRACT_PART_BYTES as SDK_PART_BYTES } from "../sdk/src/client.ts";
import {
  asChat,
  EXTRACT_PART_BYTES as HOOKS_PART_BYTES,
  sendTranscript,
  settings,
  transcriptMessages,
} from "../integrations/claude-code/hooks/lib.mjs";
import { userToken } from "./support/auth.ts";
import { startTestServer } from "./support/http_server.ts";
import { newTenant, testSql } from "./support/seed.ts";
import { fileWritingSession } from "./support/extract.ts";

Deno.test("extract parts: the SDK and the Claude Code hooks cut one transcript into the same parts", async () => {
  assert.equal(HOOKS_PART_BYTES, SDK_PART_BYTES, "one part size");
  // A 48 KiB limit stands for the default 8 MiB: both start at 4 MiB and halve on each 413.
  const server = await startTestServer({ worker: false, env: { MAX_EXTRACT_BODY_BYTES: String(48 * 1024) } });
  const sql = testSql(2);
  const dir = await Deno.makeTempDir();
  try {
    // Files of many sizes, some not ASCII (parts are cut by bytes of JSON, not characters).
    const lines = fileWritingSession(16, (i) => `write table ${i} (ünïcödé ${"é".repeat(i * 97)})`, (i) => ({
      file_path: `src/gen/t${i}.ts`,
      content: `export const r${i} = "✓ 🚀";\n`.repeat(150 + (i * 37) % 400),
    }));
    const jsonl = lines.join("\n") + "\n";
    const session = { session_id: "in-step", project: "gen" };

    const viaHooks = newTenant();
    await Deno.writeTextFile(`${dir}/in-step.jsonl`, jsonl);
    const s = settings({
      DEVAI_MEMORY_URL: server.url,
      DEVAI_AGENT_TOKEN: await userToken(viaHooks),
      DEVAI_MEMORY_STATE_DIR: `${dir}/state`,
      DEVAI_MEMORY_SEND: "extract",
      DEVAI_PROJECT: session.project,
    });
    const hooks = await sendTranscript(s, { ...session, transcript_path: `${dir}/in-step.jsonl`, cwd: dir }, {});

    const viaSdk = newTenant();
    const memory = createMemoryClient({ supabaseUrl: server.url, accessToken: await userToken(viaSdk) });
    const chat = asChat(transcriptMessages(jsonl)) as ChatMessage[];
    const sdk = await memory.extractionSession(session).send(chat);

    assert.equal((hooks.extract as { new_messages: number } | null)?.new_messages, chat.length);
    assert.equal(sdk?.new_messages, chat.length);
    const parts = async (tenant: string) =>
      (await sql<{ offset: number; n: number }[]>`
        select (payload ->> 'offset')::int as offset, jsonb_array_length(payload -> 'messages') as n
          from public.memory_jobs where owner_id = ${tenant} and kind = 'extract'
         order by (payload ->> 'offset')::int`).map((p) => `${p.offset}+${p.n}`);
    const cut = await parts(viaSdk);
    assert.ok(cut.length > 2, `several parts: ${cut}`);
    assert.deepEqual(await parts(viaHooks), cut);
  } finally {
    await server.close();
    await sql.end();
    await Deno.remove(dir, { recursive: true });
  }
});
