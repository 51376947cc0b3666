// Letters that look like ASCII ones, as the redactor reads them (redact.ts): a secret's name or
// key prefix written with one of them (`ΑPI_KEY=…` with a Greek Alpha, `pаssword: …` with a
// Cyrillic a, `ＡＰＩ_ＫＥＹ=…` in fullwidth letters) read as no name any rule knows, and the value
// was stored as sent. The rules read the text with these folded to their ASCII look-alike; the text
// stored keeps them (each folds to one UTF-16 unit, so a match's place is the same in both).
// docs/redaction.md#look-alike-letters.

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

const LOOKALIKE = new RegExp(`[${Object.keys(LOOKALIKE_ASCII).join("")}\uff01-\uff5e]`, "g");

/** `text` with each look-alike letter as its ASCII one: the same length, every other character kept. */
export function foldLookalikes(text: string): string {
  LOOKALIKE.lastIndex = 0;
  if (!LOOKALIKE.test(text)) return text;
  LOOKALIKE.lastIndex = 0;
  return text.replace(LOOKALIKE, (ch) => LOOKALIKE_ASCII[ch] ?? String.fromCharCode(ch.charCodeAt(0) - 0xfee0));
}
