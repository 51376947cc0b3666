#!/usr/bin/env node
// Claude Code UserPromptSubmit hook: before Claude sees the prompt, the memories relevant to it
// (memory-retrieve: the `## Relevant Memories` block for this project) are added as context, with
// what changed since this session's last prompt. It never blocks the prompt: when the memory is
// unreachable or refuses the call, the prompt goes on without it (the reason is on stderr).
import { callApi, loadState, projectOf, readHookInput, report, saveState, settings, storable } from "./lib.mjs";

const s = settings();
try {
  const input = await readHookInput();
  // Said like the transcript hooks say it: a token exported in one shell but not in the one Claude
  // Code started from left this hook silent, and a user with `claude --debug` saw no reason.
  if (!s.token) throw new Error("DEVAI_AGENT_TOKEN is not set: no memories added");
  const message = storable(input.prompt ?? "", 20000);
  if (message) {
    const state = await loadState(s, input.session_id);
    const project = projectOf(s, input.cwd);
    const answer = await callApi(s, "POST", "memory-retrieve", {
      message,
      ...(project ? { project } : {}),
      thread_id: `claude-code:${input.session_id}`,
      ...(typeof state.revision === "number" ? { since_revision: state.revision } : {}),
    });
    await saveState(s, input.session_id, { ...state, revision: answer.revision });
    report({
      hook: "UserPromptSubmit",
      project: project ?? null,
      memories: answer.memories.length,
      tokens: answer.token_count,
    });
    if (answer.block) {
      process.stdout.write(
        JSON.stringify({ hookSpecificOutput: { hookEventName: "UserPromptSubmit", additionalContext: answer.block } }),
      );
    }
  }
} catch (err) {
  report({ hook: "UserPromptSubmit", error: String(err?.message ?? err) });
}
