// Time filters for retrieval and memory.query (docs/retrieval.md#time-filters).
//
// `after` / `before` each name an instant: an ISO date (its midnight UTC) or date-time, or a
// relative form resolved against the request's time (`now`, which tests may pin):
//   today        midnight UTC today        yesterday    midnight UTC yesterday
//   last_week    now - 7 days              last_month   now - 30 days
//   last_N_days  now - N days (1 ≤ N ≤ 3650)
// A memory is kept when after ≤ its time < before. A query that asks about a time in words
// ("what did we decide last week") gets the same window from its text when the request sets none.

const DAY_MS = 86_400_000;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}$/;
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:\d{2})$/;
const LAST_N_DAYS = /^last_(\d{1,4})_days$/;

/** The forms accepted, for error messages. */
export const TIME_FORMS =
  "an ISO date (2026-11-01) or date-time (2026-11-01T09:30:00Z), today, yesterday, last_week, last_month or last_N_days (N from 1 to 3650)";

/** Postgres timestamptz range, and a sane one for memories. */
const MIN_TIME = Date.UTC(1970, 0, 1);
const MAX_TIME = Date.UTC(9999, 11, 31);

const midnight = (t: number) => Math.floor(t / DAY_MS) * DAY_MS;

/** The instant a time value names, or undefined when it is not one of TIME_FORMS. */
export function resolveTime(value: string, now: Date): Date | undefined {
  const v = value.trim().toLowerCase();
  const t = now.getTime();
  let ms: number | undefined;
  if (v === "today") ms = midnight(t);
  else if (v === "yesterday") ms = midnight(t) - DAY_MS;
  else if (v === "last_week") ms = t - 7 * DAY_MS;
  else if (v === "last_month") ms = t - 30 * DAY_MS;
  else if (LAST_N_DAYS.test(v)) {
    const n = Number(LAST_N_DAYS.exec(v)![1]);
    if (n >= 1 && n <= 3650) ms = t - n * DAY_MS;
  } else if (ISO_DATE.test(value.trim()) || ISO_DATE_TIME.test(value.trim())) {
    const parsed = Date.parse(ISO_DATE.test(value.trim()) ? `${value.trim()}T00:00:00Z` : value.trim());
    // Date.parse rolls 2026-02-31 over to March: only dates that round-trip are real.
    if (
      Number.isFinite(parsed) &&
      (!ISO_DATE.test(value.trim()) || new Date(parsed).toISOString().startsWith(value.trim()))
    ) ms = parsed;
  }
  if (ms === undefined || !Number.isFinite(ms) || ms < MIN_TIME || ms > MAX_TIME) return undefined;
  return new Date(ms);
}

export interface TimeWindow {
  after?: Date;
  before?: Date;
  /** Where the window came from. */
  from: "request" | "query_text";
  /** For query_text windows: the words that set it. */
  phrase?: string;
}

const TEXT_WINDOWS: readonly [RegExp, (m: RegExpExecArray, now: number) => number][] = [
  [/\byesterday\b/i, (_m, t) => midnight(t) - DAY_MS],
  [/\btoday\b/i, (_m, t) => midnight(t)],
  [/\b(?:last|past|this) week\b/i, (_m, t) => t - 7 * DAY_MS],
  [/\b(?:last|past|this) month\b/i, (_m, t) => t - 30 * DAY_MS],
  [/\b(?:last|past) year\b/i, (_m, t) => t - 365 * DAY_MS],
  [/\b(?:last|past) (\d{1,4}) days?\b/i, (m, t) => t - Number(m[1]) * DAY_MS],
  [/\b(\d{1,4}) days? ago\b/i, (m, t) => t - (Number(m[1]) + 1) * DAY_MS],
  [/\b(\d{1,3}) weeks? ago\b/i, (m, t) => t - (Number(m[1]) + 1) * 7 * DAY_MS],
];

/** A window from time words in the query ("last week", "3 days ago"), or undefined. */
export function windowFromText(text: string, now: Date): TimeWindow | undefined {
  const probe = text.slice(0, 2000);
  for (const [pattern, start] of TEXT_WINDOWS) {
    const m = pattern.exec(probe);
    if (!m) continue;
    const after = start(m, now.getTime());
    if (!Number.isFinite(after) || after < MIN_TIME) return undefined;
    return { after: new Date(after), from: "query_text", phrase: m[0] };
  }
  return undefined;
}
