#!/usr/bin/env node
// Claude Code SessionEnd hook: what the transcript holds beyond what PreCompact sent goes to the
// memory (episodes and extraction, incrementally), then the session is ended, which queues its
// consolidation into facts once. The state of the session is then removed.
import { callApi, clearState, loadState, readHookInput, report, saveState, sendTranscript, settings } from "./lib.mjs";

const s = settings();
try {
  const input = await readHookInput();
  if (!s.token) throw new Error("DEVAI_AGENT_TOKEN is not set: nothing sent");
  const state = await loadState(s, input.session_id);
  let done;
  try {
    done = await sendTranscript(s, input, state);
  } catch (err) {
    await saveState(s, input.session_id, state); // the next run resumes from what was sent
    throw err;
  }
  const ended = done.episodes > 0 || state.episodes > 0
    ? await callApi(s, "POST", `memory/sessions/${encodeURIComponent(input.session_id)}/end`, {})
    : null;
  await clearState(s, input.session_id);
  report({ hook: "SessionEnd", reason: input.reason ?? null, ...done, consolidation_job: ended?.job_id ?? null });
} catch (err) {
  report({ hook: "SessionEnd", error: String(err?.message ?? err) });
}
