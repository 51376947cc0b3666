// issuesText is the one-line account of a validation failure that the environment check, MCP tool
// errors and the LLM answer check print: a client's author or a model acts on it, so its shape holds.
import assert from "node:assert/strict";
import { z } from "zod";
import { issuesText } from "../supabase/functions/_shared/issue-text.ts";

Deno.test("issuesText: path: problem per issue, joined by '; ', an empty path named by the caller", () => {
  const result = z.object({ a: z.object({ b: z.string() }), c: z.array(z.number()) }).safeParse({
    a: { b: 1 },
    c: ["x"],
  });
  assert.deepEqual(result.success, false);
  const text = issuesText(result.error!.issues);
  assert.deepEqual(text.split("; ").map((p) => p.split(":")[0]), ["a.b", "c.0"]);
  assert.deepEqual(
    issuesText([{ path: [], message: "expected an object" }], "(arguments)"),
    "(arguments): expected an object",
  );
  assert.deepEqual(issuesText([{ path: ["x"], message: "1" }, { path: ["y"], message: "2" }], "(root)", 1), "x: 1");
});
