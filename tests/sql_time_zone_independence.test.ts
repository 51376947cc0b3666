// The SQL the service runs does not depend on the session's TimeZone (docs/operations.md#time-zones-and-locale):
// Supabase's database is in UTC by default, but `alter database postgres set timezone = ...`, a
// pooler or a client may set another. Calendar arithmetic on a timestamptz follows that zone:
// `now() - interval '1 day'` is 23 or 25 hours across a daylight-saving change, `x::date`,
// `current_date` and `date_trunc('day', x)` name the zone's day. Days are counted in seconds
// (make_interval(secs => n * 86400)) or hours, and days are named in UTC (`at time zone 'UTC'`).
// Checked on the live definitions (supabase/schema.sql) and on every statement of the functions;
// pgTAP 99_times_alike_in_any_session_zone checks the behaviour in two zones.
import assert from "node:assert/strict";
import { tsFiles } from "./support/source-files.ts";

const FUNCTIONS = new URL("../supabase/functions/", import.meta.url);
const SCHEMA = new URL("../supabase/schema.sql", import.meta.url);

/** What reads the session's zone: calendar intervals, dates, and truncation without `at time zone`. */
const ZONED = [
  /make_interval\(\s*(?:years|months|weeks|days)\s*=>/i,
  /interval\s+'[^']*\b(?:days?|weeks?|mons?|months?|years?)\b[^']*'/i,
  /::date\b/i,
  /\bcurrent_date\b/i,
  /\bdate_trunc\(\s*'[a-z]+'\s*,(?!.*\bat time zone\b)/i,
];

function zonedLines(file: string, text: string): string[] {
  return text.split("\n").flatMap((line, i) =>
    !line.trimStart().startsWith("--") && !line.trimStart().startsWith("//") && ZONED.some((p) => p.test(line))
      ? [`${file}:${i + 1}: ${line.trim()}`]
      : []
  );
}

Deno.test("sql: no statement counts calendar days or names a day in the session's time zone", async () => {
  // The patterns see what they are for (else an empty list proves nothing), and not what is fine.
  const seen = zonedLines(
    "probe",
    [
      "ts > now() - interval '1 day'",
      "x < now() - make_interval(days => 7)",
      "select created_at::date",
      "where d = current_date",
      "date_trunc('day', now())",
      "date_trunc('day', now() at time zone 'UTC') at time zone 'UTC'",
      "now() - interval '24 hours'",
      "make_interval(secs => 7 * 86400)",
      "to_char(p_now at time zone 'UTC', 'YYYY-MM-DD')",
    ].join("\n"),
  );
  assert.deepEqual(seen.map((l) => Number(l.split(":")[1])), [1, 2, 3, 4, 5]);

  const found = zonedLines("supabase/schema.sql", await Deno.readTextFile(SCHEMA));
  for (const url of await tsFiles(FUNCTIONS)) {
    found.push(...zonedLines(url.pathname.slice(FUNCTIONS.pathname.length), await Deno.readTextFile(url)));
  }
  assert.deepEqual(
    found,
    [],
    "count days in seconds (make_interval(secs => n * 86400)) and name days at time zone 'UTC'",
  );
});
