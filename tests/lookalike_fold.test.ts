// The look-alike fold (secret-lookalikes.ts) reads a text's code units through a table: the text it
// gives must be the one the replace it superseded gave, on every code unit and every look-alike
// from outside the BMP, lone surrogates included (docs/redaction.md#look-alike-letters).
import assert from "node:assert/strict";
import { foldLookalikes, LOOKALIKE_ASCII } from "../supabase/functions/_shared/secret-lookalikes.ts";

/** The fold as it was: a replace calling a function for each look-alike. */
function foldByReplace(text: string): string {
  const lookalike = new RegExp(`[${Object.keys(LOOKALIKE_ASCII).join("")}\uff01-\uff5e]`, "gu");
  return text.replace(lookalike, (ch) => LOOKALIKE_ASCII[ch] ?? String.fromCharCode(ch.charCodeAt(0) - 0xfee0));
}

Deno.test("look-alike fold: the same text as the replace it superseded, on every code unit and astral look-alike", () => {
  const units = (from: number, to: number) =>
    String.fromCharCode(...Array.from({ length: to - from }, (_, i) => from + i));
  const everyUnit = units(0, 0x8000) + units(0x8000, 0x10000); // lone surrogates and the pairs they make in order
  const points = (from: number, to: number) =>
    Array.from({ length: to - from }, (_, i) => String.fromCodePoint(from + i));
  const astral = [...points(0x1d400, 0x1d800), ...points(0x1f100, 0x1f200)]; // look-alikes and their neighbours
  assert.ok(Object.keys(LOOKALIKE_ASCII).filter((ch) => ch.length === 2).length > 500);
  assert.ok(astral.length > 500, `${astral.length} look-alikes from outside the BMP`);
  const texts = [
    "",
    "plain ASCII, nothing to fold",
    everyUnit,
    astral.join(""),
    astral.join(" x "),
    "𝐀𝐏𝐈_𝐊𝐄𝐘=abc ΑPI_KEY pаssword ＡＰＩ_ＫＥＹ ⓐ🄰 😀 \ud835 \udc00 \ud835\ud835\udc00 \udc00\ud835",
    "\ud835", // a lone high surrogate at the end
    "\ud835\udc00".repeat(3) + "\ud835", // pairs, then a lone one
    "Η γρήγορη καφέ αλεπού πηδάει. Съешь же ещё этих мягких французских булок. ".repeat(2_000), // past one call's units
  ];
  for (const text of texts) assert.equal(foldLookalikes(text), foldByReplace(text), JSON.stringify(text.slice(0, 40)));
});
