// The one reading of a name a request gives (a project, a namespace or its prefix, an entity's
// name): in NFC, before it is checked, compared or stored. Unicode says `café` typed as one letter
// é (NFC, what most keyboards send) and as e + U+0301 (NFD, what macOS file names hand over) are
// the same text; compared as sent they were two projects, two scopes, and the NFD one was refused
// outright where a mark is not a letter. Memory text is compared in NFC too (migration
// 20261209400000); stored names are NFC and held so by checks (migration 20261210400000).
// Compatibility forms (NFKC: the ligature "ﬁ", fullwidth letters) are not folded: they change
// what some names say. README "Scopes: where a memory goes".
import { z } from "zod";

/** A name in its one form (NFC). */
export function nameForm(name: string): string {
  return name.normalize("NFC");
}

/** A string schema that reads its value in NFC before any other check (zod's overwrite). */
export function nameText() {
  return z.string().normalize("NFC");
}
