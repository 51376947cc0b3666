// The secret redactor (_shared/redact.ts) on a corpus of realistic leaks from coding sessions (every
// provider's key shape, private keys, passwords in URLs and connection strings, .env lines, bearer
// headers) and of look-alikes that must survive untouched (git SHAs, UUIDs, lockfile integrity
// hashes, base64 in prose, placeholders in docs). Pure: no database.
import assert from "node:assert/strict";
import {
  EMBEDDED_JSON_ITEMS,
  redactJson,
  redactJsonSliced,
  redactMessages,
  redactString,
} from "../supabase/functions/_shared/redact-json.ts";
import { CountingSlice, whoEndsFirst } from "./support/event-loop.ts";
import { MAY_HOLD_SECRET, redactSecrets } from "../supabase/functions/_shared/redact.ts";
import { assertLinearWork } from "./support/work.ts";

// Shapes of real credentials, made up character by character (none of them is a live key).
const OPENAI =
  "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAB7CdE0FgH3IjK6LmN9oPq2RsT5uVw8XyZ1aBc4DeF7gHi0JkL3mNo6PqR9sTu2VwX5yZa8BcD1eFg4HiJ";
const OPENAI_LEGACY = "sk-4fT7hJ2kL9mN3pQ6rS8tV1wX5yZ0aB2cD4eF6gH8iJ0kL2mN";
const ANTHROPIC =
  "sk-ant-api03-Qw3rTy6uIo9pAs2dFg5hJk8lZx1cVb4nMq7wEr0tYu3iOp6aSd9fGh2jKl5zXc8vBn1mQw4eRt7yUi0oPa3sDf6gHj9kLz2xCv5bNm8-AAAAAA";
const AWS_ID = "AKIAIOSFODNN7EXAMPLE";
const GCP = "AIzaSyD3fG6hJ9kL2mN5pQ8rS1tV4wX7yZ0aB3c";
const GITHUB = "ghp_aB3dE6gH9jK2mN5pQ8rS1tV4wX7yZ0cF3hJ6k";
const GITHUB_PAT = "github_pat_11ABCDEFG0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123456789aBcDeFgHiJkLmNoPqRsTuVwXyZ0123";
const STRIPE = "sk_live_51HqLyjWDarjtT1zdp7dcXwBZR5MjzKxYkTqfGh8mB3nV6cX9zL2kJ4hG7fD1sA0";
const SUPABASE_SECRET = "sb_secret_N7UND0UgjKTVK-Uodkm0Hg_xSvEMPvz";
const AGENT_TOKEN = "dvm_Xr0uOVlg62njgedef_60Xt6Zym-GfOjnCidxicL3c5I";
const b64url = (o: unknown) => btoa(JSON.stringify(o)).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
const jwt = (claims: Record<string, unknown>) =>
  `${b64url({ alg: "HS256", typ: "JWT" })}.${b64url(claims)}.${"Xq3-vB9_kLm2nPq5rSt8uVw1xYz4AbC7dEf0gHi3jKl"}`;
const SERVICE_ROLE_JWT = jwt({
  iss: "supabase",
  ref: "abcdefghijklmnop",
  role: "service_role",
  iat: 1700000000,
  exp: 2000000000,
});
const USER_JWT = jwt({ sub: "5f0c3a7e-1b2d-4c8e-9f10-2a3b4c5d6e7f", role: "authenticated", exp: 2000000000 });
const PRIVATE_KEY = [
  "-----BEGIN RSA PRIVATE KEY-----",
  "MIIEowIBAAKCAQEAx3vP7K2mN9qR4sT6uV8wX0yZ1aB3cD5eF7gH9iJ1kL3mN5oP",
  "7qR9sT1uV3wX5yZ7aB9cD1eF3gH5iJ7kL9mN1oP3qR5sT7uV9wX1yZ3aB5cD7eF9",
  "-----END RSA PRIVATE KEY-----",
].join("\n");

// only: the line is nothing but the secret (and its name), which a writer drops.
const LEAKS: { text: string; kinds: string[]; kept?: RegExp; only?: true }[] = [
  {
    text: `Set OPENAI_API_KEY=${OPENAI} in .env.local before running the eval`,
    kinds: ["openai_key"],
    kept: /Set OPENAI_API_KEY=\[REDACTED:openai_key\] in \.env\.local before running/,
  },
  { text: `The old key ${OPENAI_LEGACY} was rotated on Monday`, kinds: ["openai_key"] },
  {
    text: `curl https://api.anthropic.com/v1/messages -H "x-api-key: ${ANTHROPIC}"`,
    kinds: ["anthropic_key"],
    kept: /api\.anthropic\.com\/v1\/messages/,
  },
  { text: `aws configure set aws_access_key_id ${AWS_ID}`, kinds: ["aws_access_key"] },
  {
    text: "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    kinds: ["secret_assignment"],
    kept: /^aws_secret_access_key = \[REDACTED:secret_assignment\]$/,
    only: true,
  },
  { text: `Maps load with key=${GCP} in the script tag`, kinds: ["gcp_api_key"] },
  {
    text: "The token ya29.a0AfB_byC3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5zA7bC9 expires in an hour",
    kinds: ["gcp_oauth_token"],
  },
  {
    text: `git clone https://${GITHUB}@github.com/acme/shop.git`,
    kinds: ["github_token"],
    kept: /github\.com\/acme\/shop\.git/,
  },
  { text: `export GH_TOKEN=${GITHUB_PAT}`, kinds: ["github_token"], only: true },
  { text: `Payments use STRIPE_SECRET_KEY="${STRIPE}" on production`, kinds: ["stripe_key"] },
  { text: `The webhook secret is whsec_5Kq8Zt2Yw9Xv3Bn6Mc1Lp4Jh7Gf0Ds`, kinds: ["stripe_key"] },
  { text: `SUPABASE_SECRET_KEY=${SUPABASE_SECRET}`, kinds: ["supabase_secret_key"], only: true },
  // This service's own agent tokens (docs/auth.md#agent-tokens), in prose and as a bearer token.
  { text: `The CI hook sends ${AGENT_TOKEN} to the memory service`, kinds: ["agent_token"] },
  { text: `Authorization: Bearer ${AGENT_TOKEN}`, kinds: ["agent_token"], only: true },
  // Touched by a `_` or `-` (Markdown emphasis, a name built around it): redacted all the same.
  { text: `Use the token _${AGENT_TOKEN}_ for the CI hook`, kinds: ["agent_token"], kept: /^Use the token _\[/ },
  { text: `Revoked ${AGENT_TOKEN}_old and ${AGENT_TOKEN}-2 yesterday`, kinds: ["agent_token"], kept: / and \[/ },
  { text: `The worker calls the API with the service key ${SERVICE_ROLE_JWT}`, kinds: ["supabase_service_role_jwt"] },
  { text: `Authorization: Bearer ${USER_JWT}`, kinds: ["jwt"], only: true },
  {
    text: "Authorization: Bearer 7f3kQ9xLm2Pz8vR4tYw6Nb1Jc5Hd0Gs3",
    kinds: ["bearer_token"],
    kept: /^Authorization: Bearer \[REDACTED:bearer_token\]$/,
    only: true,
  },
  {
    text: "The staging database is postgres://app_user:S3cr3t!Pass@db.staging.internal:5432/shop",
    kinds: ["password"],
    kept: /postgres:\/\/app_user:\[REDACTED:password\]@db\.staging\.internal:5432\/shop/,
  },
  {
    text: "Server=tcp:sql.acme.net,1433;Database=shop;User ID=app;Password=Tr0ub4dor&3;Encrypt=true",
    kinds: ["password"],
    kept: /Password=\[REDACTED:password\];Encrypt=true/,
  },
  { text: "psql 'host=db port=5432 dbname=shop user=app password=hunter2'", kinds: ["password"] },
  { text: "DATABASE_PASSWORD=correct-horse-battery-staple", kinds: ["password"], only: true },
  { text: 'config.json has "client_secret": "8Q~vXk2Lm9Np4Rt7Yw1Zb3Cd6Fg"', kinds: ["secret_assignment"] },
  { text: "redis-cli -a s3cr3tP4ss --password=s3cr3tP4ss ping", kinds: ["password"] },
  {
    text: "GET https://api.acme.com/v2/orders?limit=10&access_token=a8F3kL9mP2qR7tX4",
    kinds: ["url_secret"],
    kept: /limit=10&access_token=\[REDACTED:url_secret\]/,
  },
  {
    text: `Deploy key:\n${PRIVATE_KEY}\nstored in the vault`,
    kinds: ["private_key"],
    kept: /Deploy key:\n\[REDACTED:private_key\]\nstored in the vault/,
  },
  { text: "xoxb-2048-4096-AbCdEfGhIjKlMnOpQrStUvWx is the Slack bot token", kinds: ["slack_token"] },
  // Names in camel case, Go's `:=`, PHP's and Ruby's `=>`, XML, curl's user, an assignment inside
  // another name's value, an option inside brackets, requests' auth tuple: all were stored as sent.
  {
    text: 'const dbPassword = "Xk9#mP2qL"; // staging',
    kinds: ["password"],
    kept: /^const dbPassword = "\[REDACTED:password\]"; \/\/ staging$/,
  },
  { text: `private const string ApiKey = "${STRIPE.slice(8)}";`, kinds: ["secret_assignment"] },
  {
    text: 'settings.json: {"authToken": "Zt7pQ1rLw3vB", "retries": 3}',
    kinds: ["secret_assignment"],
    kept: /"retries": 3/,
  },
  { text: 'password := "Xk9#mP2qL" // the seed user', kinds: ["password"] },
  { text: "'password' => 'Xk9#mP2qL', 'host' => 'db'", kinds: ["password"], kept: /'host' => 'db'/ },
  { text: ':password => "Xk9#mP2qL" in database.rb', kinds: ["password"] },
  {
    text: "settings.xml has <password>Xk9#mP2qL</password> for the mirror",
    kinds: ["password"],
    kept: /<password>\[REDACTED:password\]<\/password> for the mirror/,
  },
  { text: 'Web.config: <add key="ApiKey" value="Zt7pQ1rLw3vB"/>', kinds: ["secret_assignment"] },
  { text: "wp-config.php: define('DB_PASSWORD', 'Xk9#mP2qL');", kinds: ["password"] },
  {
    text: "curl -u admin:Xk9#mP2qL https://api.acme.com/v1/orders",
    kinds: ["password"],
    kept: /^curl -u admin:\[REDACTED:password\] https:\/\/api\.acme\.com\/v1\/orders$/,
  },
  { text: "curl --user deploy:Xk9#mP2qL -X POST https://ci.acme.com/job", kinds: ["password"] },
  {
    text: "run: DB_PASSWORD=hunter2 ./deploy.sh",
    kinds: ["password"],
    kept: /^run: DB_PASSWORD=\[REDACTED:password\] \.\/deploy\.sh$/,
  },
  { text: "args=(--password=Xk9mP2qL)", kinds: ["password"], kept: /^args=\(--password=\[REDACTED:password\]\)$/ },
  {
    text: 'requests.get(url, auth=("admin", "Xk9#mP2qL"))',
    kinds: ["password"],
    kept: /^requests\.get\(url, auth=\("admin", "\[REDACTED:password\]"\)\)$/,
  },
  // A value alone on its line after a password's name is a password whatever it looks like.
  {
    text: "services:\n  db:\n    environment:\n      POSTGRES_PASSWORD: hunter2\n      POSTGRES_DB: shop",
    kinds: ["password"],
    kept: /POSTGRES_PASSWORD: \[REDACTED:password\]\n {6}POSTGRES_DB: shop$/,
  },
  // Public words are whole words of a name: `min` of ADMIN, `map` of MAPBOX made these public.
  { text: "ADMIN_PASSWORD=hunter2 and MAPBOX_ACCESS_TOKEN=pk.eyJ1abc", kinds: ["password", "secret_assignment"] },
];

const LOOK_ALIKES = [
  "Fixed in commit 3f2a9c1d7e8b4a6f0c5d2e9b1a7f3c8d4e6b2a0f on main",
  "The tenant 5f0c3a7e-1b2d-4c8e-9f10-2a3b4c5d6e7f owns the failing job",
  '"integrity": "sha512-9wLyvv7cs3KqZ5gLvNBBYw4R1W9yMFQDnQ0NCpIrW+HzQ7kXyX6C4P0mWtKLJqiY6Fz9yR6cRrS1vR2HfWnWQw=="',
  'resolved "https://registry.yarnpkg.com/zod/-/zod-4.6.7.tgz#a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0"',
  'checksum = "9d5a8c6e2f1b4a7d3c0e9f8b7a6d5c4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c"',
  "github.com/google/uuid v1.6.0 h1:NIvaJDMOsjHA8n1jAhLSgzrAzy1Hgr+hNrb57e+94F0=",
  "The image is data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
  "Set OPENAI_API_KEY=<your-key> in .env, then restart",
  "DATABASE_URL=postgres://user:${DB_PASSWORD}@localhost:5432/app",
  "export GITHUB_TOKEN=$GH_TOKEN before the release job",
  "The publishable key pk_live_51HqLyjWDarjtT1zd is safe in the browser",
  "NEXT_PUBLIC_SUPABASE_ANON_KEY is read by the browser client",
  "scikit-learn (sk-learn-compatible-estimators-and-pipelines) is pinned to 1.5",
  "The auth token is stored in the OS keychain, never on disk",
  "TOKEN_TTL=3600 and SESSION_TIMEOUT=900 are set in the env",
  "Bearer tokens are sent in the Authorization header",
  "Basic authentication-and-authorization guide lives in docs/auth.md",
  "Run `git rebase -i HEAD~3` and then `pnpm install --frozen-lockfile`",
  "The password reset flow emails a link that expires after 30 minutes",
  "http://localhost:3000/api/orders?page=2&sort=created_at returns 20 rows",
  "Use `const key: string = cacheKey(user)` for the Redis lookup",
  "CACHE_KEY=users:list and SORT_KEY=created_at are plain settings",
  // Source code a transcript or a checkpoint's state holds (a file the agent read): expressions
  // assigned to secret-named variables are no secrets, and were mangled (`apiKey =[REDACTED…] null`).
  "const token = await getToken();",
  "if (apiKey == null) throw new Error('missing key')",
  "const password = req.body.password;",
  "token = jwt.sign(payload, secret)",
  "let secret = crypto.randomBytes(32)",
  "secret_key = settings.SECRET_KEY",
  "access_key = os.getenv('AWS_ACCESS_KEY')",
  "client_secret = config.client_secret",
  "api_key = self._api_key",
  "token = tokens[0]",
  "const onToken = token => token.trim()",
  "DB_PASSWORD=${DB_PASSWORD}",
  // Code around the shapes read since 2026-11-27 (camel case, `:=`, `=>`, XML, `-u`, `auth=`).
  "const dbPassword = process.env.DB_PASSWORD;",
  "apiKey: config.apiKey,",
  'const passwordField = "password";',
  "async function resetPasswordToken(user) {",
  "resetPasswordToken: async (req, res) => {",
  "export const resetPasswordToken = functions.https.onCall(handler);",
  'password := os.Getenv("PW")',
  "dbPassword := cfg.DBPassword",
  "'password' => $request->input('password'),",
  "this.apiKey = apiKey;",
  "self.passwd = passwd",
  "const accessToken = response.data.access_token;",
  "const randomSecretKey = () => {",
  'requiresPrivateKey = usage === "decrypt"',
  "userid = passwd = acct = ''",
  "jwtSecret: TEST_JWT_SECRET,",
  'const header = token => "Bearer " + token',
  'queryKey: ["todos"], storageKey: "theme",',
  "password: str",
  "  apiKey: string",
  "  password: hashedPassword",
  "password: see the vault",
  "password: ${DB_PASSWORD}",
  "password: null",
  "password: |",
  "The token: expired",
  "auth=(user, pw)",
  "auth = HTTPBasicAuth(user, password)",
  "<password>${env.DB_PASSWORD}</password>",
  "docker run -u 1000:1000 app && docker exec -u www-data:www-data app ls",
  '"--token " + token',
];

Deno.test("redactor: realistic leaks become [REDACTED:<kind>], what surrounds them stays", () => {
  for (const leak of LEAKS) {
    assert.ok(MAY_HOLD_SECRET.test(leak.text), `the quick test lets every leak through to the rules: ${leak.text}`);
    const r = redactSecrets(leak.text);
    assert.deepEqual(Object.keys(r.counts).sort(), [...leak.kinds].sort(), `${leak.text} → ${r.text}`);
    for (const kind of leak.kinds) assert.match(r.text, new RegExp(`\\[REDACTED:${kind}\\]`));
    assert.ok(
      !/[A-Za-z0-9]{32,}/.test(r.text.replace(/\[REDACTED:[a-z_]+\]/g, "")) || leak.kinds.includes("private_key"),
      `no long secret left: ${r.text}`,
    );
    if (leak.kept) assert.match(r.text, leak.kept);
    assert.equal(r.onlySecret, leak.only === true, leak.text);
  }
  // Every secret of the corpus is gone from the output, character for character.
  for (
    const secret of [
      OPENAI,
      OPENAI_LEGACY,
      ANTHROPIC,
      AWS_ID,
      GCP,
      GITHUB,
      GITHUB_PAT,
      STRIPE,
      SUPABASE_SECRET,
      AGENT_TOKEN,
      SERVICE_ROLE_JWT,
      USER_JWT,
      "S3cr3t!Pass",
      "hunter2",
      "Tr0ub4dor&3",
      "Xk9#mP2qL",
      "Xk9mP2qL",
      "Zt7pQ1rLw3vB",
    ]
  ) {
    for (const leak of LEAKS) {
      assert.ok(!redactSecrets(leak.text).text.includes(secret), `${secret} survived in ${leak.text}`);
    }
  }
});

Deno.test("redactor: look-alikes survive untouched (SHAs, UUIDs, lockfile hashes, base64, placeholders, prose)", () => {
  for (const text of LOOK_ALIKES) {
    const r = redactSecrets(text);
    assert.equal(r.text, text, `changed: ${text} → ${r.text}`);
    assert.equal(r.total, 0);
  }
});

Deno.test("redactor: a text that is nothing but a secret is flagged for dropping; redaction is idempotent", () => {
  for (
    const only of [
      OPENAI,
      `export OPENAI_API_KEY=${OPENAI}`,
      `GITHUB_TOKEN=${GITHUB}`,
      PRIVATE_KEY,
      `Bearer ${USER_JWT}`,
      `use this key: ${STRIPE}`,
    ]
  ) {
    const r = redactSecrets(only);
    assert.ok(r.total > 0 && r.onlySecret, `${only} → ${r.text}`);
  }
  const once = redactSecrets(LEAKS[0]!.text).text;
  const twice = redactSecrets(once);
  assert.equal(twice.text, once);
  assert.equal(twice.total, 0);
});

Deno.test("redactor: a transcript of thousands of small JSON messages gives the event loop back as it is redacted", async () => {
  // memory-extract redacts up to 8 MiB before queueing it: 9 MB of small messages was 1.8 s in one stretch.
  const messages = Array.from({ length: 1_000 }, (_, i) => ({
    role: "assistant",
    content: JSON.stringify(Array.from({ length: 60 }, (_, j) => ({ id: i * 60 + j, note: `k=v ${j}` }))),
  }));
  let redacted: unknown[] = [];
  const order = await whoEndsFirst(async () => redacted = (await redactMessages(messages)).messages, "redaction");
  assert.deepEqual(order, ["other request", "redaction"]);
  assert.deepEqual(redacted, messages, "nothing in them to redact, every message kept");
});

Deno.test("redactor: one message holding most of the transcript (thousands of keys in an unknown field) gives the event loop back as it is redacted", async () => {
  // A message's unknown fields are kept: one of 83,000 keys held the loop 0.5-1.6 s (stop 48's red team).
  const keys = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`note ${i} k=v`, `value ${i}`]));
  const one = { role: "user", content: "hi", extra: { ...keys, token: GITHUB } };
  let redacted: { extra: Record<string, string> }[] = [];
  const order = await whoEndsFirst(
    async () => redacted = (await redactMessages([one])).messages as typeof redacted,
    "redaction",
  );
  assert.deepEqual(order, ["other request", "redaction"]);
  assert.equal(redacted[0]!.extra.token, "[REDACTED:github_token]");
  assert.equal(Object.keys(redacted[0]!.extra).length, 20_001);
  // Nothing in it to redact: the message itself comes back, not built again.
  const clean = { role: "user", content: "hi", extra: keys };
  assert.equal((await redactMessages([clean])).messages[0], clean);
});

Deno.test("redactor: JSON inside a string of more than EMBEDDED_JSON_ITEMS items is read as text, its pairs still redacted", () => {
  // The body's item bound does not count a string's insides: 0.9 MB of `{}`s in one content was
  // parsed and walked in one stretch, 2.6 s (stop 48's red team).
  const json = (n: number) =>
    `[ {"k": "password=hunter2hunter3"}, ${Array.from({ length: n }, () => "{ }").join(", ")} ]`;
  // Read as JSON: written again (JSON.stringify), its spacing gone.
  const small = redactString(json(10));
  assert.equal(
    small.text,
    JSON.stringify([{ k: "password=[REDACTED:password]" }, ...Array.from({ length: 10 }, () => ({}))]),
  );
  // Read as text: the spacing as sent, the password still its marker.
  const big = redactString(json(EMBEDDED_JSON_ITEMS));
  assert.equal(big.text, json(EMBEDDED_JSON_ITEMS).replace("hunter2hunter3", "[REDACTED:password]"));
  assert.equal(big.total, 1);
});

Deno.test("redactor: transcripts are redacted in contents, text parts and tool call arguments; the rest is kept", async () => {
  const { messages, counts, total } = await redactMessages([
    { role: "user", content: `my key is ${OPENAI}` },
    {
      role: "user",
      content: [{ type: "text", text: `token ${GITHUB}` }, {
        type: "image_url",
        image_url: { url: "https://x/y.png" },
      }],
    },
    {
      role: "assistant",
      content: null,
      tool_calls: [{
        id: "c1",
        type: "function",
        function: { name: "bash", arguments: JSON.stringify({ cmd: `export STRIPE_KEY=${STRIPE}` }) },
      }],
    },
  ]);
  assert.equal(total, 3);
  assert.deepEqual(counts, { openai_key: 1, github_token: 1, stripe_key: 1 });
  assert.equal(messages[0]!.content, "my key is [REDACTED:openai_key]");
  assert.deepEqual(messages[1]!.content, [{ type: "text", text: "token [REDACTED:github_token]" }, {
    type: "image_url",
    image_url: { url: "https://x/y.png" },
  }]);
  const args = JSON.parse(
    (messages[2] as { tool_calls: { function: { arguments: string } }[] }).tool_calls[0]!.function.arguments,
  );
  assert.equal(args.cmd, "export STRIPE_KEY=[REDACTED:stripe_key]");
});

// Linear on hostile input, counted the way tests/linear_text.test.ts counts (never timed): the
// texts (tests/support/linear_workloads.ts SECRET_SHAPES) are long runs of what the patterns scan.
// Their work (the regex engine's backtracks, the characters scanned) may grow about 16x for 16
// times the text, and no regex call may backtrack more than BACKTRACKS_PER_CHAR times a character
// it could read: a pattern that re-reads a bounded window at every start (the JWT pattern did: up
// to 4,096 characters at every `eyJ`) is quadratic only up to its cap, so growth alone hides it.
Deno.test("redactor: a file's secrets in a JSON string are redacted wherever the JSON stands in the text", () => {
  // A tool call writing an INI file: inside the JSON its lines are one escaped line.
  const call = JSON.stringify({ file_path: "db.ini", content: "[db]\nhost=x\npassword=s3cr3tpw\nport=5432\n" });
  for (
    const text of [
      `[Write] ${call}`, // the JSON ends the text
      `Ran f({x}) then [Write] ${call}`, // a brace before it
      `${call}\n(exit 0)`, // text after it
      `{"a":1}\n${call}`, // one JSON value a line
    ]
  ) {
    const r = redactString(text);
    assert.ok(!r.text.includes("s3cr3tpw"), text);
    assert.equal(r.total, 1, text);
    assert.ok(r.text.includes("port=5432"), "the rest of the file stays");
  }
  // Without a secret, the text is kept as sent (escapes included).
  const clean = `Ran f({x}) then [Write] ${JSON.stringify({ content: "a\nb=1\n" })} (exit 0)`;
  assert.equal(redactString(clean).text, clean);
});

Deno.test("redactor: linear on hostile input (long runs of the characters the patterns scan)", async () => {
  await assertLinearWork(["redactSecrets"], [1 << 12, 1 << 16]);
});

Deno.test("redactor: generated passwords holding brackets, = or $ are redacted whole; code around a value keeps its brackets", () => {
  // Password generators use ( ) [ ] { } = $: such a password was cut at its first closing bracket
  // (the rest stored), or taken for code (a call, an index, a comparison) and kept whole.
  const passwords = [
    "5]usNF!O+!O_FU)K",
    "=*Rc4gWc[a^^dJiP",
    "w1eP8(_&C1wqPmFT",
    "}0l1v}Yp+Pn8ddC3",
    "hZkFA(KV7miQ[wwB",
    "$oKyo[Y9l4b=9VtH",
    "Tr0ub(4dor)&3xQ",
  ];
  for (const pw of passwords) {
    for (
      const text of [
        `DB_PASSWORD=${pw}`,
        `export API_TOKEN=${pw}`,
        `password: "${pw}"`,
        `password: ${pw}`,
        `const dbPassword = "${pw}";`,
        `curl -u admin:${pw} https://x.io`,
        `args=(--password=${pw})`,
        `<password>${pw}</password>`,
        `run: DB_PASSWORD=${pw} ./deploy.sh`,
      ]
    ) {
      const r = redactSecrets(text);
      assert.ok(r.total === 1 && !r.text.includes(pw.slice(2, -2)), `${text} → ${r.text}`);
    }
  }
  const url = redactSecrets("postgres://app:(BKIOCB3d]NuwQj0@db.internal:5432/shop");
  assert.equal(url.text, "postgres://app:[REDACTED:password]@db.internal:5432/shop");
  // The closing bracket of the call around an assignment is the code's, not the value's.
  assert.equal(redactSecrets("run(API_KEY=abc123xyz789)").text, "run(API_KEY=[REDACTED:secret_assignment])");
  assert.equal(redactSecrets("{TOKEN=abc123xyz789}").text, "{TOKEN=[REDACTED:secret_assignment]}");
});

Deno.test("redactor: a value's end is read in its context, and code around secret names stays code", () => {
  const cases: [string, string][] = [
    // Quoted values are literals: their brackets are theirs, and they are never code.
    ['password: "Xk9#mP2)"', 'password: "[REDACTED:password]"'],
    ['{"password": "9fK!x2]]"}', '{"password": "[REDACTED:password]"}'],
    // Unquoted: a closing bracket ends the value only when something before it on its line opened it.
    ["DB_PASSWORD=Xk9#mP2)]}", "DB_PASSWORD=[REDACTED:password]"],
    ["(see TOKEN=abc123xyz789).", "(see TOKEN=[REDACTED:secret_assignment])."],
    ["[DB_PASSWORD=S3cr3tPw9](#anchor)", "[DB_PASSWORD=[REDACTED:password]](#anchor)"],
    ["client(api_key=KEY123abc).models.list()", "client(api_key=[REDACTED:secret_assignment]).models.list()"],
    // An assignment inside another name's value is found too.
    ["config={password:S3cr3tPw9}", "config={password:[REDACTED:password]}"],
    // A default inside ${…} is a value; a word that only starts like a placeholder is a password.
    ["POSTGRES_PASSWORD=${POSTGRES_PASSWORD:-s3cr3t_Pw9}", "POSTGRES_PASSWORD=[REDACTED:password]"],
    ["DB_PASSWORD=MyS3cretPassw0rd", "DB_PASSWORD=[REDACTED:password]"],
    ["DB_PASSWORD=the1337hax0r", "DB_PASSWORD=[REDACTED:password]"],
    // A bracket closes the text around a value only where what follows ends that text.
    [
      "see the docs (DB_PASSWORD=w1eP8)_&C1x then restart)",
      "see the docs (DB_PASSWORD=[REDACTED:password] then restart)",
    ],
    // A password shaped like a call or an index is no code: .env and shells have no calls.
    ["DB_PASSWORD=Summer(2024)", "DB_PASSWORD=[REDACTED:password]"],
    ["password = Winter(2023)", "password = [REDACTED:password]"],
    ["password=Hunter2[1]", "password=[REDACTED:password]"],
    // A keyword argument passes a variable only inside a call's own brackets, and not in an env name.
    [
      "ERROR connect failed (user=admin, password=letmein)",
      "ERROR connect failed (user=admin, password=[REDACTED:password])",
    ],
    ["echo $(curl -d token=abcdefghijklmnopq)", "echo $(curl -d token=[REDACTED:secret_assignment])"],
    ["f(TOKEN=ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef)", "f(TOKEN=[REDACTED:secret_assignment])"],
    // The clients' own variables: psql reads PGPASSWORD, sshpass SSHPASS.
    ["PGPASSWORD=hunter2 psql -h db -U app", "PGPASSWORD=[REDACTED:password] psql -h db -U app"],
    ["export SSHPASS=Tr0ub4dor3", "export SSHPASS=[REDACTED:password]"],
    // After a password's name and `:`, a value alone on its line (a comment may follow), any value.
    ["password: hunter2 # rotated monthly", "password: [REDACTED:password] # rotated monthly"],
    ["db:\n  password: postgres\r\n  user: app", "db:\n  password: [REDACTED:password]\r\n  user: app"],
    ["dbPassword: letmein", "dbPassword: [REDACTED:password]"],
  ];
  for (const [text, want] of cases) assert.equal(redactSecrets(text).text, want, text);
  for (
    const code of [
      "DB_PASSWORD=$(openssl rand -hex 16)",
      "export GITHUB_TOKEN=$(gh auth token)",
      "token = str(uuid.uuid4())",
      "password = row[2]",
      "const token = String(raw)",
      "let token = Token::new(claims)",
      "secret = SECRETS[0]",
      "$token = bin2hex(random_bytes(32));",
      'print(f"{token=}")',
      "client = OpenAI(api_key=key).chat",
      "DB_PASSWORD=${DB_PASSWORD}",
      "DB_PASSWORD=your-password-here",
      "PASSWORD=${PASSWORD:-changeme}",
      "TOKEN=${TOKEN:-}",
      "GH_TOKEN=${{ secrets.GH_TOKEN }} gh pr create",
      "Settings(secret_key=secret_key, api_key=api_key)",
    ]
  ) assert.equal(redactSecrets(code).text, code, code);
});

Deno.test("redactor: secrets written slightly differently are redacted whole; code and config that name secrets stay as written", () => {
  // Each of these stored the secret whole or in part: a string prefix the marker replaced instead of
  // the string (`r"…"`), an escaped quote ending the value early, JSON inside a string (`curl -d
  // "{\"password\":…}"`), a template literal, an environment variable set by index or by call, a
  // URL with a password and no user (Redis), `-p` of the clients that take a password so.
  const leaks: [string, string][] = [
    ['PASSWORD = r"Xk9mP2qLw7Zr4"', 'PASSWORD = r"[REDACTED:password]"'],
    ["password = b'Xk9mP2qLw7Zr4'", "password = b'[REDACTED:password]'"],
    ['string password = @"Xk9mP2qLw7Zr4";', 'string password = @"[REDACTED:password]";'],
    ['"password": "ab\\"Xk9mP2qLw7Zr4"', '"password": "[REDACTED:password]"'],
    [
      'curl -d "{\\"username\\":\\"me\\",\\"password\\":\\"Xk9mP2qLw7Zr4\\"}" https://x.io/login',
      'curl -d "{\\"username\\":\\"me\\",\\"password\\":\\"[REDACTED:password]\\"}" https://x.io/login',
    ],
    ["const password = `Xk9mP2qLw7Zr4`;", "const password = `[REDACTED:password]`;"],
    // A declared type between the name and `=` (TypeScript, Python, Kotlin).
    ['const apiKey: string = "Xk9mP2qLw7Zr4";', 'const apiKey: string = "[REDACTED:secret_assignment]";'],
    ['    db_password: Optional[str] = "Xk9mP2qLw7Zr4"', '    db_password: Optional[str] = "[REDACTED:password]"'],
    ['os.environ["DB_PASSWORD"] = "Xk9mP2qLw7Zr4"', 'os.environ["DB_PASSWORD"] = "[REDACTED:password]"'],
    ["$_ENV['API_TOKEN'] = 'Xk9mP2qLw7Zr4';", "$_ENV['API_TOKEN'] = '[REDACTED:secret_assignment]';"],
    ['os.Setenv("DB_PASSWORD", "Xk9mP2qLw7Zr4")', 'os.Setenv("DB_PASSWORD", "[REDACTED:password]")'],
    [
      '[Environment]::SetEnvironmentVariable("STRIPE_KEY", "Xk9mP2qLw7Zr4", "User")',
      '[Environment]::SetEnvironmentVariable("STRIPE_KEY", "[REDACTED:secret_assignment]", "User")',
    ],
    ["redis://:Xk9mP2qLw7Zr4@cache.internal:6379/0", "redis://:[REDACTED:password]@cache.internal:6379/0"],
    [
      'headers = {"Authorization": "token Xk9mP2qLw7Zr4abcd"}',
      'headers = {"Authorization": "token [REDACTED:bearer_token]"}',
    ],
    [
      "curl -H 'Authorization: token Xk9mP2qLw7Zr4abcd' https://x.io",
      "curl -H 'Authorization: token [REDACTED:bearer_token]' https://x.io",
    ],
    ["mysql -u root -pXk9mP2qLw7Zr4 shop", "mysql -u root -p[REDACTED:password] shop"],
    [
      "mysqldump --single-transaction -h db.internal --port=3306 -u app -p'Xk9mP2qLw7Zr4' shop",
      "mysqldump --single-transaction -h db.internal --port=3306 -u app -p'[REDACTED:password]' shop",
    ],
    ["mysql -pXk9mP2qLw7Zr4", "mysql -p[REDACTED:password]"],
    ["mysql shop -u root -pXk9mP2qLw7Zr4", "mysql shop -u root -p[REDACTED:password]"],
    ["sshpass -p 'Xk9mP2qLw7Zr4' ssh deploy@host", "sshpass -p '[REDACTED:password]' ssh deploy@host"],
    ["docker login -u me -p Xk9mP2qLw7Zr4 registry.x.io", "docker login -u me -p [REDACTED:password] registry.x.io"],
    // `-u user:password` is curl's (and its kind's), not the next command's: `rsync -u` is --update.
    [
      "curl -u admin:Xk9mP2qLw7 https://x && rsync -u deploy:/srv/ ./srv/",
      "curl -u admin:[REDACTED:password] https://x && rsync -u deploy:/srv/ ./srv/",
    ],
  ];
  for (const [text, want] of leaks) assert.equal(redactSecrets(text).text, want, text);
  // Each of these was changed where nothing is secret: a validation rule (Laravel), `-u` of
  // commands other than curl's kind (`rsync -u` is --update), WordPress's sample salt, a deploy
  // tool's token (`#{ApiKey}#`), an auth scheme a value is built from, a variable passed under its
  // own name, a command substitution, a heredoc, an interpolation, a user and a group.
  for (
    const code of [
      "'password' => 'required|string|min:8|confirmed',",
      "password: 'required|min:6',",
      "rsync -u deploy:/var/www/ ./backup/",
      "sort -u a:b c",
      "docker run -u nobody:nogroup alpine id",
      "define('AUTH_KEY', 'put your unique phrase here');",
      '<add key="ApiKey" value="#{ApiKey}#" />',
      '<add key="ApiKey" value="__ApiKey__" />',
      'token := "Bearer " + accessToken',
      "  api_key=api_key,",
      'export API_KEY="$(op read op://vault/api/key)"',
      "password = <<~PW",
      'headers = {"Authorization": f"Bearer {token}"}',
      "const auth = `Basic ${btoa(user + ':' + pw)}`;",
      "apiKey: `${prefix}_${id}`,",
      "cache[token] = value",
      "mysql -u root -p shop < dump.sql",
      "the mysql docs say -plaintext is not allowed",
      "mysql is fine here, but -prod is where it breaks",
      "ssh -p 2222 deploy@host",
      'user["password"] = hashed',
      "const q = `SELECT id FROM users WHERE password = $1`;",
      'token = b""',
      'api_key: str = Field(default="")',
      "const token: string = await getToken();",
      "Use `password=`/`pwd=` in DSNs and `?access_token=`, `&api_key=` in URLs; a bare `token:`, `secret:` or `auth:`.",
    ]
  ) assert.equal(redactSecrets(code).text, code, code);
});

Deno.test("redactor: Go's and Rust's wrapped literals, .pgpass, setx, XML entries, Rails' secret_key_base, Perl's pairs and values holding , or ; are redacted; their look-alikes stay", () => {
  // Each of these but Django's `SECRET_KEY` (a control for the names) stored the secret whole or in
  // part (a value holding `,` or `;` kept what followed it).
  const leaks: [string, string][] = [
    ['var password string = "Xk9mP2qLw7Zr4"', 'var password string = "[REDACTED:password]"'],
    ['let password = String::from("Xk9mP2qLw7Zr4");', 'let password = String::from("[REDACTED:password]");'],
    ['password := []byte("Xk9mP2qLw7Zr4")', 'password := []byte("[REDACTED:password]")'],
    ['var jwtSecret = []byte("Xk9mP2qLw7Zr4")', 'var jwtSecret = []byte("[REDACTED:secret_assignment]")'],
    ["db.example.com:5432:shop:app:Xk9mP2qLw7Zr4", "db.example.com:5432:shop:app:[REDACTED:password]"],
    ["localhost:5432:*:postgres:hunter2", "localhost:5432:*:postgres:[REDACTED:password]"],
    [
      'echo "10.0.0.5:6432:*:app:Tr0ub\\:4dor" >> ~/.pgpass',
      'echo "10.0.0.5:6432:*:app:[REDACTED:password]" >> ~/.pgpass',
    ],
    [
      "cat > ~/.pgpass <<EOF\n*:5432:app:app:hunter2\nEOF",
      "cat > ~/.pgpass <<EOF\n*:5432:app:app:[REDACTED:password]\nEOF",
    ],
    ["setx OPENAI_API_KEY Xk9mP2qLw7Zr4abc", "setx OPENAI_API_KEY [REDACTED:secret_assignment]"],
    ['setx /M DB_PASSWORD "hunter2"', 'setx /M DB_PASSWORD "[REDACTED:password]"'],
    ['<entry key="password">hunter2</entry>', '<entry key="password">[REDACTED:password]</entry>'],
    [
      '<property name="hibernate.connection.password">Xk9mP2qLw7Zr4</property>',
      '<property name="hibernate.connection.password">[REDACTED:password]</property>',
    ],
    ["  secret_key_base: 9f8e7d6c5b4a39281706f5e4d3c2b1a0", "  secret_key_base: [REDACTED:secret_assignment]"],
    ["SECRET_KEY_BASE=9f8e7d6c5b4a39281706f5e4d3c2b1a0", "SECRET_KEY_BASE=[REDACTED:secret_assignment]"],
    ["SECRET_KEY = 'django-insecure-k9m#p2q$lw7zr4x(8n)v'", "SECRET_KEY = '[REDACTED:secret_assignment]'"],
    ["DB_PASSWORD=ab,cd;ef", "DB_PASSWORD=[REDACTED:password]"],
    ["export DB_PASSWORD=Xk9m,P2qL;w7Zr4 # prod", "export DB_PASSWORD=[REDACTED:password] # prod"],
    ["  password: Xk9m,P2qL;w7", "  password: [REDACTED:password]"],
    [
      "Server=db;User Id=app;Password=Xk9m,P2qL;Encrypt=true",
      "Server=db;User Id=app;Password=[REDACTED:password];Encrypt=true",
    ],
    [
      'my %db = (user => "app", password => "Xk9mP2qLw7Zr4");',
      'my %db = (user => "app", password => "[REDACTED:password]");',
    ],
    [
      "my %db = (\n  user     => 'app',\n  password => 'hunter2',\n);",
      "my %db = (\n  user     => 'app',\n  password => '[REDACTED:password]',\n);",
    ],
    [
      "my $ssh = Net::SSH::Perl->new($host, password => 'hunter2');",
      "my $ssh = Net::SSH::Perl->new($host, password => '[REDACTED:password]');",
    ],
  ];
  for (const [text, want] of leaks) assert.equal(redactSecrets(text).text, want, text);
  // Code and text that read the same: JavaScript's arrows (a bare parameter returning a literal),
  // C#'s and Rust's match arms, a conversion of a variable, Go's declaration, setx of a public name or a
  // variable, an XML entry holding a placeholder, grep's and a compiler's `file:line:col:…`, a time,
  // keyword arguments and SQL with commas, a regular expression, prose after a comma.
  for (
    const code of [
      'const f = password => "x";',
      '.then(password => "hashed")',
      'const check = (password) => "ok";',
      'items.map(token => "Bearer " + token)',
      '    CredentialType.Token => "Access token",',
      '    Kind::Token => "access token",',
      "password := []byte(input)",
      "let password = String::from(input);",
      "var password string",
      'setx PATH "%PATH%;C:\\bin"',
      "setx API_TOKEN %API_TOKEN%",
      '<entry key="password">${db.password}</entry>',
      '<entry key="username">admin</entry>',
      '  secret_key_base: <%= ENV["SECRET_KEY_BASE"] %>',
      "main.go:12:5:error:unused",
      "config.yml:12:db:user:pass",
      "12:30:45:00:01",
      "def __init__(self, host, port=NNTP_PORT, user=None, password=None,",
      "f(password=pw,user=u)",
      "const TOKEN_RE = /[\\p{L}_@./:#$+<>,-]+/gu;",
      "password: hunter2, and rotate it",
    ]
  ) assert.equal(redactSecrets(code).text, code, code);
  // What follows a value's separator is not its own: another assignment, prose's punctuation.
  assert.equal(redactSecrets("token=Xk9mP2qL,user=app").text, "token=[REDACTED:secret_assignment],user=app");
  assert.equal(
    redactSecrets("DB_PASSWORD=Xk9mP2qL, then restart").text,
    "DB_PASSWORD=[REDACTED:password], then restart",
  );
});

Deno.test("redactor (2026-11-27 outside review): mysql with quoted options or .exe, .pgpass printed or teed, Perl pairs before a comment, CRLF values are redacted; log lines shaped like .pgpass, JS arrows in calls and shell variables stay", () => {
  // Each of these stored the secret whole (mysql's two since its rule read only unquoted options).
  const leaks: [string, string][] = [
    [
      'mysql -u root -h db -P 3306 -D shop -e "select 1" -pXk9mP2qLw7Zr4',
      'mysql -u root -h db -P 3306 -D shop -e "select 1" -p[REDACTED:password]',
    ],
    ["mysql.exe -u root -pXk9mP2qLw7Zr4", "mysql.exe -u root -p[REDACTED:password]"],
    ["setx.exe DB_PASSWORD Xk9mP2qLw7Zr4", "setx.exe DB_PASSWORD [REDACTED:password]"],
    [
      "printf 'db:5432:*:app:Xk9mP2qLw7Zr4\\n' > ~/.pgpass",
      "printf 'db:5432:*:app:[REDACTED:password]\\n' > ~/.pgpass",
    ],
    ['echo "db:5432:*:app:Xk9mP2qLw7Zr4" | tee ~/.pgpass', 'echo "db:5432:*:app:[REDACTED:password]" | tee ~/.pgpass'],
    ['  password => "Xk9mP2qLw7Zr4" # prod', '  password => "[REDACTED:password]" # prod'],
    ["  password: Xk9m,P2qL;w7\r", "  password: [REDACTED:password]\r"],
  ];
  for (const [text, want] of leaks) assert.equal(redactSecrets(text).text, want, text);
  for (
    const code of [
      // A log's host:port then three fields on a web or a year's port (.pgpass is on a database's).
      "10.0.0.12:8080:GET:/api/users:200",
      "localhost:3000:GET:/:200",
      "host:1234:x:y:z",
      "Thread-1:2024:main:INFO:started",
      "build:2024:x86_64:linux:gnu",
      // A JavaScript arrow passed to a method with another argument after it.
      '.then(password => "hashed", onError)',
      // A braced variable then a separator, PowerShell's variable: no literal.
      "DB_PASSWORD=${X},y",
      'setx GITHUB_TOKEN "$env:GITHUB_TOKEN"',
    ]
  ) assert.equal(redactSecrets(code).text, code, code);
});

Deno.test("redactor: a password's abbreviations (pw, pswd, psw, pwrd, pword, passwrd) name a password; code using pw, $PWD and regular expressions stay", () => {
  // Each of these stored the password whole.
  const leaks: [string, string][] = [
    ["pw=hunter2hunter2", "pw=[REDACTED:password]"],
    ["DB_PW=Xk9fj2Lmq", "DB_PW=[REDACTED:password]"],
    ['ADMIN_PW: "Xk9fj2Lmq"', 'ADMIN_PW: "[REDACTED:password]"'],
    ["  SMTP_PW: hunter2", "  SMTP_PW: [REDACTED:password]"],
    ['{"pw": "Xk9fj2Lmq"}', '{"pw": "[REDACTED:password]"}'],
    ["db_pw = 'Xk9fj2Lmq'", "db_pw = '[REDACTED:password]'"],
    ['const adminPw = "Xk9fj2Lmq";', 'const adminPw = "[REDACTED:password]";'],
    [
      "https://api.example.com/login?user=app&pw=Xk9fj2Lmq",
      "https://api.example.com/login?user=app&pw=[REDACTED:password]",
    ],
    ["--pw=Xk9fj2Lmq", "--pw=[REDACTED:password]"],
    ["tool --pw Xk9fj2Lmq", "tool --pw [REDACTED:password]"],
    ["plink -ssh admin@host -pw Xk9fj2Lmq uptime", "plink -ssh admin@host -pw [REDACTED:password] uptime"],
    ['pscp.exe -pw "Xk9 fj2Lmq" f admin@h:/tmp', 'pscp.exe -pw "[REDACTED:password]" f admin@h:/tmp'],
    ["SMTP_PSWD=hunter2", "SMTP_PSWD=[REDACTED:password]"],
    ["pswd: hunter2", "pswd: [REDACTED:password]"],
    ["EMAIL_PSW=hunter2", "EMAIL_PSW=[REDACTED:password]"],
    ["MYSQL_PWRD=hunter2", "MYSQL_PWRD=[REDACTED:password]"],
    ["user_pword = 'hunter2'", "user_pword = '[REDACTED:password]'"],
    ["passwrd=hunter2", "passwrd=[REDACTED:password]"],
    ["<pw>hunter2</pw>", "<pw>[REDACTED:password]</pw>"],
  ];
  for (const [text, want] of leaks) {
    const r = redactSecrets(text);
    assert.equal(r.text, want, text);
    assert.deepEqual(r.counts, { password: 1 }, text);
  }
  // Code that names pw, the shell's working directory, CPU flags, regular expressions that read a
  // password, prose. `PWD=/home/…` (env's output) and `token = 0` were redacted before.
  for (
    const code of [
      "pw = getpass()",
      'pw = input("Password: ")',
      "self.pw = pw",
      "pw: string",
      "    pw: Optional[str] = None",
      "def check(pw):",
      "if pw == other_pw:",
      "pw = pw[:-1]",
      'pw = pw.encode("utf-8")',
      "user, pw = auth, None",
      "struct passwd *pw = getpwnam(user);",
      "char *pw = NULL;",
      "const pw = W - L - R, ph = H - T - B;",
      "np.pw = 3",
      "psw = 0x3000",
      "token = 0",
      "uid = pwd.getpwnam(user).pw_uid",
      "echo $PWD",
      "cd $PWD",
      "pwd",
      "PWD=/home/user/project",
      "OLDPWD=/tmp",
      "pwd: /home/user/project",
      "os.getcwd()",
      "PWDEBUG=1",
      "PW_TEST_HTML_REPORT_OPEN=never",
      "the pw field is empty",
      "pw: hunter2, and rotate it",
      'm = re.compile(r"pw=(\\S+)")',
      "const m = url.match(/pw=([^&]+)/)",
      "const re = /pw:\\s*(\\S+)/",
      'pattern = "token=([^&]+)"',
      'm = re.match(r"^password=(.*)$", line)',
      "ss -pw state listening",
      "LPWORD = PWORD = ctypes.POINTER(WORD)",
    ]
  ) assert.equal(redactSecrets(code).text, code, code);
  // ODBC's PWD is a password, also one starting with `/`.
  assert.equal(
    redactSecrets("Driver={x};Server=db;Uid=app;PWD=/Xk9fj2Lmq;").text,
    "Driver={x};Server=db;Uid=app;PWD=[REDACTED:password];",
  );
  // Also after `; ` (outside review: a blank after the `;` read it as the shell's directory).
  assert.equal(
    redactSecrets("Server=db; Uid=app; PWD=/Xk9fj2Lmq;").text,
    "Server=db; Uid=app; PWD=[REDACTED:password];",
  );
});

Deno.test("redactor (outside review of the pw names): code's short values (3 characters after `=`, 2 after `:`) and numbers (hex of at most 8 digits) are kept", () => {
  // Each of these stored the secret whole: a long hex literal (an Ethereum private key, a token) read
  // as a number of code, a config's short password after YAML's `:` read as code's.
  const eth = "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318";
  const leaks: [string, string][] = [
    [`private_key = ${eth}`, "private_key = [REDACTED:secret_assignment]"],
    [`const PRIVATE_KEY = ${eth};`, "const PRIVATE_KEY = [REDACTED:secret_assignment];"],
    [`  PRIVATE_KEY: ${eth}`, "  PRIVATE_KEY: [REDACTED:secret_assignment]"],
    ["token = 0x7f3a9c2b7d1e8f6a9c2b7d1e8f6a9c2b", "token = [REDACTED:secret_assignment]"],
    ["password = 0x4f3a9c2b7d1e8f6a", "password = [REDACTED:password]"],
    ["  MYSQL_ROOT_PASSWORD: 123", "  MYSQL_ROOT_PASSWORD: [REDACTED:password]"],
    ["POSTGRES_PASSWORD: pwd", "POSTGRES_PASSWORD: [REDACTED:password]"],
    ["password: abc", "password: [REDACTED:password]"],
  ];
  for (const [text, want] of leaks) assert.equal(redactSecrets(text).text, want, text);
  for (
    const code of [
      "psw = 0x3000",
      "psw &= 0xFFFF_FFFF;",
      "pw = 1e-3",
      "np.pw = 2.5E+3",
      "rx_pw = -72.5",
      "float pw = 1500.0f;",
      "  github_token: 1",
      "  password: pw",
      "token = 0",
      "pw = W - L",
    ]
  ) {
    assert.equal(redactSecrets(code).text, code, code);
  }
});

Deno.test("redactor (outside review of the pw names): a regular expression's group is read in code only, and closed; a command's quoted password holding .* or [^ is redacted", () => {
  // Each of these stored the password whole: the regular expression's test ran on every rule's
  // value, quoted or a command's, and on an unclosed `(`.
  const leaks: [string, string][] = [
    ["sshpass -p '(ab.*cd)' ssh host", "sshpass -p '[REDACTED:password]' ssh host"],
    ["docker login -u me -p '(x[^y]z)' reg.io", "docker login -u me -p '[REDACTED:password]' reg.io"],
    ["mysql -u root -p'(ab\\dcd)' shop", "mysql -u root -p'[REDACTED:password]' shop"],
    ["curl -u admin:(ab.*cd) https://x", "curl -u admin:[REDACTED:password] https://x"],
    ["DB_PASSWORD=(Xk9\\dfj2Lmq", "DB_PASSWORD=[REDACTED:password]"],
    ["db_pw=(a.*Xk9fj2Lmq", "db_pw=[REDACTED:password]"],
  ];
  for (const [text, want] of leaks) assert.equal(redactSecrets(text).text, want, text);
  for (
    const code of [
      're.compile(r"--password=(\\S+)")',
      'args = re.findall(r"--token (\\S+)", s)',
      'm = re.match(r"^password=(.*)$", line)',
      "const m = url.match(/pw=([^&]+)/)",
    ]
  ) assert.equal(redactSecrets(code).text, code, code);
});

Deno.test("redactor (outside review of the pw names): a register dump's PSW is a CPU's status word, not a password", () => {
  // 7aad0d8 redacted each value: `psw` names a password, and a dump has no code's spacing.
  for (
    const dump of [
      "Krnl PSW : 0704c00180000000 000000000011d2d6 (do_exit+0x42/0x90)",
      "PSW=00000246",
      "psw=0x00000246 sp=0x7fff",
      "r0=00000000 r1=00000001 psw=a0000000",
      "SR=2700 PSW=0400",
    ]
  ) assert.equal(redactSecrets(dump).text, dump, dump);
  // A password in decimal, another word's PSW, a password of letters stay redacted.
  assert.equal(redactSecrets("psw=12345678").text, "psw=[REDACTED:password]");
  assert.equal(redactSecrets("EMAIL_PSW=0000abcd").text, "EMAIL_PSW=[REDACTED:password]");
  assert.equal(redactSecrets("psw=Xk9fj2Lmq").text, "psw=[REDACTED:password]");
});

Deno.test("redactor (outside review of the pw names): a URL's pw, pwd or passwd parameter is redacted up to its &; the parameters after it stay", () => {
  // The name rules ran the value on through the next parameters (`&user=bob` lost).
  for (
    const [text, want] of <[string, string][]> [
      [
        "https://example.com/login?pw=Xk9fj2Lmq7Rt&user=bob",
        "https://example.com/login?pw=[REDACTED:password]&user=bob",
      ],
      ["GET /login?pwd=Xk9fj2Lmq&lang=en HTTP/1.1", "GET /login?pwd=[REDACTED:password]&lang=en HTTP/1.1"],
      ['curl "https://x/api?u=a&passwd=ab1&fmt=json"', 'curl "https://x/api?u=a&passwd=[REDACTED:password]&fmt=json"'],
    ]
  ) {
    const r = redactSecrets(text);
    assert.equal(r.text, want, text);
    assert.deepEqual(r.counts, { password: 1 }, text);
  }
});

Deno.test("a checkpoint's state is redacted a slice at a time, as redactJson does it whole", async () => {
  // 3,000 tool outputs with a key each: tens of milliseconds at least, several slices.
  const state = {
    messages: Array.from({ length: 3000 }, (_, i) => ({
      role: "tool",
      content: `step ${i}: ${"output ".repeat(20)} api_key=sk-${i}abcdefghijklmnopqrstuv`,
      [`sk-${i}abcdefghijklmnopqrstuv`]: [i, null, true],
    })),
  };
  let answered = false;
  // Another request's turn, queued before the save: redacted in one stretch, it waited for the whole.
  setTimeout(() => answered = true, 0);
  const sliced = await redactJsonSliced(state);
  assert.equal(answered, true, "the event loop was given back during the redaction");
  assert.deepEqual(sliced, redactJson(state));
  assert.ok(sliced.total >= 3000, "every output's key redacted");
});

Deno.test("redactor: a key split by invisible characters (soft hyphen, zero-width, variation selector, filler) is redacted whole", () => {
  // Each shows nothing inside an ASCII word; every rule read the key as two words and it was stored.
  for (
    const ch of ["\u00ad", "\u200b", "\u200c", "\u200d", "\u2060", "\ufe0f", "\u034f", "\u180e", "\u3164", "\u{e0041}"]
  ) {
    for (const key of [GITHUB, OPENAI, AWS_ID, STRIPE, AGENT_TOKEN]) {
      const split = `${key.slice(0, 2)}${ch}${key.slice(2, 9)}${ch}${ch}${key.slice(9)}`;
      const r = redactSecrets(`CI pushes with ${split} every night`);
      assert.equal(r.total, 1, `U+${ch.codePointAt(0)!.toString(16)} in ${key}: ${r.text}`);
      assert.ok(!r.text.includes(key.slice(9)), r.text);
      assert.match(r.text, /^CI pushes with \[REDACTED:[a-z_]+\] every night$/);
    }
    const assigned = redactSecrets(`DB_PASSWORD=${ch}hunter2${ch}xyz`);
    assert.ok(assigned.onlySecret && !assigned.text.includes("hunter2"), assigned.text);
  }
  // A text with no secret keeps its invisible characters as sent (a soft hyphen, an emoji's selector).
  for (
    const text of ["co\u00adoperate on the heart\u2764\ufe0f build", "pw\u200bpw", "the git\u00adhub token expired"]
  ) {
    const r = redactSecrets(text);
    assert.equal(r.text, text);
    assert.equal(r.total, 0);
  }
});

Deno.test("redactor: a secret's name written with letters whose compatibility form is ASCII (mathematical, enclosed, circled) is read as its ASCII one", () => {
  // Stored as sent until stop 48 (its red team): only Greek, Cyrillic and fullwidth letters folded.
  const cases: [string, string][] = [
    [
      "\u{1d400}\u{1d40f}\u{1d408}_\u{1d40a}\u{1d404}\u{1d418}=Xk9fj2Lq8Zr4Tw6Yb1Nm",
      "API_KEY=[REDACTED:secret_assignment]",
    ], // bold
    [
      "\u{1d665}\u{1d656}\u{1d668}\u{1d668}\u{1d66c}\u{1d664}\u{1d667}\u{1d659}: hunter2hunter3",
      "password: [REDACTED:password]",
    ], // sans bold italic
    [
      "\u{1f130}\u{1f13f}\u{1f138}_\u{1f13a}\u{1f134}\u{1f148}=Xk9fj2Lq8Zr4Tw6Yb1Nm",
      "API_KEY=[REDACTED:secret_assignment]",
    ], // squared
    ["\u{1d42c}\u{1d424}-proj-aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zAb", "[REDACTED:openai_key]"], // a key's prefix
    // Circled letters are in the BMP: one unit each, the name kept as sent.
    [
      "\u24d0\u24df\u24d8_\u24da\u24d4\u24e8=Xk9fj2Lq8Zr4Tw6Yb1Nm",
      "\u24d0\u24df\u24d8_\u24da\u24d4\u24e8=[REDACTED:secret_assignment]",
    ],
  ];
  for (const [text, want] of cases) {
    const r = redactSecrets(`Ops note: ${text} (rotate monthly)`);
    // Letters from outside the BMP are two units folded to one: a text with a secret comes back folded.
    assert.equal(r.text, `Ops note: ${want} (rotate monthly)`, text);
    assert.equal(r.total, 1, text);
  }
  // Without a secret, such text is kept as sent.
  const math = "\u{1d431}\u00b2 + \u{1d432}\u00b2 in \u211d\u00b3, \u{1d400}\u{1d40f}\u{1d408} docs";
  assert.deepEqual(redactSecrets(math), { text: math, counts: {}, total: 0, onlySecret: false });
});

Deno.test("redactor: a secret's name or prefix written with look-alike letters (Greek, Cyrillic, fullwidth) is read as its ASCII one", () => {
  // Each read as no name any rule knows: the value was stored as sent (2026-11-29 red team).
  const cases: [string, string][] = [
    ["\u0391PI_KEY=Xk9fj2Lq8Zr4Tw6Yb1Nm", "\u0391PI_KEY=[REDACTED:secret_assignment]"], // Greek Alpha
    ["DB_P\u0410SSWORD=hunter2hunter3", "DB_P\u0410SSWORD=[REDACTED:password]"], // Cyrillic A
    ["p\u0430ssword: hunter2hunter3", "p\u0430ssword: [REDACTED:password]"], // Cyrillic a
    ["GITHUB_T\u039FKEN=Xk9fj2Lq8Zr4Tw6Yb1Nm", "GITHUB_T\u039FKEN=[REDACTED:secret_assignment]"], // Greek Omicron
    [
      "\uff21\uff30\uff29_\uff2b\uff25\uff39=Xk9fj2Lq8Zr4Tw6Yb1Nm",
      "\uff21\uff30\uff29_\uff2b\uff25\uff39=[REDACTED:secret_assignment]",
    ], // fullwidth
    ["password\uff1a hunter2hunter3", "password\uff1a [REDACTED:password]"], // fullwidth colon
  ];
  for (const [text, want] of cases) {
    const r = redactSecrets(`Ops note: ${text} (rotate monthly)`);
    assert.equal(r.text, `Ops note: ${want} (rotate monthly)`, text);
    assert.equal(r.total, 1, text);
  }
  // The text stored keeps its letters as sent, a secret's name and the words around it alike.
  const prose = redactSecrets(
    "\u0391\u03b8\u03ae\u03bd\u03b1 \u0441\u0435\u0440\u0432\u0435\u0440: DB_P\u0410SSWORD=hunter2hunter3",
  );
  assert.equal(
    prose.text,
    "\u0391\u03b8\u03ae\u03bd\u03b1 \u0441\u0435\u0440\u0432\u0435\u0440: DB_P\u0410SSWORD=[REDACTED:password]",
  );
  assert.ok(redactSecrets("\u0391PI_KEY=Xk9fj2Lq8Zr4Tw6Yb1Nm").onlySecret);
  // Greek, Cyrillic and fullwidth text without a secret is kept as sent, and is no secret.
  for (
    const text of [
      "\u0422\u0435\u0441\u0442 \u0441\u043e\u0440 \u0431\u0435\u0437 \u0441\u0435\u043a\u0440\u0435\u0442\u043e\u0432",
      "\u039a\u03b1\u03bb\u03b7\u03bc\u03ad\u03c1\u03b1 \u03ba\u03cc\u03c3\u03bc\u03b5",
      "\u30d1\u30b9\u30ef\u30fc\u30c9\uff1a\u5909\u66f4\u6e08\u307f \uff21\uff30\uff29",
    ]
  ) {
    const r = redactSecrets(text);
    assert.equal(r.text, text);
    assert.equal(r.total, 0);
  }
});

Deno.test("redactor: the walk that gathers a value's strings gives the event loop back too, not only their redaction", async () => {
  // 100,000 numbers and no string: nothing to redact, but a walk that held the loop in one stretch
  // (one message of 80,000 keys: tens of ms, bench/event-loop-stretches.ts).
  const value = { role: "tool", content: "ok", extra: Array.from({ length: 100_000 }, (_, i) => i) };
  const slice = new CountingSlice();
  const order = await whoEndsFirst(() => redactJsonSliced(value, slice), "walk");
  assert.deepEqual(order, ["other request", "walk"]);
  assert.ok(slice.yields >= 300, `${slice.yields} yields`);
});
