// What is checked on a JSON body's text before it is parsed, in one pass over it (brackets and
// digits inside strings do not count):
// - nesting: deeper values would be walked recursively later (the transcript's canonical JSON,
//   jsonb) and overflow the stack (a RangeError, once a 500);
// - numbers a double cannot hold as sent, for a body stored as the caller's own data (a
//   checkpoint's state): JSON.parse reads `1e400` as Infinity (serialised back as null), `1e-400`
//   as 0, and an integer past 2^53 (a 19-digit id) with its last digits changed, silently. Such a
//   number is refused instead (send it as a string). Decimals are doubles by JSON's convention in
//   JavaScript (0.1 stays 0.1; digits past the 17th are not kept) and are accepted.
// - items (every value and key: what JSON.parse allocates one by one): JSON.parse is one call that
//   never gives the event loop back, and its cost, and that of every walk over what it returns
//   (validation, redaction, digests, the queued payload), is per item, not per byte. An 8 MiB body
//   of `{}` is 2.9 million of them: its extraction held every other tenant's requests up to 19.7 s
//   (4.4 MB of distinct keys, 0.75 million: 8.1 s), where a real 8 MB transcript holds about
//   120,000. So the scan counts them, about one per comma, colon and opening bracket outside a
//   string, and stops at the bound (docs/operations.md#json-items).

export interface JsonTextCheck {
  tooDeep: boolean;
  /** More items than maxItems: the scan stopped there. */
  tooMany?: boolean;
  /** The first number token that would not come back as sent (when numbers were checked). */
  inexact?: string;
}

export function checkJsonText(
  text: string,
  maxDepth: number,
  exactNumbers = false,
  maxItems = Infinity,
): JsonTextCheck {
  // A number can only be lost with an exponent or 16 digits or more in a row.
  const numbers = exactNumbers && /[0-9][eE]|[0-9]{16}/.test(text);
  let depth = 0;
  let items = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++; // backslash: skip the escaped character
      else if (c === 34) inString = false;
      else {
        // A string's other characters are skipped by the regex engine: read one at a time here,
        // they were most of an 8 MB transcript's 52-101 ms.
        STRING_STOP.lastIndex = i;
        i = (STRING_STOP.exec(text)?.index ?? text.length) - 1;
      }
    } else if (c === 34) inString = true;
    else if (c === 44 || c === 58) { // , :
      if (++items > maxItems) return { tooDeep: false, tooMany: true };
    } else if (c === 91 || c === 123) {
      if (++depth > maxDepth) return { tooDeep: true };
      if (++items > maxItems) return { tooDeep: false, tooMany: true };
    } else if (c === 93 || c === 125) depth--;
    else if (numbers && (c === 45 || (c >= 48 && c <= 57))) {
      let end = i + 1;
      let exponent = false;
      for (let d = c; end < text.length && numberChar(d = text.charCodeAt(end)); end++) exponent ||= (d | 32) === 101;
      if (exponent || end - i >= 16) {
        const token = text.slice(i, end);
        if (!survives(token)) return { tooDeep: false, inexact: token };
      }
      i = end - 1;
    }
  }
  return { tooDeep: false };
}

/** What ends a run of a string's plain characters: its closing quote or an escape. */
const STRING_STOP = /["\\]/g;

/** 0-9 . e E + - */
const numberChar = (c: number) => (c >= 48 && c <= 57) || c === 46 || c === 101 || c === 69 || c === 43 || c === 45;

function survives(token: string): boolean {
  const n = Number(token);
  if (!Number.isFinite(n)) return false;
  const [mantissa = ""] = token.split(/[eE]/);
  if (n === 0) return !/[1-9]/.test(mantissa); // 1e-400: underflow to 0
  if (/^-?[0-9]+$/.test(token) && !Number.isSafeInteger(n)) return BigInt(token) === BigInt(n);
  return true;
}
