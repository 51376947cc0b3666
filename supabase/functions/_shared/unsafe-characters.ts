// The one rule for characters that stored memory text may not contain, because stored memories
// end up in agents' system prompts (README, "What is stored"):
//
// - control characters: C0 but tab, line feed and carriage return; DEL; C1 (U+0080-U+009F);
// - invisible format characters that reorder or hide text: the bidirectional controls (U+061C,
//   U+200E, U+200F, U+202A-U+202E, U+2066-U+2069), zero-width space (U+200B), word joiner and
//   invisible operators (U+2060-U+2064), U+FEFF, and the tag characters (U+E0000-U+E007F, which
//   spell hidden ASCII);
// - lone surrogates: not valid Unicode (Postgres would store U+FFFD instead of what was sent).
//
// The zero-width joiners (U+200C, U+200D) and variation selectors stay: emoji and several scripts
// need them. What a caller writes through the API (remember, correct) is refused with a 400 that
// names the character; candidates (what the rules and the model extract from a transcript, or an
// agent proposes) have such characters removed. Either way the stored text is what the API answers.

/** Control characters alone (also refused in text that is never stored, such as a query). */
// deno-lint-ignore no-control-regex -- finding control characters is the point
export const CONTROL_CHARACTERS = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/;
const UNSAFE =
  // deno-lint-ignore no-control-regex -- as above
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u061C\u200B\u200E\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF\u{E0000}-\u{E007F}]/u;
const UNSAFE_ALL = new RegExp(UNSAFE.source, "gu");

function kindOf(code: number): string {
  if (code <= 0x9f) return "a control character";
  if (code >= 0xe0000) return "a tag character";
  if (code >= 0xd800 && code <= 0xdfff) return "a lone surrogate";
  if (code === 0x200b || code === 0xfeff || (code >= 0x2060 && code <= 0x2064)) return "an invisible character";
  return "a bidirectional control";
}

/** Describes the first character the rule refuses ("U+202E (a bidirectional control) at 12"), or undefined. */
export function firstUnsafeCharacter(text: string): string | undefined {
  let at = -1;
  if (!text.isWellFormed()) {
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      const high = c >= 0xd800 && c <= 0xdbff;
      const low = c >= 0xdc00 && c <= 0xdfff;
      if (high && !(text.charCodeAt(i + 1) >= 0xdc00 && text.charCodeAt(i + 1) <= 0xdfff)) at = i;
      else if (high) i++;
      else if (low) at = i;
      if (at >= 0) break;
    }
  }
  const m = UNSAFE.exec(text);
  if (m && (at < 0 || m.index < at)) at = m.index;
  if (at < 0) return undefined;
  const code = text.codePointAt(at)!;
  return `U+${code.toString(16).toUpperCase().padStart(4, "0")} (${kindOf(code)}) at ${at}`;
}

/** text without the characters the rule refuses (lone surrogates included). */
export function stripUnsafeCharacters(text: string): string {
  const wellFormed = text.isWellFormed()
    ? text
    : text.toWellFormed().replaceAll("\uFFFD", (c, i: number) => (text[i] === c ? c : ""));
  return wellFormed.replace(UNSAFE_ALL, "");
}

/**
 * value as jsonb can hold it: well-formed (a lone surrogate becomes U+FFFD: Postgres's jsonb
 * refuses its escape, so one emoji cut in half in a tool's output would refuse the whole document;
 * redact-json.ts does the same for what a caller sent) and without NUL, which jsonb refuses
 * (22P05). For what the service records about its own work (a job's progress holds a model's raw
 * answers, which may carry either), never for what a caller sent: that is refused with a 400.
 */
export function storableJson<T>(value: T): T {
  return mapJsonStrings(value, (s) => (s.isWellFormed() ? s : s.toWellFormed()).replaceAll("\u0000", ""));
}

/** Where a key sits in a JSON value: the keys (as f made them) and indexes leading to its object. */
export type JsonPath = (string | number)[];

/**
 * Where the first NUL (U+0000) of a JSON value is, in a string or a key, or undefined: Postgres's
 * text and jsonb cannot hold one (22P05, 22021), and a caller's value is refused naming it. The
 * walk allocates nothing until it finds one: it runs on every message of an 8 MiB transcript.
 */
export function nulPath(value: unknown): JsonPath | undefined {
  const path: JsonPath = [];
  const walk = (v: unknown): boolean => {
    if (typeof v === "string") return v.includes("\u0000");
    if (typeof v !== "object" || v === null) return false;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        if (walk(v[i])) return path.unshift(i), true;
      }
      return false;
    }
    for (const k in v) {
      if (!Object.hasOwn(v, k)) continue;
      if (k.includes("\u0000") || walk((v as Record<string, unknown>)[k])) return path.unshift(k), true;
    }
    return false;
  };
  return walk(value) ? path : undefined;
}

/**
 * Every string of a JSON value, keys included, through f. Two keys of one object that f makes the
 * same (two secrets of one kind, both redacted to their marker) keep the last's value: onCollision,
 * when given, is told the object's path and the key, so a writer can refuse rather than lose one.
 */
export function mapJsonStrings<T>(
  value: T,
  f: (s: string) => string,
  onCollision?: (path: JsonPath, key: string) => void,
): T {
  const path: JsonPath = [];
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") return f(v);
    if (Array.isArray(v)) {
      return v.map((x, i) => {
        path.push(i);
        const y = walk(x);
        path.pop();
        return y;
      });
    }
    if (v && typeof v === "object") {
      const seen = onCollision && new Set<string>();
      // fromEntries, not assignment: a "__proto__" key stays a key (JSON.parse made it one).
      return Object.fromEntries(
        Object.entries(v).map(([k, x]) => {
          const key = f(k);
          if (seen?.has(key)) onCollision!([...path], key);
          seen?.add(key);
          path.push(key);
          const y = walk(x);
          path.pop();
          return [key, y];
        }),
      );
    }
    return v;
  };
  return walk(value) as T;
}
