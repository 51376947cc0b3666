// The Claude Code integration (integrations/claude-code/hooks/), run by `node` as Claude Code runs
// hooks (the hook's JSON on stdin), against the real local server, on a realistic transcript
// (tests/fixtures/claude-code/session.jsonl: prompts, thinking, tool_use and tool_result lines with
// terminal colours, a sub-agent's sidechain, a meta line, a compaction boundary and the summary
// that opens the compacted session). PreCompact sends what the session said so far; SessionEnd only
// what came after, then ends the session; the memories the rules find are stored, the model's
// summary is not taken for the user's words; UserPromptSubmit adds them to the next prompt.
import assert from "node:assert/strict";
import { TEST_SECRET_KEY } from "./support/config.ts";
import { userToken } from "./support/auth.ts";
import { functionJson as api, startTestServer } from "./support/http_server.ts";
import { cleanEnv } from "./support/process.ts";
import {
  asChat,
  asEpisodes,
  EPISODE_BATCH_BYTES,
  episodeBatches,
  EPISODES_PER_BATCH,
  projectOf,
  storable,
  transcriptMessages,
} from "../integrations/claude-code/hooks/lib.mjs";
import { projectName } from "../supabase/functions/_shared/schemas.ts";
import { firstUnsafeCharacter } from "../supabase/functions/_shared/unsafe-characters.ts";
import { ExtractRequestSchema } from "../supabase/functions/memory-extract/handler.ts";
import { EpisodeBatchRequest } from "../supabase/functions/_shared/episodes.ts";
import { newTenant, testSql } from "./support/seed.ts";
import { extractPartsInOrder, fileWritingSession } from "./support/extract.ts";

const HOOKS = new URL("../integrations/claude-code/hooks/", import.meta.url);
const FIXTURE = new URL("./fixtures/claude-code/session.jsonl", import.meta.url);
const SESSION = "7d3f6c2a-1b4e-4c8f-9a51-2e6d0b9f4c17";

interface HookRun {
  code: number;
  stdout: string;
  /** The hook's report line (stderr): what it did. */
  report: Record<string, unknown>;
}

function spawnHook(hook: string, input: Record<string, unknown>, env: Record<string, string>): Deno.ChildProcess {
  const child = new Deno.Command("node", {
    args: [new URL(hook, HOOKS).pathname],
    env: cleanEnv(env),
    clearEnv: true,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  writer.write(new TextEncoder().encode(JSON.stringify(input))).then(() => writer.close());
  return child;
}

async function runHook(hook: string, input: Record<string, unknown>, env: Record<string, string>): Promise<HookRun> {
  const out = await spawnHook(hook, input, env).output();
  const stderr = new TextDecoder().decode(out.stderr);
  const line = stderr.split("\n").find((l) => l.startsWith("devai-memory "));
  assert.ok(line, `the hook reports what it did: ${stderr}`);
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    report: JSON.parse(line.slice("devai-memory ".length)),
  };
}

/** A new agent token of the tenant, as a user issues one for Claude Code. */
async function agentToken(server: Awaited<ReturnType<typeof startTestServer>>, tenant: string): Promise<string> {
  const issued = await api(server, "memory/agent-tokens", { authorization: `Bearer ${await userToken(tenant)}` }, {
    agent: "coder",
  });
  assert.equal(issued.status, 201, JSON.stringify(issued.body));
  return issued.body.token;
}

/** PreCompact on a transcript of these JSONL lines, sending `send` to `project`. */
async function preCompactOn(
  lines: string[],
  o: { dir: string; session: string; url: string; token: string; send: string; project: string },
): Promise<HookRun> {
  const transcript = `${o.dir}/${o.session}.jsonl`;
  await Deno.writeTextFile(transcript, lines.join("\n") + "\n");
  const input = { session_id: o.session, transcript_path: transcript, cwd: o.dir, hook_event_name: "PreCompact" };
  return await runHook("pre-compact.mjs", { ...input, trigger: "auto" }, {
    DEVAI_MEMORY_URL: o.url,
    DEVAI_AGENT_TOKEN: o.token,
    DEVAI_MEMORY_STATE_DIR: `${o.dir}/state`,
    DEVAI_MEMORY_SEND: o.send,
    DEVAI_PROJECT: o.project,
  });
}

Deno.test("claude code hooks: transcripts go in incrementally, their memories come back with the next prompt", async () => {
  const server = await startTestServer({
    worker: false,
    env: { DB_POOL_MAX: "4", SUPABASE_SECRET_KEYS: JSON.stringify({ default: TEST_SECRET_KEY }) },
  });
  const sql = testSql(2);
  const dir = await Deno.makeTempDir();
  try {
    const tenant = newTenant();
    const session = { authorization: `Bearer ${await userToken(tenant)}` };
    const issued = await api(server, "memory/agent-tokens", session, { agent: "coder", label: "Claude Code" });
    assert.equal(issued.status, 201, JSON.stringify(issued.body));
    // The session runs in a subfolder of the shopfront repository: the project is the repository's name.
    const repo = `${dir}/shopfront`;
    await Deno.mkdir(`${repo}/.git`, { recursive: true });
    await Deno.mkdir(`${repo}/src/cart`, { recursive: true });
    const env = {
      DEVAI_MEMORY_URL: server.url,
      DEVAI_AGENT_TOKEN: issued.body.token,
      DEVAI_MEMORY_STATE_DIR: `${dir}/state`,
    };
    // The worker endpoint drains at most 25 jobs of any tenant: other test files' jobs left in the
    // shared database may come first, so it is called until none of this tenant's runnable jobs is left.
    const drain = async () => {
      for (let call = 0; call < 40; call++) {
        assert.equal((await api(server, "memory-worker", { apikey: TEST_SECRET_KEY }, {})).status, 200);
        const [left] = await sql`select count(*)::int as n from public.memory_jobs where owner_id = ${tenant}
                                    and (status = 'running' or (status = 'queued' and run_after <= now()))`;
        if (left!.n === 0) return;
      }
      assert.fail("this tenant's jobs were not drained in 40 calls of memory-worker");
    };

    const lines = (await Deno.readTextFile(FIXTURE)).split("\n").filter(Boolean);
    const compactedAt = lines.findIndex((l) => l.includes('"compact_boundary"'));
    const transcript = `${dir}/${SESSION}.jsonl`;
    await Deno.writeTextFile(transcript, lines.slice(0, compactedAt).join("\n") + "\n");
    const hookInput = { session_id: SESSION, transcript_path: transcript, cwd: `${repo}/src/cart` };

    // PreCompact: the 14 messages of the conversation so far (thinking, sidechain and meta lines left out).
    const pre = await runHook("pre-compact.mjs", {
      ...hookInput,
      hook_event_name: "PreCompact",
      trigger: "auto",
      custom_instructions: "",
    }, env);
    assert.equal(pre.code, 0);
    assert.deepEqual(pre.report, {
      hook: "PreCompact",
      messages: 14,
      project: "shopfront",
      episodes: 14,
      extract: { new_messages: 14, job_id: (pre.report.extract as { job_id: string }).job_id },
    });
    await drain();
    const afterPre = await api(server, "memory?project=shopfront&source=user_stated", session);
    const stated = afterPre.body.memories.map((m: { content: string }) => m.content);
    assert.ok(stated.some((c: string) => /pnpm, not npm/.test(c)), JSON.stringify(stated));

    // Claude Code compacts and the session goes on; SessionEnd sends the 6 messages after the
    // compaction (not the summary that opens it) and ends the session.
    await Deno.writeTextFile(transcript, lines.slice(compactedAt).join("\n") + "\n", { append: true });
    const end = await runHook("session-end.mjs", {
      ...hookInput,
      hook_event_name: "SessionEnd",
      reason: "prompt_input_exit",
    }, env);
    assert.equal(end.code, 0);
    assert.equal(end.report.messages, 20, JSON.stringify(end.report));
    assert.equal(end.report.episodes, 6);
    assert.equal((end.report.extract as { new_messages: number }).new_messages, 6);
    assert.ok(end.report.consolidation_job, "the session's consolidation is queued");
    await drain();

    // Each message is one episode, none twice; the second extract job starts where the first ended.
    const [episodes] = await sql`select count(*)::int as n from public.devai_memories
                                   where owner_id = ${tenant} and source = 'conversation' and session_id = ${SESSION}`;
    assert.equal(episodes!.n, 20);
    const jobs =
      await sql`select (payload ->> 'offset')::int as offset, jsonb_array_length(payload -> 'messages') as n, status
                             from public.memory_jobs where owner_id = ${tenant} and kind = 'extract' order by created_at`;
    assert.deepEqual(jobs.map((j) => [j.offset, j.n, j.status]), [[0, 14, "done"], [14, 6, "done"]]);
    const [ended] =
      await sql`select ended_at from public.memory_sessions where owner_id = ${tenant} and session_id = ${SESSION}`;
    assert.ok(ended?.ended_at, "the session is ended");
    assert.equal((await Array.fromAsync(Deno.readDir(`${dir}/state`))).length, 0, "the ended session's state is gone");

    const memories = (await api(server, "memory?project=shopfront&limit=100", session)).body.memories.map((
      m: { content: string },
    ) => m.content);
    assert.ok(
      memories.some((c: string) => c.includes("deploy/staging")),
      `the correction is remembered: ${JSON.stringify(memories)}`,
    );
    assert.ok(
      !memories.some((c: string) => /Mondays/.test(c)),
      "the compaction summary is the model's words, never a user-stated memory",
    );

    // The next session's first prompt gets the block: the package manager the user named.
    const prompt = await runHook("user-prompt-submit.mjs", {
      session_id: "0c9e8d7f-6a5b-4c3d-8e2f-1a0b9c8d7e6f",
      transcript_path: `${dir}/next.jsonl`,
      cwd: repo,
      hook_event_name: "UserPromptSubmit",
      prompt: "Do we use npm or pnpm in this repo?",
    }, env);
    assert.equal(prompt.code, 0);
    assert.ok(prompt.stdout, `the hook adds context: ${JSON.stringify(prompt.report)}`);
    const output = JSON.parse(prompt.stdout);
    assert.equal(output.hookSpecificOutput.hookEventName, "UserPromptSubmit");
    assert.match(output.hookSpecificOutput.additionalContext, /^## Relevant Memories/);
    assert.match(output.hookSpecificOutput.additionalContext, /pnpm/);
  } finally {
    await server.close();
    await sql.end();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("claude code hooks: text is cut between characters, never inside a surrogate pair", () => {
  const cut = storable(`${"x".repeat(3998)}😀 and more`);
  assert.equal(cut, `${"x".repeat(3998)}…`);
  assert.equal(storable(`${"x".repeat(3997)}😀 and more`), `${"x".repeat(3997)}😀…`);
  assert.equal(storable("short 😀"), "short 😀");
});

Deno.test("claude code hooks: text is cleaned of exactly the characters the API refuses (its one rule)", () => {
  // The hooks install nothing, so they keep their own copy of unsafe-characters.ts's rule: one
  // character it misses makes the API refuse the batch holding it on every run (400).
  const differ: string[] = [];
  for (let cp = 0; cp <= 0x10ffff; cp++) {
    const text = `a${String.fromCodePoint(cp)}b`;
    if ((firstUnsafeCharacter(text) !== undefined) !== (storable(text) !== text)) differ.push(cp.toString(16));
  }
  assert.deepEqual(differ, [], "code points the hooks and the API read differently");
});

Deno.test("claude code hooks: episode batches are capped in bytes as well as in messages", () => {
  const wide = Array.from({ length: 60 }, (_, i) => ({ role: "tool", content: `${i} ${"漢".repeat(3990)}` }));
  const batches = episodeBatches(wide);
  assert.deepEqual(batches.flat(), wide, "every episode, in order");
  for (const b of batches) {
    assert.ok(
      b.length <= EPISODES_PER_BATCH && new TextEncoder().encode(JSON.stringify(b)).length <= EPISODE_BATCH_BYTES,
    );
  }
  const small = Array.from({ length: 120 }, (_, i) => ({ role: "user", content: `message ${i}` }));
  assert.deepEqual(episodeBatches(small).map((b) => b.length), [50, 50, 20]);
});

Deno.test("claude code hooks: a session of long, wide tool output is stored whole (no batch refused for its size or a cut character)", async () => {
  const server = await startTestServer({ worker: false });
  const sql = testSql(2);
  const dir = await Deno.makeTempDir();
  try {
    const tenant = newTenant();
    const token = await agentToken(server, tenant);
    // 60 tool results of 4,000 characters of CJK (12 KB each: 50 of them are past the 256 KiB body
    // limit), one of them cut where an emoji's surrogate pair straddles the 4,000th character.
    const results = Array.from(
      { length: 60 },
      (_, i) => i === 30 ? `${"x".repeat(3998)}😀 tail` : `${i} ${"漢".repeat(4100)}`,
    );
    const lines = results.map((text, i) =>
      JSON.stringify({
        type: "user",
        message: { role: "user", content: [{ type: "tool_result", tool_use_id: `toolu_${i}`, content: text }] },
      })
    );
    const run = await preCompactOn(lines, {
      dir,
      session: "wide-output",
      url: server.url,
      token,
      send: "episodes",
      project: "wide",
    });
    assert.equal(run.code, 0);
    assert.equal(run.report.error, undefined, JSON.stringify(run.report));
    assert.equal(run.report.episodes, 60);
    const [stored] = await sql<{ n: number }[]>`
      select count(*)::int as n from public.devai_memories where owner_id = ${tenant} and session_id = 'wide-output'`;
    assert.equal(stored!.n, 60);
  } finally {
    await server.close();
    await sql.end();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("claude code hooks: an unreachable or refusing memory never blocks the prompt", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const input = {
      session_id: SESSION,
      transcript_path: `${dir}/t.jsonl`,
      cwd: dir,
      hook_event_name: "UserPromptSubmit",
      prompt: "hello",
    };
    // Port 9 (discard): nothing listens there on a test machine.
    const down = await runHook("user-prompt-submit.mjs", input, {
      DEVAI_MEMORY_URL: "http://127.0.0.1:9",
      DEVAI_AGENT_TOKEN: "dvm_x",
      DEVAI_MEMORY_STATE_DIR: dir,
    });
    assert.equal(down.code, 0);
    assert.equal(down.stdout, "");
    assert.ok(down.report.error);
    const server = await startTestServer({ worker: false });
    try {
      const refused = await runHook("user-prompt-submit.mjs", input, {
        DEVAI_MEMORY_URL: server.url,
        DEVAI_AGENT_TOKEN: "dvm_unknown",
        DEVAI_MEMORY_STATE_DIR: dir,
      });
      assert.equal(refused.code, 0);
      assert.equal(refused.stdout, "");
      assert.match(String(refused.report.error), /401 invalid_token/);
    } finally {
      await server.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * A memory API that answers the first `memory/episodes` batch and holds every later one until the
 * test ends: `held` resolves when a batch is being held (the hook is waiting on it).
 */
function serverHoldingSecondBatch() {
  let batches = 0;
  let heldArrived!: () => void;
  const held = new Promise<void>((resolve) => heldArrived = resolve);
  const release = new AbortController();
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (req) => {
    await req.text();
    if (new URL(req.url).pathname.endsWith("/memory/episodes") && ++batches > 1) {
      heldArrived();
      await new Promise((resolve) => release.signal.addEventListener("abort", resolve));
    }
    return Response.json({ stored: 50 });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    held,
    async close() {
      release.abort();
      await server.shutdown();
    },
  };
}

/** A transcript of `n` user messages. */
async function longTranscript(dir: string, n: number): Promise<string> {
  const path = `${dir}/long.jsonl`;
  const lines = Array.from(
    { length: n },
    (_, i) =>
      JSON.stringify({
        type: "user",
        timestamp: "2026-11-28T10:00:00Z",
        message: { role: "user", content: `step ${i}` },
      }),
  );
  await Deno.writeTextFile(path, lines.join("\n") + "\n");
  return path;
}

Deno.test("claude code hooks: a transcript hook killed mid-run (Claude Code's timeout) resumes after the batches acknowledged", async () => {
  const server = serverHoldingSecondBatch();
  const dir = await Deno.makeTempDir();
  try {
    const input = { session_id: "killed-run", transcript_path: await longTranscript(dir, 120), cwd: dir };
    const child = spawnHook("pre-compact.mjs", { ...input, hook_event_name: "PreCompact", trigger: "auto" }, {
      DEVAI_MEMORY_URL: server.url,
      DEVAI_AGENT_TOKEN: "dvm_x",
      DEVAI_MEMORY_STATE_DIR: `${dir}/state`,
      DEVAI_PROJECT: "long",
    });
    await server.held; // the first 50 messages are acknowledged, the hook waits on the next 50
    child.kill("SIGTERM");
    await child.output();
    const state = JSON.parse(await Deno.readTextFile(`${dir}/state/killed-run.json`));
    assert.equal(state.episodes, 50, "the next run starts after the acknowledged batch");
  } finally {
    await server.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("claude code hooks: a slow memory holds a transcript hook no longer than DEVAI_MEMORY_BUDGET_MS", async () => {
  const server = serverHoldingSecondBatch();
  const dir = await Deno.makeTempDir();
  try {
    const input = { session_id: "slow-run", transcript_path: await longTranscript(dir, 120), cwd: dir };
    // Each call may wait a minute: the run's budget, not the call's timeout, ends the wait.
    const run = await runHook("session-end.mjs", { ...input, hook_event_name: "SessionEnd", reason: "exit" }, {
      DEVAI_MEMORY_URL: server.url,
      DEVAI_AGENT_TOKEN: "dvm_x",
      DEVAI_MEMORY_STATE_DIR: `${dir}/state`,
      DEVAI_PROJECT: "long",
      DEVAI_MEMORY_TIMEOUT_MS: "60000",
      DEVAI_MEMORY_BUDGET_MS: "3000",
    });
    assert.equal(run.code, 0);
    assert.match(String(run.report.error), /out of time: .*DEVAI_MEMORY_BUDGET_MS/);
    const state = JSON.parse(await Deno.readTextFile(`${dir}/state/slow-run.json`));
    assert.equal(state.episodes, 50);
  } finally {
    await server.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("claude code hooks: an answer that is not the API's JSON is reported as sent, and adds no context", async () => {
  const answers: Record<string, () => Response> = {
    proxy: () => new Response("<html><body>502 Bad Gateway</body></html>", { status: 502 }),
    cut: () => new Response('{"block": "## Relevant', { status: 200, headers: { "content-type": "application/json" } }),
  };
  let answer = answers.proxy!;
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, () => answer());
  const dir = await Deno.makeTempDir();
  try {
    const env = {
      DEVAI_MEMORY_URL: `http://127.0.0.1:${server.addr.port}`,
      DEVAI_AGENT_TOKEN: "dvm_x",
      DEVAI_MEMORY_STATE_DIR: dir,
    };
    const input = { session_id: "s", transcript_path: `${dir}/t.jsonl`, cwd: dir, prompt: "hello" };
    const proxied = await runHook("user-prompt-submit.mjs", input, env);
    assert.equal(proxied.stdout, "");
    assert.equal(proxied.report.error, "502: <html><body>502 Bad Gateway</body></html>");
    answer = answers.cut!;
    const cut = await runHook("user-prompt-submit.mjs", input, env);
    assert.equal(cut.stdout, "");
    assert.match(String(cut.report.error), /^memory-retrieve answered 200 with a body that is not a JSON object/);
  } finally {
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("claude code hooks: a repository folder's name of any length is a project the API takes", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // Folder names may be 255 bytes; the API's project names are at most 140 characters.
    for (
      const name of ["a".repeat(200), `${"b".repeat(139)}😀${"c".repeat(50)}`, `${"d".repeat(139)}.-${"e".repeat(9)}`]
    ) {
      await Deno.mkdir(`${dir}/${name}/.git`, { recursive: true });
      await Deno.mkdir(`${dir}/${name}/src`);
      const project = projectOf({}, `${dir}/${name}/src`);
      const parsed = projectName.safeParse(project);
      assert.ok(parsed.success, `${project}: ${JSON.stringify(parsed.error?.issues)}`);
      assert.ok(name.startsWith(project), "the folder's name, cut");
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("claude code hooks: a folder named in NFD (as macOS hands it over) is the project in NFC", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/${"caf\u00e9".normalize("NFD")}/.git`, { recursive: true });
    assert.equal(projectOf({}, `${dir}/${"caf\u00e9".normalize("NFD")}`), "caf\u00e9");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("claude code hooks: lines unlike Claude Code's (no tool id, a long one, no instant) go in a form the API takes", () => {
  const line = (type: string, content: unknown, extra: Record<string, unknown> = {}) =>
    JSON.stringify({ type, message: { role: type, content }, ...extra });
  const jsonl = [
    line("user", "remember we deploy with fly", { timestamp: "2026-11-28T10:00:00.123Z" }),
    line("assistant", [{ type: "tool_use", name: "Bash", input: { command: "ls" } }]), // no id
    line("assistant", [{ type: "tool_use", id: "t2", name: `mcp__${"x".repeat(250)}`, input: {} }]),
    line("user", [{ type: "tool_result", tool_use_id: "t".repeat(300), content: "ok" }]),
    line("user", [{ type: "tool_result", content: "no id" }]),
    line("user", "hi", { timestamp: "not a date" }),
    line("user", "hi again", { timestamp: "2026-13-45T99:00:00Z" }),
  ].join("\n");
  const messages = transcriptMessages(jsonl);
  assert.equal(messages.length, 7);
  // Refused, the batch holding them was sent again by every later run: extraction never went on.
  const extract = ExtractRequestSchema.safeParse({ session_id: "s", messages: asChat(messages) });
  assert.ok(extract.success, JSON.stringify(extract.error?.issues));
  const episodes = EpisodeBatchRequest.safeParse({ session_id: "s", messages: asEpisodes(messages) });
  assert.ok(episodes.success, JSON.stringify(episodes.error?.issues));
  assert.equal(episodes.data!.messages[0]!.at, "2026-11-28T10:00:00.123Z", "Claude Code's own timestamps are kept");
});

Deno.test("claude code hooks: a transcript past memory-extract's body limit goes in parts, each after the last", async () => {
  // A server whose limit is 64 KiB stands for the default 8 MiB: a session that wrote 400 files was
  // 11 MB of transcript, refused (413) on every run, so nothing of it was ever extracted.
  const server = await startTestServer({ worker: false, env: { MAX_EXTRACT_BODY_BYTES: String(64 * 1024) } });
  const sql = testSql(2);
  const dir = await Deno.makeTempDir();
  try {
    const tenant = newTenant();
    const token = await agentToken(server, tenant);
    const lines = fileWritingSession(12, (i) => `write the generated table ${i}`, (i) => ({
      file_path: `src/gen/table${i}.ts`,
      content: `export const row${i} = 1;\n`.repeat(1500),
    }));
    const run = await preCompactOn(lines, {
      dir,
      session: "many-writes",
      url: server.url,
      token,
      send: "extract",
      project: "gen",
    });
    assert.equal(run.report.error, undefined, JSON.stringify(run.report));
    assert.equal((run.report.extract as { new_messages: number }).new_messages, 24);
    // Every message queued once, in order: each part follows the last.
    const queued = await extractPartsInOrder(sql, tenant);
    assert.ok(queued.parts > 1, "more than one part");
    assert.equal(queued.messages, 24);
  } finally {
    await server.close();
    await sql.end();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("claude code hooks: a memory that hangs or answers Retry-After is not called again until the wait is over", async () => {
  let requests = 0;
  let answer: "hang" | "rate_limited" = "hang";
  const release = new AbortController();
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (req) => {
    requests++;
    await req.text();
    if (answer === "hang") await new Promise((resolve) => release.signal.addEventListener("abort", resolve));
    return Response.json({ error: { code: "rate_limited", message: "600 a minute" } }, {
      status: 429,
      headers: { "retry-after": "120" },
    });
  });
  const dir = await Deno.makeTempDir();
  try {
    const env = {
      DEVAI_MEMORY_URL: `http://127.0.0.1:${server.addr.port}`,
      DEVAI_AGENT_TOKEN: "dvm_x",
      // Long enough for the request to reach the hanging server on a loaded machine (at 300 ms a
      // CI run's hook timed out before it had sent anything).
      DEVAI_MEMORY_TIMEOUT_MS: "2000",
    };
    const input = { session_id: "s", transcript_path: `${dir}/t.jsonl`, cwd: dir, prompt: "hello" };
    // A memory that hangs: the first prompt waits its timeout, the next ones none.
    const hung = { ...env, DEVAI_MEMORY_STATE_DIR: `${dir}/hung` };
    assert.match(String((await runHook("user-prompt-submit.mjs", input, hung)).report.error), /timeout/);
    const next = await runHook("user-prompt-submit.mjs", input, hung);
    assert.match(String(next.report.error), /^paused for \d+ s more \(no answer in 2000 ms\)/);
    assert.equal(requests, 1, "the paused hook sent nothing");
    release.abort();

    // A 429 with Retry-After: no call until it is over, from any hook.
    answer = "rate_limited";
    const limited = { ...env, DEVAI_MEMORY_STATE_DIR: `${dir}/limited` };
    assert.match(String((await runHook("user-prompt-submit.mjs", input, limited)).report.error), /429 rate_limited/);
    const after = await runHook(
      "session-end.mjs",
      { ...input, transcript_path: await longTranscript(dir, 3) },
      limited,
    );
    assert.match(String(after.report.error), /^paused for \d+ s more \(429 rate_limited with Retry-After\)/);
    assert.equal(requests, 2);
  } finally {
    release.abort();
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("claude code hooks: a state folder the hook cannot write costs the prompt none of its memories", async () => {
  const block = "## Relevant Memories\n\n### Project Knowledge (shop)\n- The shop uses pnpm, never npm";
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    () => Response.json({ block, memories: [{ id: "m1" }], token_count: 14, revision: 3 }),
  );
  const dir = await Deno.makeTempDir();
  try {
    // A file where the folder should be: no mkdir or write there succeeds, even as root.
    await Deno.writeTextFile(`${dir}/not-a-folder`, "");
    const run = await runHook("user-prompt-submit.mjs", {
      session_id: "s",
      transcript_path: `${dir}/t.jsonl`,
      cwd: dir,
      prompt: "npm or pnpm?",
    }, {
      DEVAI_MEMORY_URL: `http://127.0.0.1:${server.addr.port}`,
      DEVAI_AGENT_TOKEN: "dvm_x",
      DEVAI_MEMORY_STATE_DIR: `${dir}/not-a-folder/state`,
    });
    assert.equal(JSON.parse(run.stdout).hookSpecificOutput.additionalContext, block);
    assert.equal(run.report.memories, 1);
    assert.match(String(run.report.state_error), /not-a-folder/);
  } finally {
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("claude code hooks: each hook says on stderr that DEVAI_AGENT_TOKEN is not set, and sends nothing", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const input = { session_id: SESSION, transcript_path: `${dir}/t.jsonl`, cwd: dir, prompt: "how do we deploy?" };
    await Deno.writeTextFile(input.transcript_path, "");
    // Port 9 (discard): a hook that called anyway would report a connection error instead.
    const env = { DEVAI_MEMORY_URL: "http://127.0.0.1:9", DEVAI_MEMORY_STATE_DIR: dir };
    for (
      const [hook, event] of [
        ["user-prompt-submit.mjs", "UserPromptSubmit"],
        ["pre-compact.mjs", "PreCompact"],
        ["session-end.mjs", "SessionEnd"],
      ]
    ) {
      const run = await runHook(hook!, { ...input, hook_event_name: event }, env);
      assert.equal(run.code, 0, hook);
      assert.equal(run.stdout, "", hook);
      assert.deepEqual(run.report.hook, event);
      assert.match(String(run.report.error), /^DEVAI_AGENT_TOKEN is not set/, hook);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
