// deno-lint-ignore-file no-control-regex -- stripping control characters before sending is the point
// What the three Claude Code hooks share: the settings they read from the environment, the HTTP
// calls to the memory API, the session state they keep between runs, and the conversion of Claude
// Code's transcript (JSONL, one line per event) into the messages the API takes. Plain Node (18 or
// later), no dependencies: copy the folder anywhere (integrations/README.md).
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join } from "node:path";

/** A positive number of milliseconds from the environment, else the default (a typo never disables a bound). */
function millis(value, fallback) {
  const n = Number(value);
  return value && Number.isFinite(n) && n > 0 ? n : fallback;
}

/** The hooks' settings, from the environment Claude Code starts them with. */
export function settings(env = process.env) {
  const budgetMs = millis(env.DEVAI_MEMORY_BUDGET_MS, 60000);
  return {
    url: (env.DEVAI_MEMORY_URL || "http://127.0.0.1:54321").replace(/\/+$/, ""),
    token: env.DEVAI_AGENT_TOKEN || "",
    project: env.DEVAI_PROJECT || undefined,
    stateDir: env.DEVAI_MEMORY_STATE_DIR || join(homedir(), ".cache", "devai-memory", "claude-code"),
    timeoutMs: millis(env.DEVAI_MEMORY_TIMEOUT_MS, 8000),
    // The whole run's time: Claude Code waits for a hook (compaction does not start before
    // PreCompact returns), and kills one past its timeout (120 s in settings.json) before it could
    // save what it sent. Past the budget no call is started and the one under way is cut; what is
    // left goes with the next run.
    budgetMs,
    deadline: Date.now() + budgetMs,
    // What the transcript hooks send: episodes (every message, graph memory) and/or extract
    // (candidate memories, deduplicated by the worker).
    send: new Set((env.DEVAI_MEMORY_SEND || "episodes,extract").split(",").map((s) => s.trim()).filter(Boolean)),
  };
}

/** The hook's input: the JSON object Claude Code writes to stdin. */
export async function readHookInput(stream = process.stdin) {
  let text = "";
  for await (const chunk of stream) text += chunk;
  return JSON.parse(text || "{}");
}

/** One line on stderr, for `claude --debug` and for tests: what the hook did. */
export function report(fields) {
  const all = stateError ? { ...fields, state_error: stateError } : fields;
  process.stderr.write(`devai-memory ${JSON.stringify(all)}\n`);
}

// The state is a cache of what was sent: a folder the hook cannot write (a ~/.cache left owned by
// root, a read-only home) must not cost the prompt its memories, which it did when saving the
// revision failed after the answer came. Writes are tried, and their failure is reported.
let stateError = null;

async function writeAtomically(file, text) {
  try {
    await mkdir(dirname(file), { recursive: true });
    await writeFile(`${file}.${process.pid}.tmp`, text);
    await rename(`${file}.${process.pid}.tmp`, file); // a hook killed mid-write leaves the previous one
  } catch (err) {
    stateError = String(err?.message ?? err);
  }
}

export class ApiError extends Error {
  /** `text`: the answer as sent, shown when it is not the API's error shape (a proxy's page, say). */
  constructor(status, body, text = "") {
    super(
      body?.error?.code
        ? `${status} ${body.error.code}: ${body.error.message ?? ""}${issuesOf(body.error)}`
        : `${status}: ${oneLine(text) || "(no body)"}`,
    );
    this.status = status;
    this.code = body?.error?.code;
  }
}

/** A 400's first field issues, so the report says which field was refused: " (project: …)". */
function issuesOf(error) {
  if (!Array.isArray(error.issues) || error.issues.length === 0) return "";
  const named = error.issues.slice(0, 3).map((i) => `${(i?.path ?? []).join(".")}: ${i?.message ?? ""}`);
  return ` (${named.join("; ")})`;
}

/** An answer's first 200 characters on one line, for the report. */
function oneLine(text) {
  return String(text).replace(/\s+/g, " ").trim().slice(0, 200);
}

/** The run's budget (DEVAI_MEMORY_BUDGET_MS) is spent: what is left waits for the next run. */
export class OutOfTime extends Error {
  constructor(s) {
    super(
      `out of time: the hook's ${s.budgetMs} ms (DEVAI_MEMORY_BUDGET_MS) are spent, the rest goes with the next run`,
    );
  }
}

// --- pause ---------------------------------------------------------------------------------------
// A memory that did not answer in time, or asked to be left alone (429 or 503 with Retry-After), is
// not called again for a while by any hook: each prompt waited the whole timeout while the memory
// hung (8 s a prompt), and a rate-limited tenant was sent every prompt anyway. The file's name has
// no `.json`, so no session's state can be named so.
const PAUSE_FILE = "paused-until";
const PAUSE_AFTER_TIMEOUT_MS = 60_000;
const PAUSE_MAX_MS = 300_000;

/** The memory is paused: no call until then. */
export class Paused extends Error {
  constructor(pause) {
    const seconds = Math.ceil((pause.until - Date.now()) / 1000);
    super(`paused for ${seconds} s more (${pause.reason}): the memory is not called until then`);
  }
}

async function currentPause(s) {
  try {
    const pause = JSON.parse(await readFile(join(s.stateDir, PAUSE_FILE), "utf8"));
    return typeof pause.until === "number" && pause.until > Date.now() ? pause : null;
  } catch {
    return null;
  }
}

async function pauseFor(s, ms, reason) {
  const pause = { until: Date.now() + Math.min(ms, PAUSE_MAX_MS), reason };
  await writeAtomically(join(s.stateDir, PAUSE_FILE), JSON.stringify(pause));
}

/** Retry-After in ms: delta-seconds or an HTTP date; null when it is neither. */
function retryAfterMs(value) {
  if (value === null) return null;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const at = /^[A-Za-z]{3}/.test(value.trim()) ? Date.parse(value) : NaN;
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
}

/**
 * Calls the memory API; an answer outside 2xx is an ApiError with its code. Each call waits at most
 * DEVAI_MEMORY_TIMEOUT_MS, and never past the run's deadline (reading the answer included). While
 * the memory is paused (above) it is not called.
 */
export async function callApi(s, method, path, body) {
  const pause = await currentPause(s);
  if (pause) throw new Paused(pause);
  const left = s.deadline - Date.now();
  if (left <= 0) throw new OutOfTime(s);
  const cutByBudget = left < s.timeoutMs;
  try {
    const res = await fetch(`${s.url}/functions/v1/${path}`, {
      method,
      headers: { authorization: `Bearer ${s.token}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(Math.min(s.timeoutMs, left)),
    });
    const text = await res.text();
    let answer;
    try {
      answer = JSON.parse(text);
    } catch {
      answer = undefined;
    }
    if (!res.ok) {
      const wait = res.status === 429 || res.status === 503 ? retryAfterMs(res.headers.get("retry-after")) : null;
      if (wait) {
        await pauseFor(s, wait, `${res.status} ${answer?.error?.code ?? ""} with Retry-After`.replace("  ", " "));
      }
      throw new ApiError(res.status, answer, text);
    }
    if (typeof answer !== "object" || answer === null) {
      throw new Error(`${path} answered ${res.status} with a body that is not a JSON object: ${oneLine(text)}`);
    }
    return answer;
  } catch (err) {
    if (err?.name !== "TimeoutError") throw err;
    if (cutByBudget) throw new OutOfTime(s);
    await pauseFor(s, PAUSE_AFTER_TIMEOUT_MS, `no answer in ${s.timeoutMs} ms`);
    throw err;
  }
}

/** The most characters a project name holds (UTF-16 units, as the API counts). */
const PROJECT_MAX = 140;

/**
 * The project the session's memories belong to: DEVAI_PROJECT, else the name of the git repository
 * (or folder) the session runs in, in the characters a project name may hold and at most its
 * length: a folder's name may be 255 bytes, and a longer project was refused on every call. Read
 * in NFC first, as the API reads names: macOS hands a folder `café` over in NFD (e + U+0301), whose
 * accent, no letter, became a '-' (project `cafe`, not the `café` other clients name).
 */
export function projectOf(s, cwd) {
  if (s.project) return s.project;
  if (!cwd) return undefined;
  let dir = cwd;
  while (!existsSync(join(dir, ".git")) && dirname(dir) !== dir) dir = dirname(dir);
  let name = basename(existsSync(join(dir, ".git")) ? dir : cwd).normalize("NFC").replace(
    /[^\p{L}\p{N}._%+@-]+/gu,
    "-",
  );
  if (name.length > PROJECT_MAX) {
    name = name.slice(0, /[\uD800-\uDBFF]/.test(name[PROJECT_MAX - 1]) ? PROJECT_MAX - 1 : PROJECT_MAX);
  }
  return name.replace(/^[-.]+|[-.]+$/g, "") || undefined;
}

// --- session state ------------------------------------------------------------------------------

/** What earlier runs sent for this session: episodes count, the extract transcript, the revision. */
export async function loadState(s, sessionId) {
  try {
    return JSON.parse(await readFile(join(s.stateDir, `${safeName(sessionId)}.json`), "utf8"));
  } catch {
    return { episodes: 0, extract: null, revision: null };
  }
}

export async function saveState(s, sessionId, state) {
  await writeAtomically(join(s.stateDir, `${safeName(sessionId)}.json`), JSON.stringify(state));
}

/** Forgets the session (it ended). */
export async function clearState(s, sessionId) {
  await rm(join(s.stateDir, `${safeName(sessionId)}.json`), { force: true }).catch((err) => {
    stateError = String(err?.message ?? err);
  });
}

function safeName(id) {
  return String(id).replace(/[^A-Za-z0-9._-]/g, "_");
}

// --- text ---------------------------------------------------------------------------------------

// Characters the memory API refuses in stored text (its one rule: docs/auth.md points at
// supabase/functions/_shared/unsafe-characters.ts): terminal colour codes first, then controls
// (C0 but tab and line breaks, DEL, C1), bidirectional and invisible format characters, tags,
// lone surrogates (tests/claude_code_hooks.test.ts compares the two on every code point).
const ANSI = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)/g;
const UNSAFE =
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u061C\u200B\u200E\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF\u{E0000}-\u{E007F}]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/gu;

/**
 * Text the API stores as sent: without the characters above, trimmed, at most `max` characters
 * (UTF-16 units, as the API counts). A cut never splits a surrogate pair: half of one is a
 * character the API refuses (400), and the batch holding it would be refused on every run.
 */
export function storable(text, max = 4000) {
  const clean = String(text).replace(ANSI, "").replace(UNSAFE, "").trim();
  if (clean.length <= max) return clean;
  const end = /[\uD800-\uDBFF]/.test(clean[max - 2]) ? max - 2 : max - 1;
  return `${clean.slice(0, end)}…`;
}

// --- transcript ---------------------------------------------------------------------------------

const TOOL_TEXT = 4000;

/** A tool call as one line a person would write: the command for Bash, else the tool and its input. */
function toolCallText(block) {
  const input = block.input ?? {};
  const detail = typeof input.command === "string" ? input.command : JSON.stringify(input);
  return `[${block.name}] ${detail}`;
}

function resultText(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p) => (p?.type === "text" ? p.text : "")).filter(Boolean).join("\n");
  return "";
}

/** The user's own words: without the reminders Claude Code adds to a prompt. */
function userText(text) {
  return text.replace(/<system-reminder>[\s\S]*?<\/system-reminder>/g, "").trim();
}

// What the API refuses in a message refuses its whole batch, and a refused batch is sent again by
// every later run, holding back everything after it: so a line that is not what Claude Code
// writes (no tool id, a 300-character one, a timestamp that is no instant) is sent in a form the
// API takes rather than as it is.

/** The line's timestamp when it is an ISO instant with its offset (as the API takes `at`), else none. */
function instant(value) {
  if (typeof value !== "string") return undefined;
  const iso = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(value);
  return iso && !Number.isNaN(Date.parse(value)) ? value : undefined;
}

/** A tool call's id or name as the API takes them: 1-200 characters ("unknown" when missing). */
function label(value) {
  return typeof value === "string" && value.length > 0 ? value.slice(0, 200) : "unknown";
}

/**
 * The conversation in a Claude Code transcript, in order, one message per content block:
 * { role, text, at, toolCall?, toolCallId? }. Left out: lines that are not the conversation
 * (summaries, system lines, file snapshots), the model's thinking, sub-agents' sidechains,
 * Claude Code's own meta lines and slash-command output, and the summary that opens a compacted
 * session (the model's words, not the user's). Appending lines only appends messages, so what a
 * hook sent stays a prefix of what the next one reads.
 */
export function transcriptMessages(jsonl) {
  const out = [];
  for (const line of jsonl.split("\n")) {
    if (!line.trim()) continue;
    let event;
    try {
      event = JSON.parse(line);
    } catch {
      continue; // a line being written as we read
    }
    if (
      (event.type !== "user" && event.type !== "assistant") || event.isSidechain || event.isMeta ||
      event.isCompactSummary
    ) continue;
    const at = instant(event.timestamp);
    const content = event.message?.content;
    const blocks = typeof content === "string"
      ? [{ type: "text", text: content }]
      : Array.isArray(content)
      ? content
      : [];
    for (const block of blocks) {
      if (block?.type === "text" && typeof block.text === "string") {
        const text = event.type === "user" ? userText(block.text) : block.text.trim();
        if (!text || /^<(command-|local-command-)/.test(text)) continue;
        out.push({ role: event.type, text, at });
      } else if (block?.type === "tool_use" && event.type === "assistant") {
        out.push({
          role: "assistant",
          text: toolCallText(block),
          at,
          toolCall: { id: block.id, name: block.name, input: block.input ?? {} },
        });
      } else if (block?.type === "tool_result") {
        const text = resultText(block.content);
        out.push({
          role: "tool",
          text: `${block.is_error ? "[error] " : ""}${text}`,
          at,
          toolCallId: block.tool_use_id,
        });
      }
    }
  }
  return out;
}

/** The messages as memory/episodes takes them (tool output clipped; empty ones kept as a marker). */
export function asEpisodes(messages) {
  return messages.map((m) => ({
    role: m.role,
    content: storable(m.text, m.role === "tool" ? TOOL_TEXT : 4000) || "(empty)",
    ...(m.at ? { at: m.at } : {}),
  }));
}

/** The messages in OpenAI chat format, as memory-extract takes them. */
export function asChat(messages) {
  return messages.map((m) => {
    if (m.toolCall) {
      return {
        role: "assistant",
        content: null,
        tool_calls: [{
          id: label(m.toolCall.id),
          type: "function",
          // A file written whole can be megabytes: what extraction reads of it is its start.
          function: { name: label(m.toolCall.name), arguments: storable(JSON.stringify(m.toolCall.input), 20000) },
        }],
      };
    }
    if (m.role === "tool") {
      return { role: "tool", tool_call_id: label(m.toolCallId), content: storable(m.text, TOOL_TEXT) };
    }
    return { role: m.role, content: storable(m.text, 20000) };
  });
}

// A batch of episodes: at most the API's 50 messages, and at most this many bytes of JSON, well
// under the API's default body limit (256 KiB): 50 messages of 4,000 characters can be 600 KB
// (non-Latin text, escaped quotes and backslashes), and a refused batch would be resent on every
// run, holding back everything after it.
export const EPISODES_PER_BATCH = 50;
export const EPISODE_BATCH_BYTES = 192 * 1024;
const utf8 = new TextEncoder();

/** The episodes in order, cut into batches the API takes (count and bytes both capped). */
export function episodeBatches(episodes, maxBytes = EPISODE_BATCH_BYTES) {
  const batches = [];
  let batch = [];
  let bytes = 0;
  for (const episode of episodes) {
    const size = utf8.encode(JSON.stringify(episode)).length + 1; // its comma
    if (batch.length > 0 && (batch.length === EPISODES_PER_BATCH || bytes + size > maxBytes)) {
      batches.push(batch);
      batch = [];
      bytes = 0;
    }
    batch.push(episode);
    bytes += size;
  }
  if (batch.length > 0) batches.push(batch);
  return batches;
}

// A part of the transcript sent to memory-extract: at most this many bytes of JSON, half the API's
// default limit (MAX_EXTRACT_BODY_BYTES, 8 MiB); halved again on each 413 from a server set lower.
// A session's whole transcript (its first run, or the server lost track) can be far more: 400
// files written were 11 MB, refused on every run. The SDK's extractionSession cuts the same way
// (sdk/src/client.ts; the hooks install nothing, so they cannot import it):
// tests/extract_parts_in_step.test.ts keeps the two in step.
export const EXTRACT_PART_BYTES = 4 * 1024 * 1024;

/** How many of `chat`'s messages from `from` fit in `maxBytes` of JSON (at least one). */
export function extractPartEnd(chat, from, maxBytes) {
  let end = from;
  let bytes = 0;
  while (end < chat.length) {
    bytes += utf8.encode(JSON.stringify(chat[end])).length + 1;
    if (end > from && bytes > maxBytes) break;
    end++;
  }
  return end;
}

/**
 * The chat messages memory-extract has not acknowledged, in parts of capped size, each `after` the
 * transcript the previous answer acknowledged (the server queues the same job for the same
 * messages whatever the cut). Returns the new messages queued and the last job.
 */
async function sendExtract(s, input, state, chat, project) {
  const base = { session_id: input.session_id, ...(project ? { project } : {}) };
  let after = state.extract && state.extract.count <= chat.length ? state.extract : null;
  let maxBytes = EXTRACT_PART_BYTES;
  let lostTrack = false;
  const sent = { new_messages: 0, job_id: null };
  while ((after?.count ?? 0) < chat.length) {
    const from = after?.count ?? 0;
    const messages = chat.slice(from, extractPartEnd(chat, from, maxBytes));
    let answer;
    try {
      answer = await callApi(s, "POST", "memory-extract", { ...base, messages, ...(after ? { after } : {}) });
    } catch (err) {
      if (err instanceof ApiError && err.code === "payload_too_large" && messages.length > 1) {
        maxBytes = Math.floor(maxBytes / 2); // a server with a lower limit
        continue;
      }
      if (!(err instanceof ApiError && err.code === "transcript_mismatch" && after && !lostTrack)) throw err;
      lostTrack = true; // the server lost track: all of it again, once
      after = null;
      continue;
    }
    if (!(answer.transcript?.count > from)) throw new Error("memory-extract acknowledged no new message");
    after = answer.transcript;
    state.extract = after;
    await saveState(s, input.session_id, state);
    sent.new_messages += answer.new_messages ?? 0;
    sent.job_id = answer.job_id ?? sent.job_id;
  }
  return sent;
}

/**
 * Sends what the transcript holds beyond what earlier runs sent: new messages as episodes (in
 * batches capped in count and bytes), and to memory-extract with `after` (the transcript it
 * acknowledged last time), so a long session never resends what it sent. Returns what it did.
 */
export async function sendTranscript(s, input, state) {
  const jsonl = await readFile(input.transcript_path, "utf8");
  const messages = transcriptMessages(jsonl);
  const project = projectOf(s, input.cwd);
  const done = { messages: messages.length, project: project ?? null, episodes: 0, extract: null };
  const fresh = messages.slice(Math.min(state.episodes ?? 0, messages.length));

  if (s.send.has("episodes") && fresh.length > 0) {
    for (const batch of episodeBatches(asEpisodes(fresh))) {
      await callApi(s, "POST", "memory/episodes", {
        session_id: input.session_id,
        ...(project ? { project } : {}),
        messages: batch,
      });
      state.episodes = (state.episodes ?? 0) + batch.length;
      done.episodes += batch.length;
      // Saved as each batch is acknowledged: a run killed later resumes after it, not from the start.
      await saveState(s, input.session_id, state);
    }
  }
  if (s.send.has("extract") && messages.length > 0) {
    done.extract = await sendExtract(s, input, state, asChat(messages), project);
  }
  return done;
}
