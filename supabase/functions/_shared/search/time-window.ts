// Time filters for retrieval and memory.query (docs/retrieval.md#time-filters).
//
// `after` / `before` each name an instant: an ISO date (its midnight UTC) or date-time, or a
// relative form resolved against the request's time (`now`, which tests may pin):
//   today        midnight UTC today        yesterday    midnight UTC yesterday
//   last_week    now - 7 days              last_month   now - 30 days
//   last_N_days  now - N days (1 ≤ N ≤ 3650)
// A memory is kept when after ≤ its time < before. A query that asks about a time in words
// ("what did we decide last week", "in the last two weeks", "ten days ago": a count in digits or
// words) gets the same window from its text when the request sets none.

const DAY_MS = 86_400_000;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}$/;
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:\d{2})$/;
const LAST_N_DAYS = /^last_(\d{1,4})_days$/;

/** The forms accepted, for error messages. */
export const TIME_FORMS =
  "an ISO date (2026-11-01) or date-time (2026-11-01T09:30:00Z) from 1970-01-01 to 9999-12-31, today, yesterday, last_week, last_month or last_N_days (N from 1 to 3650)";

/** The times a window may name: within Postgres' range, and a sane one for memories. */
const MIN_TIME = Date.UTC(1970, 0, 1);
const MAX_TIME = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/** Whether an instant is in the range windows are resolved in (TIME_FORMS). */
export function inTimeRange(at: Date): boolean {
  const ms = at.getTime();
  return Number.isFinite(ms) && ms >= MIN_TIME && ms <= MAX_TIME;
}

const midnight = (t: number) => Math.floor(t / DAY_MS) * DAY_MS;

const WALL_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,6})?)?(?:Z|[+-](\d{2}):(\d{2})))?$/;

/**
 * Whether an ISO date or date-time names a real calendar day and clock time. Date.parse rolls
 * 2026-02-31 over to March 3 and 24:00 over to the next day: those are not times, they are typos.
 */
function realWallTime(value: string): boolean {
  const m = WALL_TIME.exec(value);
  if (!m) return false;
  const [y, mo, d, h, mi, s, oh, om] = m.slice(1).map((x) => (x === undefined ? 0 : Number(x)));
  const wall = new Date(Date.UTC(2000, mo! - 1, d!, h, mi, s));
  wall.setUTCFullYear(y!, mo! - 1, d!);
  return wall.getUTCFullYear() === y && wall.getUTCMonth() === mo! - 1 && wall.getUTCDate() === d &&
    wall.getUTCHours() === h && wall.getUTCMinutes() === mi && wall.getUTCSeconds() === s && oh! <= 23 && om! <= 59;
}

/** The instant a time value names, or undefined when it is not one of TIME_FORMS. */
export function resolveTime(value: string, now: Date): Date | undefined {
  const raw = value.trim();
  const v = raw.toLowerCase();
  const t = now.getTime();
  let ms: number | undefined;
  if (v === "today") ms = midnight(t);
  else if (v === "yesterday") ms = midnight(t) - DAY_MS;
  else if (v === "last_week") ms = t - 7 * DAY_MS;
  else if (v === "last_month") ms = t - 30 * DAY_MS;
  else if (LAST_N_DAYS.test(v)) {
    const n = Number(LAST_N_DAYS.exec(v)![1]);
    if (n >= 1 && n <= 3650) ms = t - n * DAY_MS;
  } else if ((ISO_DATE.test(raw) || ISO_DATE_TIME.test(raw)) && realWallTime(raw)) {
    ms = Date.parse(ISO_DATE.test(raw) ? `${raw}T00:00:00Z` : raw);
  }
  if (ms === undefined || !inTimeRange(new Date(ms))) return undefined;
  return new Date(ms);
}

export interface TimeWindow {
  after?: Date;
  before?: Date;
  /** Where the window came from. */
  from: "request" | "query_text";
  /** For query_text windows: the words that set it, and where they start in the text. */
  phrase?: string;
  index?: number;
}

/**
 * Time words count only as words of the sentence, never inside a name: "src/reports/today.ts",
 * "yesterday_totals" or "@today" are what the query looks for, not when. JavaScript's \b treats
 * "/" and "." as boundaries, so the edges are spelled out: no letter, digit, _ . / \ - or @ before,
 * and none of those after, except a full stop that ends the sentence.
 */
export const WORD_START = String.raw`(?<![\p{L}\p{N}_./\\@-])`;
export const WORD_END = String.raw`(?![\p{L}\p{N}_/\\@-]|\.[\p{L}\p{N}_])`;
const timeWords = (body: string) => new RegExp(`${WORD_START}(?:${body})${WORD_END}`, "iu");

/** Counts written as words ("the last two weeks", "ten days ago"), as people write them. */
const COUNT_WORDS: ReadonlyMap<string, number> = new Map([
  ..."one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty"
    .split(" ").map((w, i) => [w, i + 1] as const),
  ["thirty", 30],
  ["forty", 40],
  ["fifty", 50],
  ["sixty", 60],
  ["ninety", 90],
]);
/** A count in a time phrase: digits or one of COUNT_WORDS (the intent cues read the same). */
export const COUNT = String.raw`\d{1,4}|${[...COUNT_WORDS.keys()].join("|")}`;
const countOf = (raw: string) => COUNT_WORDS.get(raw.toLowerCase()) ?? Number(raw);

const TEXT_WINDOWS: readonly [RegExp, (m: RegExpExecArray, now: number) => number][] = [
  [timeWords("yesterday"), (_m, t) => midnight(t) - DAY_MS],
  [timeWords("today"), (_m, t) => midnight(t)],
  [timeWords("(?:last|past|this) week"), (_m, t) => t - 7 * DAY_MS],
  [timeWords("(?:last|past|this) month"), (_m, t) => t - 30 * DAY_MS],
  [timeWords("(?:last|past) year"), (_m, t) => t - 365 * DAY_MS],
  [timeWords(`(?:last|past) (${COUNT}) days?`), (m, t) => t - countOf(m[1]!) * DAY_MS],
  [timeWords(`(?:last|past) (${COUNT}) weeks?`), (m, t) => t - countOf(m[1]!) * 7 * DAY_MS],
  [timeWords(`(?:last|past) (${COUNT}) months?`), (m, t) => t - countOf(m[1]!) * 30 * DAY_MS],
  [timeWords(`(${COUNT}) days? ago`), (m, t) => t - (countOf(m[1]!) + 1) * DAY_MS],
  [timeWords(`(${COUNT}) weeks? ago`), (m, t) => t - (countOf(m[1]!) + 1) * 7 * DAY_MS],
  [timeWords(`(${COUNT}) months? ago`), (m, t) => t - (countOf(m[1]!) + 1) * 30 * DAY_MS],
];

const TIME_PREPOSITION = /(?:since|from|until|till|before|after|during|of)\s+$/i;
const PAST_AUXILIARY = /\b(?:did|was|were|had|has|have|been)\b/i;
const PAST_IRREGULAR = /\b(?:broke|ran|went|made|came|took|wrote|began|saw|found|sent|built|lost|forgot|fell)\b/i;
/** A regular past form or participle ("fixed", "stored"; not "need", "speed"). */
const ED_FORM = /\b[a-z]{2,}(?<!e)ed\b/i;
const PRESENT_AUXILIARY = /\b(?:is|are|am|do|does)\b/i;

/**
 * Whether a "today" at `index` names the day. "Today" also means "nowadays": "which ORM does the
 * app use today?", "where are photos stored today?" ask what holds now, and a window from midnight
 * left them nothing to find. It names the day after a preposition of time ("since today") or in a
 * sentence about what happened: a past auxiliary or verb ("what did we ship today", "what broke
 * today"), or a past form that no present auxiliary makes a present passive ("what failed today",
 * not "where are photos stored today").
 */
export function todayNamesTheDay(text: string, index: number): boolean {
  if (TIME_PREPOSITION.test(text.slice(Math.max(0, index - 12), index))) return true;
  if (PAST_AUXILIARY.test(text) || PAST_IRREGULAR.test(text)) return true;
  return ED_FORM.test(text) && !PRESENT_AUXILIARY.test(text);
}

/** A window from time words in the query ("last week", "3 days ago"), or undefined. */
export function windowFromText(text: string, now: Date): TimeWindow | undefined {
  const probe = text.slice(0, 2000);
  for (const [pattern, start] of TEXT_WINDOWS) {
    const m = pattern.exec(probe);
    if (!m) continue;
    if (/^today$/i.test(m[0]) && !todayNamesTheDay(probe, m.index)) continue;
    const after = start(m, now.getTime());
    if (!Number.isFinite(after) || after < MIN_TIME) return undefined;
    return { after: new Date(after), from: "query_text", phrase: m[0], index: m.index };
  }
  return undefined;
}
