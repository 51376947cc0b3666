#!/usr/bin/env node
// Claude Code PreCompact hook: before the context is compacted (and its early turns leave the
// window), the transcript so far goes to the memory: new messages as episodes and to extraction,
// incrementally (only what earlier runs of this session did not send). Never blocks compaction.
import { loadState, readHookInput, report, saveState, sendTranscript, settings } from "./lib.mjs";

const s = settings();
try {
  const input = await readHookInput();
  if (!s.token) throw new Error("DEVAI_AGENT_TOKEN is not set: nothing sent");
  const state = await loadState(s, input.session_id);
  try {
    const done = await sendTranscript(s, input, state);
    report({ hook: "PreCompact", ...done });
  } finally {
    await saveState(s, input.session_id, state);
  }
} catch (err) {
  report({ hook: "PreCompact", error: String(err?.message ?? err) });
}
