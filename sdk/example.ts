// The SDK in 20 lines: remember a fact, then retrieve memories for a related user message and print
// the block an agent puts in its system prompt. Runs against `npm start`:
//
//   npm run example      (= deno run -A --config supabase/functions/deno.json sdk/example.ts)
//
// Environment: SUPABASE_URL (default http://127.0.0.1:54321) and DEVAI_TOKEN (a user's JWT;
// default: the demo user token `npm start` prints, signed with the secret it signs with:
// SUPABASE_JWT_SECRET, else JWT_SECRET, else the local development secret). For a service_role
// key, also set DEVAI_TENANT to the tenant's uuid.
import { createMemoryClient, MemoryApiError } from "./mod.ts";
import { LOCAL_DEMO_USER_ID, LOCAL_DEV_JWT_SECRET, signLocalToken } from "../scripts/serve/local_tokens.ts";

const supabaseUrl = Deno.env.get("SUPABASE_URL") ?? "http://127.0.0.1:54321";
const accessToken = Deno.env.get("DEVAI_TOKEN") ??
  await signLocalToken(Deno.env.get("SUPABASE_JWT_SECRET") || Deno.env.get("JWT_SECRET") || LOCAL_DEV_JWT_SECRET, {
    role: "authenticated",
    sub: LOCAL_DEMO_USER_ID,
    aud: "authenticated",
  });

const memory = createMemoryClient({ supabaseUrl, accessToken, tenantId: Deno.env.get("DEVAI_TENANT") });

try {
  const project = "acme/demo-shop";
  const saved = await memory.remember({
    content: "The demo-shop project deploys with blue-green releases every Friday afternoon",
    project,
  });
  console.log(`${saved.created ? "remembered" : "already known"}: ${saved.memory.id}`);

  const found = await memory.retrieve({ message: "When does demo-shop deploy its releases?", project });
  console.log(`\n${found.memories.length} memories, ${found.token_count} tokens, revision ${found.revision}\n`);
  console.log(found.block || "(no memory above the similarity threshold)");
} catch (err) {
  if (err instanceof MemoryApiError) {
    console.error(`memory API error ${err.status} ${err.code}: ${err.message}`);
    for (const issue of err.issues) console.error(`  ${issue.path.join(".")}: ${issue.message}`);
    if (err.status === 0) console.error(`is the server running? npm start (expected at ${supabaseUrl})`);
    Deno.exit(1);
  }
  throw err;
}
