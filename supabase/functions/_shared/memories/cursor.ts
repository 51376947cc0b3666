// Opaque keyset cursor of the pages that run newest first on (timestamp, id): GET /memory
// (created_at, id) and GET /memory/{id}/history (ts, id: a transaction's rows share its ts, the
// id orders them). The last row's key of a page; the timestamp travels as text with microseconds
// (a JS Date would drop them and skip or repeat rows of the same millisecond). GET /memory/entities
// pages by mentions: its key is (mention_count, id). A cursor names its listing (its kind), so one
// listing's cursor given to another is a 400, not a position in it. The SQL of a cursor (the key
// read as text, the rows after it) and the cursor after a page are here too.
import type { Tx } from "../db.ts";
import { HttpError } from "../http.ts";
import { uuid } from "../schemas.ts";

const TS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}$/;

export interface ListCursor {
  /** The row's timestamp (created_at, a history row's ts) in UTC, `YYYY-MM-DDTHH:MM:SS.ffffff`. */
  ts: string;
  id: string;
}

/** The listing a cursor pages, as the cursor names it. */
export type CursorKind = "memories" | "history" | "entities";
const LISTING: Record<CursorKind, string> = {
  memories: "GET memory",
  history: "GET memory/{id}/history",
  entities: "GET memory/entities",
};

/** Where a page of GET memory/entities (mention_count desc, then id) ends, and the type it lists. */
export interface EntityCursor {
  mentions: number;
  id: string;
  /**
   * The `type` of the listing that gave it, when it had one: its entity alone does not tell the
   * untyped listing that the cursor pages another (a person's cursor is a position in both).
   */
  type?: string;
}

export interface DecodedCursor extends ListCursor {
  /** Encoded before cursors named their listing (`[ts, id]`): the caller checks the id's kind. */
  unmarked?: true;
}

function toBase64Url(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64Url(text: string): string {
  const b64 = text.replace(/-/g, "+").replace(/_/g, "/");
  const bin = atob(b64 + "=".repeat((4 - (b64.length % 4)) % 4));
  return new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
}

/** The timestamp's shape, and a real date and time of year 1 or later (what Postgres accepts). */
function isCalendarTime(ts: string): boolean {
  if (!TS.test(ts)) return false;
  const [y, mo, d, h, mi, se] = [0, 5, 8, 11, 14, 17].map((at, i) => Number(ts.slice(at, at + (i === 0 ? 4 : 2))));
  const leap = y! % 4 === 0 && (y! % 100 !== 0 || y! % 400 === 0);
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][mo! - 1];
  return y! >= 1 && days !== undefined && d! >= 1 && d! <= days && h! <= 23 && mi! <= 59 && se! <= 59;
}

/** Longer than any next_cursor this API gives (about 100 characters): not one, and not decoded. */
const MAX_CURSOR_LENGTH = 200;

export function encodeCursor(kind: "memories" | "history", c: ListCursor): string {
  return toBase64Url(JSON.stringify([kind, c.ts, c.id]));
}

/**
 * A cursor's items after its kind: [ts, id] of a cursor issued before cursors named their listing
 * (`unmarked`), else [key, id] of `kind`'s listing; another listing's cursor, or anything else, is
 * a 400. Nothing longer, whose first item would go unchecked (["history", x, ts, id] was read as a
 * list position).
 */
function cursorItems(text: string, kind: CursorKind, extra = 0): { items: unknown[]; unmarked: boolean } {
  // An empty one too: the first page is asked for without a cursor.
  if (text.length === 0 || text.length > MAX_CURSOR_LENGTH) {
    throw invalidCursor(kind, text.length === 0 ? "leave cursor out for the first page" : undefined);
  }
  let value: unknown;
  try {
    value = JSON.parse(fromBase64Url(text));
  } catch {
    throw invalidCursor(kind);
  }
  if (!Array.isArray(value) || value.length < 2 || value.length > 3 + extra) throw invalidCursor(kind);
  const named = value.length >= 3 ? value[0] : kind;
  if (named !== kind) {
    const other = typeof named === "string" && Object.hasOwn(LISTING, named) ? named as CursorKind : undefined;
    throw invalidCursor(kind, other && `it is a next_cursor of ${LISTING[other]}`);
  }
  return { items: value.length === 2 ? value : value.slice(1), unmarked: value.length === 2 };
}

/** The cursor of `kind`'s listing; another listing's cursor, or anything else, is a 400. */
export function decodeCursor(text: string, kind: "memories" | "history"): DecodedCursor {
  const { items: [ts, id], unmarked } = cursorItems(text, kind);
  if (typeof ts !== "string" || !isCalendarTime(ts) || typeof id !== "string" || !uuid.safeParse(id).success) {
    throw invalidCursor(kind);
  }
  return { ts, id: id.toLowerCase(), ...(unmarked ? { unmarked: true as const } : {}) };
}

export function encodeEntityCursor(c: EntityCursor): string {
  return toBase64Url(JSON.stringify(["entities", c.mentions, c.id, ...(c.type === undefined ? [] : [c.type])]));
}

/**
 * A cursor of GET memory/entities (always named: there were none before), with its listing's type
 * when it had one; anything else is a 400. One issued before cursors carried the type has none.
 */
export function decodeEntityCursor(text: string): EntityCursor {
  const { items: [mentions, id, type, ...more], unmarked } = cursorItems(text, "entities", 1);
  if (
    unmarked || more.length > 0 || !Number.isSafeInteger(mentions) || (mentions as number) < 0 ||
    typeof id !== "string" || !uuid.safeParse(id).success || (type !== undefined && typeof type !== "string")
  ) {
    throw invalidCursor("entities");
  }
  return { mentions: mentions as number, id: id.toLowerCase(), ...(type === undefined ? {} : { type }) };
}

/** The 400 for a cursor this API did not return for `kind`'s listing (`why`: what it is instead). */
export function invalidCursor(kind: CursorKind, why?: string): HttpError {
  return new HttpError(
    400,
    "invalid_cursor",
    `cursor is not a next_cursor of ${LISTING[kind]}${why ? `: ${why}` : ""}`,
    [{ path: ["cursor"], message: `the next_cursor of the previous ${LISTING[kind]} page, unchanged (opaque text)` }],
  );
}

/**
 * An unmarked cursor (before cursors named their listing) given to GET memory: its id is a
 * memory's, while a history's cursor names one of its audit rows. Such a row's id is a 400; any
 * other id pages on as before (its memory may have been purged since).
 */
export async function assertNotHistoryRow(tx: Tx, c: DecodedCursor): Promise<void> {
  if (!c.unmarked) return;
  const [row] = await tx<{ history: boolean }[]>`
    select exists (select from public.memory_history where id = ${c.id}) as history`;
  if (row!.history) throw invalidCursor("memories", `it is a next_cursor of ${LISTING.history}`);
}

/** A page's key columns as its query names them (code, never input): `ts`, `id` or `m.created_at`, `m.id`. */
export interface CursorKey {
  ts: string;
  id: string;
}

/** The key's timestamp as the cursor's text, selected as `cursor_ts` (to_char keeps the microseconds). */
export function cursorText(tx: Tx, key: CursorKey) {
  return tx.unsafe(`to_char(${key.ts} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') as cursor_ts`);
}

/**
 * The rows after the cursor in the page's order, newest first (`<`), or from it back (`>=`). Its
 * timestamp is bound as text: bound as a timestamp, postgres.js would pass it through a JS Date
 * and drop the microseconds that order rows of the same millisecond.
 */
export function fromCursor(tx: Tx, key: CursorKey, c: ListCursor, op: "<" | ">=" = "<") {
  return tx`(${tx.unsafe(key.ts)}, ${tx.unsafe(key.id)}) ${tx.unsafe(op)}
            (${c.ts}::text::timestamp at time zone 'UTC', ${c.id}::uuid)`;
}

/** The cursor after a page read with limit + 1 rows (cursorText's `cursor_ts`): its last row, when a next page exists. */
export function cursorAfter(rows: readonly Record<string, unknown>[], limit: number): ListCursor | null {
  const last = rows.length > limit ? rows[limit - 1] : undefined;
  return last ? { ts: last.cursor_ts as string, id: last.id as string } : null;
}
