// A Node program that uses devai-memory-sdk as a user would after `npm install`: it is
// type-checked against the package's own .d.ts (tsc, NodeNext resolution through its `exports`)
// and run with the machine's node against a live local server. tests/sdk_node.test.ts drives it;
// it prints one JSON line with what it saw.
import { createMemoryClient, MemoryApiError, type RetrieveResponse } from "devai-memory-sdk";

const env = process.env as Record<string, string>;
const memory = createMemoryClient({ supabaseUrl: env.SUPABASE_URL!, accessToken: env.DEVAI_TOKEN! });
const project = "acme/web";

const saved = await memory.remember({ content: "The acme web app deploys with blue-green releases every Friday", project, metadata: { category: "deployment" } });
const found: RetrieveResponse = await memory.retrieve({ message: "When does the acme web app deploy?", project });
const listed = await memory.list({ project, limit: 5 });

let refused: { status: number; code: string; paths: string[] } | undefined;
try {
  await memory.retrieve({ message: "x", top_k: 10_000 });
} catch (err) {
  if (err instanceof MemoryApiError) refused = { status: err.status, code: err.code, paths: err.issues.map((i) => i.path.join(".")) };
}

const session = memory.extractionSession({ session_id: `node-${Date.now()}`, project });
const transcript = [
  { role: "user" as const, content: "Remember that the staging database resets every Monday." },
  { role: "assistant" as const, content: "Noted." },
];
const first = await session.send(transcript);
transcript.push({ role: "user", content: "Also, the CI runs on every push." });
const second = await session.send(transcript);

const service = createMemoryClient({ supabaseUrl: env.SUPABASE_URL!, accessToken: env.SERVICE_TOKEN! });
const coder = await service.getAgent("coder");

let unreachable: string | undefined;
try {
  await createMemoryClient({ supabaseUrl: "http://127.0.0.1:9", accessToken: "x" }).stats();
} catch (err) {
  if (err instanceof MemoryApiError) unreachable = `${err.status} ${err.code}`;
}

console.log(JSON.stringify({
  node: process.version,
  created: saved.created,
  namespace: saved.memory.namespace,
  injected: found.memories.filter((m) => m.injected).map((m) => m.id),
  saved_id: saved.memory.id,
  block: found.block,
  listed: listed.memories.map((m) => m.id),
  refused,
  first: first && { new_messages: first.new_messages, count: first.transcript.count },
  second: second && { new_messages: second.new_messages, count: second.transcript.count },
  coder_has_testing: coder.categories.includes("testing"),
  unreachable,
}));
