// Letters that look like ASCII ones, as the redactor reads them (redact.ts): a secret's name or
// key prefix written with one of them (`ΑPI_KEY=…` with a Greek Alpha, `pаssword: …` with a
// Cyrillic a, `ＡＰＩ_ＫＥＹ=…` in fullwidth letters) read as no name any rule knows, and the value
// was stored as sent. The rules read the text with these folded to their ASCII look-alike; the text
// stored keeps them (each folds to one UTF-16 unit, so a match's place is the same in both).
// Letters and digits whose compatibility form (NFKC) is one ASCII one fold too: mathematical
// alphanumerics (`𝐀𝐏𝐈_𝐊𝐄𝐘=…`, U+1D400-U+1D7FF), enclosed and circled letters (`🄰`, `ⓐ`),
// letterlike symbols, super- and subscripts; a key named with them was stored as sent (stop 48's
// red team). Those outside the BMP are two units each: see redact.ts for what a text with a secret
// and one of them comes back as. docs/redaction.md#look-alike-letters.

/**
 * Greek and Cyrillic letters Unicode's confusables (UTS #39) map to one ASCII letter, and the Latin
 * dotless i and script g, each written as the letter then its ASCII one; fullwidth forms (U+FF01 to
 * U+FF5E) are folded by arithmetic below.
 */
const PAIRS = [
  "ΑA ΒB ΕE ΖZ ΗH ΙI ΚK ΜM ΝN ΟO ΡP ΤT ΥY ΧX οo νv ιi ρp υu αa κk χx", // Greek
  "АA ВB ЕE КK МM НH ОO РP СC ТT ХX УY ЅS ІI ЈJ ԚQ ԜW аa еe оo рp сc уy хx ѕs іi јj ԛq ԝw һh ԁd ӏl", // Cyrillic
  "ıi ɡg", // Latin
].join(" ").split(" ");
/** Each look-alike and its ASCII letter (the fullwidth forms aside); its test folds by it as the fold did before. */
export const LOOKALIKE_ASCII: Record<string, string> = Object.fromEntries(PAIRS.map((p) => [p[0]!, p[1]!]));

/** Where letters and digits with a one-letter ASCII compatibility form are (read once, by NFKC). */
const COMPATIBILITY_RANGES = [
  [0x00aa, 0x00ba], // ª ¹ ² ³ º
  [0x1d2c, 0x1d6a], // modifier letters
  [0x2070, 0x209f], // super- and subscripts
  [0x2100, 0x24ff], // letterlike symbols, Roman numerals, circled letters
  [0x1d400, 0x1d7ff], // mathematical alphanumerics
  [0x1f100, 0x1f1ff], // enclosed alphanumerics
];
for (const [from, to] of COMPATIBILITY_RANGES) {
  for (let cp = from!; cp <= to!; cp++) {
    const ch = String.fromCodePoint(cp);
    const ascii = ch.normalize("NFKC");
    if (/^[0-9A-Za-z]$/.test(ascii)) LOOKALIKE_ASCII[ch] = ascii;
  }
}

const LOOKALIKE = new RegExp(`[${Object.keys(LOOKALIKE_ASCII).join("")}\uff01-\uff5e]`, "u");

/**
 * Each BMP unit as the rules read it (itself, or a look-alike's ASCII code; fullwidth forms by
 * arithmetic); a look-alike from outside the BMP by its code point.
 */
const BMP_FOLD = new Uint16Array(0x10000).map((_, unit) => unit >= 0xff01 && unit <= 0xff5e ? unit - 0xfee0 : unit);
const ASTRAL_FOLD = new Map<number, number>();
for (const [ch, ascii] of Object.entries(LOOKALIKE_ASCII)) {
  const cp = ch.codePointAt(0)!;
  if (cp < 0x10000) BMP_FOLD[cp] = ascii.charCodeAt(0);
  else ASTRAL_FOLD.set(cp, ascii.charCodeAt(0));
}

/** Code units turned into a string this many at a time (an argument list's size stays small). */
const UNITS_A_CALL = 8_192;

/**
 * `text` with each look-alike letter as its ASCII one, every other character kept: the same length
 * unless it held one from outside the BMP (two units folded to one). One pass over its code units
 * through a table: a replace calling a function for each look-alike held the event loop 0.4-0.5 s
 * of CPU for 8 MB of Greek prose, where most letters are one (bench/event-loop-stretches.ts).
 */
export function foldLookalikes(text: string): string {
  if (!LOOKALIKE.test(text)) return text;
  const units = new Uint16Array(text.length);
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const low = text.charCodeAt(i + 1);
      const folded = low >= 0xdc00 && low <= 0xdfff
        ? ASTRAL_FOLD.get((unit - 0xd800) * 0x400 + (low - 0xdc00) + 0x10000)
        : undefined;
      // A pair that is no look-alike, or a lone high surrogate: kept, its next unit read next turn.
      if (folded !== undefined) units[n++] = folded, i++;
      else units[n++] = unit;
    } else units[n++] = BMP_FOLD[unit]!;
  }
  const parts: string[] = [];
  for (let at = 0; at < n; at += UNITS_A_CALL) {
    // apply, not a spread: a typed array spread into arguments is read through its iterator (5x slower).
    parts.push(
      String.fromCharCode.apply(null, units.subarray(at, Math.min(n, at + UNITS_A_CALL)) as unknown as number[]),
    );
  }
  return parts.join("");
}
