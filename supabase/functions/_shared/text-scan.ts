// Character tests and trims for the text paths that must stay linear in their input (requests
// are up to 8 MiB): patterns like /[\s,;:-]+$/ or /\s*\n\s*/ backtrack quadratically on a long
// run of the characters they repeat, so these loops replace them.

/** JavaScript's \s (what the replaced patterns matched). */
export function isWhitespace(code: number): boolean {
  return code === 32 || (code >= 9 && code <= 13) || code === 0xa0 || code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 || code === 0x2029 || code === 0x202f || code === 0x205f || code === 0x3000 || code === 0xfeff;
}

/** text without trailing whitespace or characters of `chars` (each a single character). */
export function trimEndOf(text: string, chars = ""): string {
  let end = text.length;
  while (end > 0 && (isWhitespace(text.charCodeAt(end - 1)) || chars.includes(text[end - 1]!))) end--;
  return text.slice(0, end);
}

/** Every run of whitespace that contains a line break becomes one space (other runs stay). */
export function foldLineBreaks(text: string): string {
  let out = "";
  let i = 0;
  while (i < text.length) {
    if (!isWhitespace(text.charCodeAt(i))) {
      const next = nextWhitespace(text, i);
      out += text.slice(i, next);
      i = next;
      continue;
    }
    let j = i;
    let lineBreak = false;
    while (j < text.length && isWhitespace(text.charCodeAt(j))) {
      if (text.charCodeAt(j) === 10) lineBreak = true;
      j++;
    }
    out += lineBreak ? " " : text.slice(i, j);
    i = j;
  }
  return out;
}

/** i, or i - 1 when a cut at i would split a surrogate pair (half an emoji is no character). */
export function cutBetweenCharacters(text: string, i: number): number {
  const c = text.charCodeAt(i - 1);
  return c >= 0xd800 && c <= 0xdbff ? i - 1 : i;
}

function nextWhitespace(text: string, from: number): number {
  let i = from;
  while (i < text.length && !isWhitespace(text.charCodeAt(i))) i++;
  return i;
}
