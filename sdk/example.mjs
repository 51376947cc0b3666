// The SDK from Node (20.3 or later), as the npm package: remember a fact, retrieve memories for a
// related message and print the block an agent puts in its system prompt. With `npm start`
// running in another terminal:
//
//   npm run example:node      (builds sdk/ once, then: node sdk/example.mjs)
//
// Environment: SUPABASE_URL (default http://127.0.0.1:54321) and DEVAI_TOKEN (a user's JWT; default:
// the demo user token `npm start` prints, signed here with the secret it signs with:
// SUPABASE_JWT_SECRET, else JWT_SECRET, else the local development secret). In your own project: `npm install <this repo>/sdk/devai-memory-sdk-0.1.0.tgz`
// (`npm run sdk:pack` makes it) and import from "devai-memory-sdk".
import { createHmac } from "node:crypto";
import { createMemoryClient, MemoryApiError } from "./dist/index.js";

const supabaseUrl = process.env.SUPABASE_URL ?? "http://127.0.0.1:54321";
const accessToken = process.env.DEVAI_TOKEN ?? demoUserToken(process.env.SUPABASE_JWT_SECRET || process.env.JWT_SECRET || "super-secret-jwt-token-with-at-least-32-characters-long");

/** The demo user token `npm start` prints (HS256, role authenticated, the demo tenant). */
function demoUserToken(secret) {
  const b64 = (v) => Buffer.from(JSON.stringify(v)).toString("base64url");
  const claims = { iss: "supabase-demo", role: "authenticated", sub: "00000000-0000-4000-8000-00000000d001", aud: "authenticated", iat: 1641769200, exp: 1983812996 };
  const unsigned = `${b64({ alg: "HS256", typ: "JWT" })}.${b64(claims)}`;
  return `${unsigned}.${createHmac("sha256", secret).update(unsigned).digest("base64url")}`;
}

const memory = createMemoryClient({ supabaseUrl, accessToken, tenantId: process.env.DEVAI_TENANT });
try {
  const project = "acme/demo-shop";
  const saved = await memory.remember({ content: "The demo-shop project deploys with blue-green releases every Friday afternoon", project });
  console.log(`${saved.created ? "remembered" : "already known"}: ${saved.memory.id}`);
  const found = await memory.retrieve({ message: "When does demo-shop deploy its releases?", project });
  console.log(`\n${found.memories.length} memories, ${found.token_count} tokens, revision ${found.revision} (node ${process.version})\n`);
  console.log(found.block || "(no memory above the similarity threshold)");
} catch (err) {
  if (!(err instanceof MemoryApiError)) throw err;
  console.error(`memory API error ${err.status} ${err.code}: ${err.message}`);
  for (const issue of err.issues) console.error(`  ${issue.path.join(".")}: ${issue.message}`);
  if (err.status === 0) console.error(`is the server running? npm start (expected at ${supabaseUrl})`);
  process.exit(1);
}
