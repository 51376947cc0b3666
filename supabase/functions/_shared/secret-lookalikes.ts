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
const LOOKALIKE_ASCII: Record<string, string> = Object.fromEntries(PAIRS.map((p) => [p[0]!, p[1]!]));

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

const LOOKALIKE = new RegExp(`[${Object.keys(LOOKALIKE_ASCII).join("")}\uff01-\uff5e]`, "gu");

/**
 * `text` with each look-alike letter as its ASCII one, every other character kept: the same length
 * unless it held one from outside the BMP (two units folded to one).
 */
export function foldLookalikes(text: string): string {
  LOOKALIKE.lastIndex = 0;
  if (!LOOKALIKE.test(text)) return text;
  LOOKALIKE.lastIndex = 0;
  return text.replace(LOOKALIKE, (ch) => LOOKALIKE_ASCII[ch] ?? String.fromCharCode(ch.charCodeAt(0) - 0xfee0));
}
