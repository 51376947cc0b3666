// Runs Supabase's database linter (`supabase db advisors`) and fails on any finding for our
// objects. `unused_index` is left out on purpose: on a freshly migrated database every index is
// "unused", so it says nothing about the schema. Usage: node scripts/check-advisors.mjs <db-url>
import { execFileSync } from "node:child_process";

const url = process.argv[2];
if (!url) { console.error("usage: check-advisors.mjs <db-url>"); process.exit(2); }
const IGNORED_LINTS = new Set(["unused_index"]);
const OUR_SCHEMAS = new Set(["public", "memory_private", "memory_search", "extensions"]);

const out = execFileSync("supabase", ["db", "advisors", `--remote=${url}`, "--type", "all", "--level", "info"], {
  encoding: "utf8", stdio: ["ignore", "pipe", "pipe"],
});
const start = out.indexOf("[");
const findings = start === -1 ? [] : JSON.parse(out.slice(start));
const ours = findings.filter((f) => !IGNORED_LINTS.has(f.name) && (!f.metadata?.schema || OUR_SCHEMAS.has(f.metadata.schema)));
for (const f of ours) console.error(`advisor ${f.level} ${f.name}: ${f.detail}`);
console.log(`advisors: ${ours.length} finding(s) for our objects (${findings.length - ours.length} ignored)`);
process.exit(ours.length === 0 ? 0 : 1);
