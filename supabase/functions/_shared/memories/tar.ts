// A ustar (POSIX tar) archive of text files, for the Markdown export: `tar -x` on any system turns
// the answer into the files, without a JSON step. Regular files only, mode 0644, one mtime. Written
// an entry at a time (the export streams them: services/memory-export.ts).
import type { MarkdownFile } from "./schemas.ts";

const BLOCK = 512;
const encoder = new TextEncoder();

function field(header: Uint8Array, offset: number, length: number, value: string): void {
  const bytes = encoder.encode(value);
  if (bytes.length > length) throw new Error(`tar header field too long: ${value}`);
  header.set(bytes, offset);
}

/** Octal, zero-padded to length - 1 digits, NUL-terminated (the ustar numeric field format). */
function octal(value: number, length: number): string {
  return `${value.toString(8).padStart(length - 1, "0")}\0`;
}

/** ustar keeps 100 bytes of name and 155 of prefix: a longer path is split at a '/'. */
function splitPath(path: string): { name: string; prefix: string } {
  if (encoder.encode(path).length <= 100) return { name: path, prefix: "" };
  const cut = path.lastIndexOf("/", path.length - 1);
  const name = path.slice(cut + 1);
  const prefix = path.slice(0, cut);
  if (cut < 0 || encoder.encode(name).length > 100 || encoder.encode(prefix).length > 155) {
    throw new Error(`path too long for tar: ${path}`);
  }
  return { name, prefix };
}

/** One file's header and content, padded to whole blocks. */
export function tarEntry(f: MarkdownFile, mtime: Date): Uint8Array {
  const body = encoder.encode(f.content);
  const entry = new Uint8Array(BLOCK + Math.ceil(body.length / BLOCK) * BLOCK);
  const header = entry.subarray(0, BLOCK);
  writeHeader(header, f.path, body.length, mtime);
  entry.set(body, BLOCK);
  return entry;
}

function writeHeader(header: Uint8Array, path: string, size: number, mtime: Date): void {
  const { name, prefix } = splitPath(path);
  field(header, 0, 100, name);
  field(header, 100, 8, octal(0o644, 8));
  field(header, 108, 8, octal(0, 8));
  field(header, 116, 8, octal(0, 8));
  field(header, 124, 12, octal(size, 12));
  field(header, 136, 12, octal(Math.floor(mtime.getTime() / 1000), 12));
  field(header, 148, 8, "        "); // the checksum counts its own field as spaces
  field(header, 156, 1, "0");
  field(header, 257, 6, "ustar\0");
  field(header, 263, 2, "00");
  field(header, 345, 155, prefix);
  const sum = header.reduce((s, b) => s + b, 0);
  field(header, 148, 8, `${sum.toString(8).padStart(6, "0")}\0 `);
}

/** The end of an archive: two zero blocks. */
export function tarEnd(): Uint8Array {
  return new Uint8Array(BLOCK * 2);
}

/** The file an archive cut short by a failed export ends with (at its root: no memory's path is). */
export const INCOMPLETE_FILE = "EXPORT-INCOMPLETE.txt";

/**
 * The end of an archive whose export failed after its status was sent: a file saying so, then a
 * header block with a wrong checksum. A failed page cuts the archive between two files, where a
 * missing end reads as a complete archive: `curl … | tar -x` extracted the files sent so far and
 * exited 0 (3,000 of 5,200 memories, nothing said but curl's stderr). Now tar exits non-zero at the
 * damaged block ("Skipping to next header"), and the file stays beside what was extracted.
 */
export function tarIncomplete(filesSent: number, mtime: Date): Uint8Array {
  const note = tarEntry({
    path: INCOMPLETE_FILE,
    content: `This archive is incomplete: the export failed after ${filesSent} files. Export again.\n`,
  }, mtime);
  const damaged = new Uint8Array(BLOCK);
  writeHeader(damaged, INCOMPLETE_FILE, 0, mtime);
  damaged[148] = damaged[148]! ^ 1; // the checksum no longer matches: no reader takes this block for a file or the end
  const out = new Uint8Array(note.length + BLOCK);
  out.set(note);
  out.set(damaged, note.length);
  return out;
}
